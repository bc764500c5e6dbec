"""An agent on a window with no accessibility tree: xterm through the SDK client. The state
it reads is the OCR outline (``tree=visual``), and a click on one of its elements is a click
on that text (a double-click in xterm selects the word: the X PRIMARY selection then holds
it)."""

from __future__ import annotations

import asyncio
import os
import re
import time
from typing import Any

import pytest
from mcp_helpers import diag_of, element_id, memory_client, state_id_of, text_of

from deskpilot.vision import ocr_ready
from xterm_kit import WORDS, launch_xterm, primary_selection

pytestmark = pytest.mark.desktop


async def test_an_agent_reads_and_clicks_an_xterm_through_its_visual_tree(
    dp_desktop: Any,
) -> None:
    if not ocr_ready():
        pytest.skip("needs the OCR engine")
    app = launch_xterm()  # never on the AT-SPI bus
    try:
        async with memory_client() as client:
            deadline = time.monotonic() + 20.0
            while True:
                state = await client.call_tool("get_app_state", {"app": app.pid})
                if not state.is_error and re.search(r'word "bravo" \[\d+\]', text_of(state)):
                    break
                assert time.monotonic() < deadline, text_of(state)
                await asyncio.sleep(0.3)
            text = text_of(state)
            assert re.search(r"^tree=visual \(", text, re.M), text
            assert re.search(r"^treeVersion=visual-[0-9a-f]{20}$", text, re.M), text
            assert re.search(rf'^\s+- text "{WORDS}" \[\d+\]$', text, re.M), text
            r = await client.call_tool(
                "click",
                {
                    "state_id": state_id_of(state),
                    "element_id": element_id(state, r'word "bravo"'),
                    "count": 2,
                },
            )
            assert not r.is_error, text_of(r)
            steps = diag_of(r)["steps"]
            assert [(s["kind"], s["outcome"]) for s in steps] == [("click", "call_returned")]
            display = os.environ["DISPLAY"]
            assert await asyncio.to_thread(primary_selection, display) == "bravo"
    finally:
        app.stop()
