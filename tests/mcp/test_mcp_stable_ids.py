"""Element ids stay put, through the official TypeScript MCP SDK: an id read off one state of
a window names the same element in the next, however many lines appeared above it, and an id
whose element is gone names nothing (host/atspi/element_ids.py, docs/mcp.md "Element ids").

Before, ids were line numbers: a message appearing at the top of a window shifted every later
id by one, so the id of "Save" an agent had read named "Hide message" in the next state.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from real_clients import TS_CALLS, run_ts_script, stdio_config

from deskpilot.desktop.apps import App
from desktop_kit import app_fixture

pytestmark = pytest.mark.desktop

GROWING_APP = Path(__file__).resolve().parent.parent / "host" / "growing_gtk_app.py"
growing = app_fixture(
    "growing", ["/usr/bin/python3", str(GROWING_APP)], scope="function", desktop="dp_desktop"
)


def _ok(result: dict[str, Any]) -> str:
    assert not result["isError"], (result.get("text"), result.get("diagnostic"))
    text: str = result["text"]
    return text


def _id(text: str, line: str) -> int:
    """The id on the one tree line holding ``line``."""
    found = [int(m.group(1)) for m in re.finditer(rf"{re.escape(line)}.*\[(\d+)\]$", text, re.M)]
    assert len(found) == 1, (line, text)
    return found[0]


def _click(element: str) -> dict[str, Any]:
    return {"name": "click", "arguments": {"state_id": "$state", "element_id": element}}


async def test_an_id_from_an_older_state_names_the_same_element(growing: App) -> None:
    calls = [
        {"name": "get_app_state", "arguments": {"app": growing.pid}},
        _click('$element:button "Show message"'),
        _click('$element:button "Show message"'),
        # the ids the agent read before two lines appeared above them
        _click('$element@0:button "Save"'),
        _click('$element@0:button "Hide message"'),
        _click('$element@0:button "Save"'),
    ]
    report = await run_ts_script(TS_CALLS, stdio_config(), json.dumps(calls))
    first, shown, shown_twice, saved, hidden, saved_again = report["results"]
    before = _ok(first)
    after = _ok(shown_twice)
    assert 'label "Message 2"' in after and 'label "Message 1"' in after, after
    # the new lines come before them in the outline, and their ids did not move
    for line in ('button "Show message"', 'button "Hide message"', 'button "Save"'):
        assert _id(after, line) == _id(before, line), (line, before, after)
        assert after.index('label "Message 1"') < after.index(line)
    assert _id(after, 'label "Message 1"') not in re.findall(r"\[(\d+)\]$", before, re.M)
    assert _id(_ok(shown), 'label "Message 1"') == _id(after, 'label "Message 1"')
    # the old ids act on the elements they named
    assert 'label "Saved 1"' in _ok(saved), saved["text"]
    assert 'label "Message 2"' not in _ok(hidden), hidden["text"]
    assert 'label "Saved 2"' in _ok(saved_again), saved_again["text"]


async def test_an_id_whose_element_is_gone_names_nothing(growing: App) -> None:
    calls = [
        {"name": "get_app_state", "arguments": {"app": growing.pid}},
        _click('$element:button "Show message"'),
        _click('$element:button "Hide message"'),
        # "Message 1" is gone: its id must not name whatever came after it
        _click('$element@1:label "Message 1"'),
        _click('$element@0:button "Save"'),
    ]
    report = await run_ts_script(TS_CALLS, stdio_config(), json.dumps(calls))
    _first, shown, hidden, gone, saved = report["results"]
    message = _id(_ok(shown), 'label "Message 1"')
    assert f"[{message}]" not in _ok(hidden), hidden["text"]
    assert gone["isError"], gone
    assert gone["diagnostic"]["code"] in ("invalid_request", "stale_tree"), gone
    assert "not an element of this state" in gone["text"] or "no longer" in gone["text"], gone
    assert 'label "Saved 1"' in _ok(saved), saved["text"]
