"""An agent on a window with no accessibility tree: xterm through the SDK client. The state
it reads is the OCR outline (``tree=visual``), and a click on one of its elements is a click
on that text (a double-click in xterm selects the word: the X PRIMARY selection then holds
it)."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import time
from typing import Any

import pytest
from mcp_helpers import diag_of, element_id, memory_client, state_id_of, text_of

from deskpilot.desktop.apps import launch
from deskpilot.vision import ocr_ready

pytestmark = pytest.mark.desktop


def _primary_selection(display: str, timeout: float = 3.0) -> str | None:
    """The X PRIMARY selection's text, asked of its owner as UTF8_STRING."""
    from Xlib import X, Xatom
    from Xlib import display as xdisplay

    d = xdisplay.Display(display)
    try:
        window = d.screen().root.create_window(0, 0, 1, 1, 0, X.CopyFromParent)
        prop = d.intern_atom("DESKPILOT_TEST_SELECTION")
        window.convert_selection(Xatom.PRIMARY, d.intern_atom("UTF8_STRING"), prop, X.CurrentTime)
        d.flush()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not d.pending_events():
                time.sleep(0.02)
                continue
            event = d.next_event()
            if event.type == X.SelectionNotify:
                data = None if event.property == X.NONE else window.get_full_property(prop, 0)
                value = data.value if data is not None else None
                return value.decode() if isinstance(value, bytes) else None
        return None
    finally:
        d.close()


async def test_an_agent_reads_and_clicks_an_xterm_through_its_visual_tree(
    dp_desktop: Any,
) -> None:
    xterm = shutil.which("xterm")
    if xterm is None or not ocr_ready():
        pytest.skip("needs xterm and the OCR engine")
    script = "echo DESKPILOT-VISUAL-4711; echo alpha bravo charlie; exec sleep 600"
    argv = [xterm, "-geometry", "116x34+0+0", "-fa", "DejaVu Sans Mono", "-fs", "14"]
    app = launch([*argv, "-e", "sh", "-c", script])  # never on the AT-SPI bus
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
            assert re.search(r'^\s+- text "alpha bravo charlie" \[\d+\]$', text, re.M), text
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
            assert await asyncio.to_thread(_primary_selection, display) == "bravo"
    finally:
        app.stop()
