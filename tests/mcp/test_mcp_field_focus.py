"""Text fields as a person uses them, through the official SDK's client over stdio on real
apps: a type_text the policy refuses has no effect (not even the focus step), a click on a
GTK 3 entry puts the keyboard focus in it, and text typed into a Chromium field with
``element_id`` lands at the end of what the field held."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from mcp_helpers import (
    astart_app,
    diag_of,
    element_id,
    state_id_of,
    state_showing,
    stdio_params,
    text_of,
)

from deskpilot.desktop.apps import App
from desktop_kit import page_fixture
from mcp import Client

pytestmark = pytest.mark.desktop


def _focused_lines(state: Any) -> list[str]:
    """Lines marked focused: none when the window does not hold the keyboard focus (on a
    bare Xvfb focus follows the pointer, and an earlier test may have left it elsewhere)."""
    lines = [ln for ln in text_of(state).splitlines() if "[focused]" in ln]
    assert len(lines) <= 1, text_of(state)
    return lines


def _focused_line(state: Any) -> str:
    lines = _focused_lines(state)
    assert len(lines) == 1, text_of(state)
    return lines[0]


def _pointer_away(desktop: Any) -> None:
    """Start from a desktop where the new dialog does not hold the keyboard focus (the state
    CI met after earlier tests): the pointer in a far corner and the focus on the root
    window, as it is left when a focused window of an earlier test closed. Without a window
    manager no one gives a new window the focus then."""
    from Xlib import X, display
    from Xlib.ext import xtest

    d = display.Display(desktop.display)
    try:
        xtest.fake_input(d, X.MotionNotify, x=desktop.width - 1, y=desktop.height - 1)
        d.set_input_focus(d.screen().root, X.RevertToParent, X.CurrentTime)
        d.sync()
    finally:
        d.close()


async def _state(client: Client, pid: int) -> Any:
    state = await client.call_tool("get_app_state", {"app": str(pid)})
    assert not state.is_error, text_of(state)
    return state


async def _submit_and_read(client: Client, state: Any, app: App) -> str:
    """The form's OK button, and what zenity printed."""
    ok = element_id(state, r'button "OK"')
    r = await client.call_tool("click", {"state_id": state_id_of(state), "element_id": ok})
    assert not r.is_error, text_of(r)
    assert app.proc.stdout is not None
    out, _ = await asyncio.to_thread(app.proc.communicate, timeout=10)
    return out.decode()


async def test_refused_type_text_into_a_pin_field_does_not_move_the_focus(dp_desktop: Any) -> None:
    _pointer_away(dp_desktop)
    app = await astart_app(
        ["zenity", "--forms", "--title=Pay", "--add-entry=Customer", "--add-password=PIN"],
        capture_stdout=True,
    )
    try:
        async with Client(stdio_params()) as client:
            first = await _state(client, app.pid)
            # a known focus to start from: the Customer field, as a person would click it
            customer = element_id(first, r'textField "Customer"')
            r = await client.call_tool(
                "click", {"state_id": state_id_of(first), "element_id": customer}
            )
            assert not r.is_error, text_of(r)
            state = await _state(client, app.pid)
            before = _focused_line(state)
            assert 'textField "Customer"' in before, before
            pin = element_id(state, r"passwordField")
            refused = await client.call_tool(
                "type_text", {"state_id": state_id_of(state), "element_id": pin, "text": "4321"}
            )
            assert refused.is_error
            d = diag_of(refused)
            assert d["code"] == "action_blocked", d
            assert d["details"]["reason"] == "data_class_not_allowed", d
            assert d["details"]["dataClasses"] == ["credential"], d  # as the message says
            assert d["actionOutcome"] == "not_dispatched", d
            # no step ran: the focus step was never dispatched
            assert all(s["outcome"] == "not_dispatched" for s in d.get("steps", [])), d
            assert "4321" not in text_of(refused)
            # says what to do (trial-6: "ask the user to do this step or to allow it" named
            # neither the field's class nor how)
            assert "credential" in text_of(refused) and "type it into that field" in text_of(
                refused
            ), text_of(refused)
            now = await _state(client, app.pid)
            assert _focused_line(now) == before, text_of(now)
            # the refusal did not spend the state_id; keys without element_id go where the
            # focus was, and the PIN field got nothing
            typed = await client.call_tool(
                "type_text", {"state_id": state_id_of(state), "text": "Ada"}
            )
            assert not typed.is_error, text_of(typed)
            out = await _submit_and_read(client, await _state(client, app.pid), app)
        assert out == "Ada|\n", out
    finally:
        app.stop()


async def test_click_on_a_gtk3_entry_focuses_it(dp_desktop: Any) -> None:
    _pointer_away(dp_desktop)
    app = await astart_app(
        ["zenity", "--forms", "--title=Ship", "--add-entry=Customer", "--add-entry=City"],
        capture_stdout=True,
    )
    try:
        async with Client(stdio_params()) as client:
            state = await _state(client, app.pid)
            assert not any("City" in ln for ln in _focused_lines(state)), text_of(state)
            city = element_id(state, r'textField "City"')
            r = await client.call_tool(
                "click", {"state_id": state_id_of(state), "element_id": city}
            )
            assert not r.is_error, text_of(r)
            d = diag_of(r)
            assert d["steps"][0]["outcome"] == "call_returned", d
            assert "action_noop" not in text_of(r), text_of(r)
            now = await _state(client, app.pid)
            assert re.search(r'textField "City".*\[focused\]', _focused_line(now)), text_of(now)
            typed = await client.call_tool(
                "type_text", {"state_id": state_id_of(now), "text": "Oslo"}
            )
            assert not typed.is_error, text_of(typed)
            out = await _submit_and_read(client, await _state(client, app.pid), app)
        assert out == "|Oslo\n", out
    finally:
        app.stop()


PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Field</title></head><body>
<label>Note <input id="note" type="text" value="keep"></label>
<p>Page loaded</p>
</body></html>
"""


#: a fresh page for each test (they change it), on the AT-SPI bus before the test starts
chromium_page = page_fixture("chromium_page", PAGE, scope="function", desktop="dp_desktop")


async def _loaded(client: Any, pid: int) -> Any:
    return await state_showing(client, pid, '"Page loaded"')


async def _value_after(client: Client, result: Any, pid: int, pattern: str) -> str:
    text = text_of(result)
    for _ in range(20):
        m = re.search(pattern, text)
        if m:
            return m.group(1)
        await asyncio.sleep(0.2)
        text = text_of(await client.call_tool("get_app_state", {"app": str(pid)}))
    raise AssertionError(text)


async def test_chromium_type_text_into_a_field_lands_at_the_end(chromium_page: App) -> None:
    async with Client(stdio_params()) as client:
        state = await _loaded(client, chromium_page.pid)
        note = element_id(state, r'textField "Note" = "keep"')
        typed = await client.call_tool(
            "type_text", {"state_id": state_id_of(state), "element_id": note, "text": "XYZ"}
        )
        assert not typed.is_error, text_of(typed)
        value = await _value_after(
            client, typed, chromium_page.pid, r'textField "Note" [^\n]*?= "([^"]*)"'
        )
        assert value == "keepXYZ", value
        # the address bar holds the page's URL: typed text goes after it, not before
        state = await _state(client, chromium_page.pid)
        bars = [ln for ln in text_of(state).splitlines() if "Address and search bar" in ln]
        assert len(bars) == 1, text_of(state)
        bar_line = bars[0]
        bar = int(re.search(r"\[(\d+)\]\s*$", bar_line).group(1))  # type: ignore[union-attr]
        url = re.search(r'= "([^"]*)"', bar_line).group(1)  # type: ignore[union-attr]
        typed = await client.call_tool(
            "type_text", {"state_id": state_id_of(state), "element_id": bar, "text": "#end"}
        )
        assert not typed.is_error, text_of(typed)
        value = await _value_after(
            client, typed, chromium_page.pid, r'textField [^\n]*= "([^"]*#end[^"]*)"'
        )
        assert value == url + "#end", (value, url)
