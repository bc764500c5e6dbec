"""The app matrix's Firefox ESR row, through the official TypeScript MCP SDK (what Claude Code
and pi are built on): a registration form served on loopback by a real HTTP server that
records what it receives.

* **read**: the state shows the form's fields, the options of the closed ``<select>`` (read
  without opening it) and an unchecked check box as unchecked; not the hidden preloaded
  "New Tab" page, the auto-hidden menu bar, or Firefox's ";;" action names.
* **act**: every text field filled with ``type_text`` by element id (Firefox's EditableText
  answers true and types nothing: the host types by focus and keys), an option chosen with
  ``set_value``, the box ticked, the form sent — and the server received exactly that.
* **the address bar**: ``set_value`` of an address (Firefox ignores a semantic value: the
  keys a person types go instead, read back) and Return: the page loads.

Firefox starts once for the module (a throwaway profile; accessibility comes on because the
private desktop's bus says so)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from real_clients import TS_CALLS, run_ts_script, stdio_config

from deskpilot.desktop.apps import App
from desktop_kit import Site, firefox_at, needs_firefox, site

pytestmark = [pytest.mark.desktop, needs_firefox]

FORM = """<!doctype html><html><head><meta charset="utf-8"><title>Register</title></head>
<body><h1>Register</h1>
<form method="post" action="/register">
<p><label for="name">Name</label> <input id="name" name="name"></p>
<p><label for="email">Email</label> <input id="email" name="email" type="email"></p>
<p><label for="city">City</label> <input id="city" name="city"></p>
<p><label for="plan">Plan</label> <select id="plan" name="plan">
<option>Free</option><option>Team</option><option>Enterprise</option></select></p>
<p><label><input id="terms" name="terms" type="checkbox" value="yes"> I accept the terms</label></p>
<p><label for="notes">Notes</label> <textarea id="notes" name="notes"></textarea></p>
<p><button type="submit">Create account</button></p>
</form></body></html>
"""


NEXT = """<!doctype html><html><head><title>Next page</title></head>
<body><h1>Arrived</h1></body></html>
"""


@pytest.fixture(scope="module")
def form_site(dp_desktop: object) -> Iterator[Site]:
    with site({"/": FORM, "/next": NEXT}) as served:
        yield served


@pytest.fixture(scope="module")
def firefox(form_site: Site) -> Iterator[App]:
    with firefox_at(form_site.url) as app:
        yield app


def _ok(result: dict[str, Any]) -> str:
    assert not result["isError"], (result.get("text"), result.get("diagnostic"))
    text: str = result["text"]
    return text


def _type(field: str, text: str) -> dict[str, Any]:
    return {
        "name": "type_text",
        "arguments": {"state_id": "$state", "element_id": f"$element:{field}", "text": text},
    }


async def _loaded(firefox: App) -> None:
    """Firefox showing the form, read through the SDK until its page has loaded."""
    calls = [{"name": "get_app_state", "arguments": {"app": firefox.pid}}]
    for _ in range(60):
        report = await run_ts_script(TS_CALLS, stdio_config(), json.dumps(calls))
        text = report["results"][0]["text"]
        if 'button "Create account"' in text and "[busy]" not in text:
            return
    raise AssertionError(f"the form never loaded:\n{text}")


async def test_a_form_is_read_filled_and_sent(firefox: App, form_site: Site) -> None:
    await _loaded(firefox)
    calls = [
        {"name": "get_app_state", "arguments": {"app": firefox.pid}},
        _type('textField "Name"', "Ada Lovelace"),
        _type('textField "Email"', "ada@example.org"),
        _type('textField "City"', "London"),
        _type('textField "Notes"', "first program"),
        {
            "name": "set_value",
            "arguments": {
                "state_id": "$state",
                "element_id": '$element:comboBox "Plan"',
                "value": "Team",
            },
        },
        {
            "name": "click",
            "arguments": {"state_id": "$state", "element_id": '$element:checkBox "I accept'},
        },
        {
            "name": "click",
            "arguments": {"state_id": "$state", "element_id": '$element:button "Create account"'},
        },
    ]
    report = await run_ts_script(TS_CALLS, stdio_config(), json.dumps(calls))
    state, *typed, chose, ticked, sent = report["results"]
    tree = _ok(state)
    # what is on screen, and only that
    assert re.search(
        r'comboBox "Plan" = "Free" \[collapsed\] \[options: "Free", "Team", "Enterprise"\]', tree
    ), tree
    assert "menuItem" not in tree, tree
    assert re.search(r'checkBox "I accept the terms" \[unchecked\] \[\d+\]$', tree, re.M), tree
    assert "New Tab" not in tree and "menuBar" not in tree and ";;" not in tree, tree
    for field in ("Name", "Email", "City", "Notes"):
        assert re.search(rf'textField "{field}" = "" \[\d+\]$', tree, re.M), tree
    # each field shows its text in the state the action returned
    for result, (field, text) in zip(
        typed,
        [("Name", "Ada Lovelace"), ("Email", "ada@example.org"), ("City", "London")],
        strict=False,
    ):
        assert f'textField "{field}" = "{text}"' in _ok(result), result["text"]
    assert 'textField "Notes" = "first program"' in _ok(typed[3]), typed[3]["text"]
    for result in (*typed, chose, ticked):
        # never "nothing happened": the effect is in the state the result carries
        assert result["diagnostic"]["actionOutcome"] == "call_returned", result["diagnostic"]
    assert re.search(r'comboBox "Plan" = "Team" [^\n]*\[collapsed\]', _ok(chose)), chose
    assert re.search(r'checkBox "I accept the terms" [^\n]*\[checked\]', _ok(ticked)), ticked
    _ok(sent)
    (post,) = form_site.wait_post(1)
    assert post == {
        "name": ["Ada Lovelace"],
        "email": ["ada@example.org"],
        "city": ["London"],
        "plan": ["Team"],
        "terms": ["yes"],
        "notes": ["first program"],
    }, post


async def test_set_value_into_the_address_bar_is_typed_and_read_back(
    firefox: App, form_site: Site
) -> None:
    """A trial's set_value on the address bar was sent semantically, changed nothing and
    had no other way in: an editable combo box is a field, typed into as a person does."""
    address = f"{form_site.url.rstrip('/')}/next"
    # the page in the tab has loaded (the form's answer, after the test above): a load
    # that ends while the address is typed puts the page's address back in the bar
    looked = [{"name": "get_app_state", "arguments": {"app": firefox.pid}}]
    for _ in range(60):
        report = await run_ts_script(TS_CALLS, stdio_config(), json.dumps(looked))
        now = report["results"][0]["text"]
        if "[busy]" not in now and re.search(r'^Window=\(title="(Received|Register) ', now, re.M):
            break
    calls = [
        {"name": "get_app_state", "arguments": {"app": firefox.pid}},
        {
            "name": "set_value",
            "arguments": {
                "state_id": "$state",
                "element_id": '$element:comboBox "Search',
                "value": address,
            },
        },
        {"name": "press_key", "arguments": {"state_id": "$state", "keys": ["Return"]}},
    ]
    report = await run_ts_script(TS_CALLS, stdio_config(), json.dumps(calls))
    _state, set_, entered = report["results"]
    assert set_["diagnostic"]["effect"] == "confirmed", set_["diagnostic"]
    assert set_["diagnostic"]["steps"][0]["method"] != "semantic", set_["diagnostic"]
    assert re.search(r'comboBox "[^"]*" = "[^"]*/next"', _ok(set_)), set_["text"]
    assert 'Window=(title="Next page' in _ok(entered), entered["text"]
