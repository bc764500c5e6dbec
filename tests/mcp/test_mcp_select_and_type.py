"""What an agent is told when it clicks a list row and when it types into something that takes
no text: zenity (GTK 3 tree view) and Chromium, through the SDK client."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from mcp_helpers import (
    astart_app,
    diag_of,
    element_id,
    memory_client,
    state_id_of,
    state_showing,
    text_of,
)

from deskpilot.desktop.apps import App
from desktop_kit import page_fixture

pytestmark = pytest.mark.desktop


async def test_zenity_list_click_selects_and_says_so_count_2_activates(dp_desktop: Any) -> None:
    app = await astart_app(
        ["zenity", "--list", "--title=Rows", "--column=Name", "a", "b", "c"], capture_stdout=True
    )
    try:
        async with memory_client() as client:
            state = await client.call_tool("get_app_state", {"app": app.pid})
            assert not state.is_error, text_of(state)
            r = await client.call_tool(
                "click", {"state_id": state_id_of(state), "element_id": element_id(state, '"b"')}
            )
            assert not r.is_error, text_of(r)
            d = diag_of(r)
            (step,) = d["steps"]
            assert step.pop("waitBound") in ("event", "toolkit_none"), step  # GTK 3
            assert step == {
                "kind": "click",
                "outcome": "call_returned",
                "method": "semantic",
                "risk": "L1",
            }
            text = text_of(r)
            assert "The click selected the item through accessibility; it did not activate" in text
            assert "The new state shows it [selected]." in text
            assert re.search(r'cell "b" \[selected\] \[\d+\]$', text, re.M), text
            await asyncio.sleep(0.3)
            assert app.proc.poll() is None, "the dialog must still be open"
            again = await client.call_tool(
                "click",
                {"state_id": state_id_of(r), "element_id": element_id(r, '"c"'), "count": 2},
            )
            assert not again.is_error, text_of(again)
            assert "The double click activated the item (its activate action)." in text_of(again)
            # zenity exits on the activation. The state after it is read once the app
            # settled, which on a loaded machine may come before the exit: then it shows the
            # row it activated, and the exit is checked by the app's own output below
            if diag_of(again)["observationOutcome"] != "unavailable":
                assert re.search(r'cell "c" \[selected\]', text_of(again)), text_of(again)
        assert app.proc.stdout is not None
        out, _ = app.proc.communicate(timeout=10)
        # printed once, on the double click, and the row double-clicked (not the selected one)
        assert out.decode() == "c\n"
    finally:
        app.stop()


PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Form</title></head><body>
<label>Note <input id="note" type="text" value="keep"></label>
<select size="4" aria-label="Fruit" onchange="document.title = 'fruit:' + this.value">
<option>apple</option><option>banana</option><option>cherry</option></select>
<p>Static words here</p>
</body></html>
"""


#: a fresh page for each test (they change it), on the AT-SPI bus before the test starts
chromium_page = page_fixture("chromium_page", PAGE, scope="function", desktop="dp_desktop")


async def _loaded(client: Any, pid: int) -> Any:
    return await state_showing(client, pid, '"Static words here"')


async def test_chromium_typing_into_static_text_is_refused_before_anything_happens(
    chromium_page: App,
) -> None:
    async with memory_client() as client:
        state = await _loaded(client, chromium_page.pid)
        title = text_of(state).splitlines()[1]
        note = element_id(state, r'textField "Note" = "keep"')
        words = element_id(state, r'text "Static words here"')
        refused = await client.call_tool(
            "type_text", {"state_id": state_id_of(state), "element_id": words, "text": "zzz"}
        )
        assert refused.is_error
        d = diag_of(refused)
        assert d["code"] == "unsupported_action" and d["actionOutcome"] == "not_dispatched", d
        assert d["details"]["reason"] == "not_editable"
        assert d["details"]["elementId"] == words and d["details"]["suggestedElementId"] == note
        assert f"is {note} (textField): type_text with element_id={note}" in d["message"]
        assert "steps" not in d and "zzz" not in text_of(refused)
        # nothing was typed and nothing moved: same field value, same window title
        now = await client.call_tool("get_app_state", {"app": str(chromium_page.pid)})
        assert text_of(now).splitlines()[1] == title
        assert re.search(r'textField "Note" = "keep"', text_of(now)), text_of(now)
        assert "zzz" not in text_of(now)
        # the refused call did not spend its state_id: the suggested field takes the text
        typed = await client.call_tool(
            "type_text", {"state_id": state_id_of(state), "element_id": note, "text": "XYZ"}
        )
        assert not typed.is_error, text_of(typed)
        after = text_of(typed)
        if "\nstate_id=" not in after:
            after = text_of(
                await client.call_tool("get_app_state", {"app": str(chromium_page.pid)})
            )
        assert re.search(r'textField "Note" = "[^"]*XYZ[^"]*"', after), after


async def test_chromium_list_box_click_selects_and_the_page_sees_it(chromium_page: App) -> None:
    async with memory_client() as client:
        state = await _loaded(client, chromium_page.pid)
        r = await client.call_tool(
            "click",
            {"state_id": state_id_of(state), "element_id": element_id(state, 'listItem "cherry"')},
        )
        assert not r.is_error, text_of(r)
        assert "The click selected the item through accessibility" in text_of(r)
        page = text_of(r)
        for _ in range(20):
            if 'document "fruit:cherry"' in page:
                break
            await asyncio.sleep(0.2)
            page = text_of(await client.call_tool("get_app_state", {"app": str(chromium_page.pid)}))
        assert 'document "fruit:cherry"' in page, page
        assert re.search(r'listItem "cherry" (\[focused\] )?\[selected\]', page), page
