"""What a careful person would not do is refused, as an agent meets it through the official
TypeScript MCP SDK (what Claude Code and pi are built on): a click on a disabled button and a
``set_value`` on a read-only field come back as ``unsupported_action`` with their reason,
nothing sent, and the same state_id still acts (runtime/enabled_targets.py,
runtime/text_targets.py). A read-only field is not disabled: Chromium leaves it neither
enabled nor sensitive, and a click on it still does what the page says."""

from __future__ import annotations

import json
from typing import Any

import pytest
from real_clients import TS_CALLS, run_ts_script, stdio_config

from deskpilot.desktop.apps import App
from desktop_kit import page_fixture

pytestmark = [pytest.mark.desktop, pytest.mark.chromium]

PAGE = """<!doctype html><html><head><title>Refusals page</title></head><body>
<button disabled onclick="log.textContent = 'deleted'">Delete all</button>
<label>Code <input readonly value="RO-1" onclick="log.textContent = 'picker opened'"></label>
<button onclick="log.textContent = 'saved'">Save</button>
<p id="log">nothing yet</p>
</body></html>"""

chromium_page = page_fixture("chromium_page", PAGE, scope="function", desktop="dp_desktop")


def _refusal(result: dict[str, Any], reason: str) -> None:
    assert result["isError"], result
    diag = result["diagnostic"]
    assert diag["code"] == "unsupported_action", diag
    assert diag["details"]["reason"] == reason, diag
    assert diag["actionOutcome"] == "not_dispatched", diag
    assert "state_id is still valid" in result["text"], result["text"]


async def test_disabled_and_read_only_refusals_through_the_typescript_sdk(
    chromium_page: App,
) -> None:
    calls = [
        {"name": "get_app_state", "arguments": {"app": chromium_page.pid}},
        {
            "name": "click",
            "arguments": {"state_id": "$state", "element_id": '$element:button "Delete all"'},
        },
        {
            "name": "set_value",
            "arguments": {
                "state_id": "$state",
                "element_id": '$element:textField "Code"',
                "value": "X",
            },
        },
        # the refusals spent nothing: the same state acts
        {
            "name": "click",
            "arguments": {"state_id": "$state", "element_id": '$element:textField "Code"'},
        },
        {"name": "get_app_state", "arguments": {"app": chromium_page.pid}},
        {
            "name": "click",
            "arguments": {"state_id": "$state", "element_id": '$element:button "Save"'},
        },
        {"name": "get_app_state", "arguments": {"app": chromium_page.pid}},
    ]
    report = await run_ts_script(TS_CALLS, stdio_config(), json.dumps(calls))
    first, disabled, read_only, field_click, between, save, last = report["results"]
    assert not first["isError"], first
    assert '- button "Delete all" [disabled]' in first["text"], first["text"]
    assert '- textField "Code" = "RO-1" [readonly]' in first["text"], first["text"]
    assert "[disabled] [readonly]" not in first["text"]
    _refusal(disabled, "disabled")
    _refusal(read_only, "read_only")
    assert not field_click["isError"], field_click
    assert not between["isError"] and "picker opened" in between["text"], between["text"]
    assert not save["isError"], save
    assert "saved" in last["text"] and "deleted" not in last["text"], last["text"]
    assert '- textField "Code" = "RO-1"' in last["text"], last["text"]
