"""Real apps through the SDK client: zenity (stdio), mousepad (in memory), Chromium (stdio)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import (
    astart_app,
    await_accessible,
    diag_of,
    element_id,
    has_image,
    memory_client,
    state_id_of,
    stdio_params,
    text_of,
)

from deskpilot.desktop.apps import launch_chromium
from mcp import Client

pytestmark = pytest.mark.desktop


async def test_zenity_form_over_stdio(dp_desktop: Any) -> None:
    app = await astart_app(
        [
            "zenity",
            "--forms",
            "--title=Signup",
            "--text=Details",
            "--add-entry=Name",
            "--add-entry=City",
        ],
        capture_stdout=True,
    )
    try:
        async with Client(stdio_params()) as client:
            # unnamed GTK entries are named from the label beside them (once laid out)
            for _ in range(50):
                state = await client.call_tool("get_app_state", {"app": app.pid})
                assert not state.is_error, text_of(state)
                if 'textField "Name"' in text_of(state):
                    break
                await asyncio.sleep(0.1)
            name_field = element_id(state, r'textField "Name"')
            r1 = await client.call_tool(
                "type_text",
                {"state_id": state_id_of(state), "element_id": name_field, "text": "Ada"},
            )
            assert not r1.is_error, text_of(r1)
            d1 = diag_of(r1)
            assert [s["kind"] for s in d1["steps"]] == ["focus", "type_text"]
            assert d1["ledgerRows"] == 2 and d1["observationOutcome"] == "available"
            assert "Ada" not in str(d1)  # typed text never goes into a diagnostic
            city_field = element_id(r1, r'textField "City"')
            r2 = await client.call_tool(
                "type_text",
                {"state_id": state_id_of(r1), "element_id": city_field, "text": "Paris"},
            )
            assert not r2.is_error, text_of(r2)
            ok = await client.call_tool(
                "click", {"state_id": state_id_of(r2), "element_id": element_id(r2, '"OK"')}
            )
            assert not ok.is_error, text_of(ok)
            d = diag_of(ok)
            assert d["actionOutcome"] == "call_returned"
            # zenity exits on OK: the window is gone, so no state can be issued
            assert d["observationOutcome"] == "unavailable" and d["stateIdIssued"] is False
        assert app.proc.stdout is not None
        out, _ = app.proc.communicate(timeout=10)
        assert out.decode().strip() == "Ada|Paris"
    finally:
        app.stop()


async def test_mousepad_type_and_save(dp_desktop: Any, tmp_path: Path) -> None:
    doc = tmp_path / "note.txt"
    doc.write_text("")
    app = await astart_app(["mousepad", str(doc)])
    try:
        async with memory_client() as client:
            state = await client.call_tool("get_app_state", {"app": "mousepad"})
            assert not state.is_error, text_of(state)
            editor = element_id(state, r'^\s*- textField = ""( \[[a-z]+( \d+)?\])* \[\d+\]$')
            typed = await client.call_tool(
                "type_text",
                {"state_id": state_id_of(state), "element_id": editor, "text": "hello deskpilot"},
            )
            assert not typed.is_error, text_of(typed)
            assert diag_of(typed)["observationOutcome"] == "available"
            saved = await client.call_tool(
                "press_key", {"state_id": state_id_of(typed), "keys": ["ctrl+s"]}
            )
            assert not saved.is_error, text_of(saved)
            assert diag_of(saved)["actionOutcome"] == "call_returned"
        # mousepad writes the file asynchronously after ctrl+s: wait for the write to land
        for _ in range(300):  # 15 s at most
            if doc.read_text():
                break
            await asyncio.sleep(0.05)
        assert doc.read_text().rstrip("\n") == "hello deskpilot"
    finally:
        app.stop()


async def test_a_dialog_the_action_opened_is_the_result_and_closing_it_gives_the_window_back(
    dp_desktop: Any, tmp_path: Path
) -> None:
    """mousepad's File › Save As… opens a dialog window of its own (no window manager: it
    does not take the focus). The click's result carries the dialog's state (it was
    ``dialog_opened`` with no usable state), and Cancel on that state carries the mousepad
    window again (it was ``target_not_found``); get_app_state on the app shows the dialog
    while it is open, not the window under it."""
    doc = tmp_path / "draft.txt"
    doc.write_text("")
    app = await astart_app(["mousepad", str(doc)])
    try:
        async with memory_client() as client:
            state = await client.call_tool("get_app_state", {"app": app.pid})
            assert not state.is_error, text_of(state)
            menu = await client.call_tool(
                "click",
                {"state_id": state_id_of(state), "element_id": element_id(state, r'menu "File"')},
            )
            assert not menu.is_error, text_of(menu)
            if "\nstate_id=" not in text_of(menu):
                menu = await client.call_tool("get_app_state", {"app": app.pid})
            save_as = element_id(menu, r'menuItem "Save As')
            opened = await client.call_tool(
                "click", {"state_id": state_id_of(menu), "element_id": save_as}
            )
            assert not opened.is_error, text_of(opened)
            assert "A dialog of this window opened" in text_of(opened), text_of(opened)
            d = diag_of(opened)
            assert not d.get("noop") and d["stateIdIssued"], d
            assert re.search(r'^Window=\(title="Save As', text_of(opened), re.M), text_of(opened)
            dialog = await client.call_tool("get_app_state", {"app": app.pid})
            assert not dialog.is_error, text_of(dialog)
            header = text_of(dialog).splitlines()[1]
            assert header.startswith('Window=(title="Save As'), header
            cancel = element_id(opened, r'button "(_)?Cancel"')
            closed = await client.call_tool(
                "click", {"state_id": state_id_of(opened), "element_id": cancel}
            )
            assert not closed.is_error, text_of(closed)
            assert "closed. The window now in front of the app is" in text_of(closed)
            assert re.search(r'^Window=\(title=".*Mousepad"', text_of(closed), re.M), text_of(
                closed
            )
            assert diag_of(closed)["stateIdIssued"], diag_of(closed)
    finally:
        app.stop()


async def test_a_new_window_the_action_opened_is_announced_and_reachable_by_id(
    dp_desktop: Any, tmp_path: Path
) -> None:
    doc = tmp_path / "first.txt"
    doc.write_text("")
    app = await astart_app(["mousepad", str(doc)])
    try:
        async with memory_client() as client:
            state = await client.call_tool("get_app_state", {"app": app.pid})
            assert not state.is_error, text_of(state)
            r = await client.call_tool(
                "press_key", {"state_id": state_id_of(state), "keys": ["ctrl+shift+n"]}
            )
            assert not r.is_error, text_of(r)
            m = re.search(
                r"A new window of this app opened: .* \(window (0x[0-9a-f]+)\)", text_of(r)
            )
            assert m is not None, text_of(r)
            d = diag_of(r)
            assert not d.get("noop") and "window_opened" in d.get("notReusable", [])
            other = await client.call_tool("get_app_state", {"app": m.group(1)})
            assert not other.is_error, text_of(other)
            assert f"id={m.group(1)})" in text_of(other).splitlines()[1]
    finally:
        app.stop()


async def test_type_text_with_submit_picks_a_file_in_a_gtk_file_chooser(
    dp_desktop: Any, tmp_path: Path
) -> None:
    """Typing a path into the chooser's location entry and submitting in one call: the Enter
    must not be dropped while the chooser is still taking the path in."""
    target = tmp_path / "pick-me.txt"
    target.write_text("x\n")
    app = await astart_app(["zenity", "--file-selection", "--title=Pick"], capture_stdout=True)
    try:
        async with memory_client() as client:
            state = await client.call_tool("get_app_state", {"app": app.pid})
            assert not state.is_error, text_of(state)
            opened = await client.call_tool(
                "press_key", {"state_id": state_id_of(state), "keys": ["ctrl+l"]}
            )
            assert not opened.is_error, text_of(opened)
            if "\nstate_id=" not in text_of(opened):
                opened = await client.call_tool("get_app_state", {"app": app.pid})
            entry = element_id(opened, r'textField = "" \[focused\]')
            r = await client.call_tool(
                "type_text",
                {
                    "state_id": state_id_of(opened),
                    "element_id": entry,
                    "text": str(target),
                    "submit": True,
                },
            )
            assert not r.is_error, text_of(r)
            assert [s["kind"] for s in diag_of(r)["steps"]] == ["focus", "type_text", "press_key"]
        assert app.proc.wait(timeout=10) == 0
        assert app.proc.stdout is not None
        assert app.proc.stdout.read().decode().strip() == str(target)
    finally:
        app.stop()


PAGE = (
    "data:text/html,<title>Probe</title>"
    "<button onclick=\"this.textContent='Done'\">Press me</button>"
)


async def test_chromium_click_over_stdio(dp_desktop: Any) -> None:
    app = launch_chromium(PAGE)
    try:
        await await_accessible(app.pid)
        async with Client(stdio_params()) as client:
            state: Any = None
            for _ in range(50):  # the renderer's tree arrives a little after the window
                state = await client.call_tool("get_app_state", {"app": "chromium"})
                if not state.is_error and '"Press me"' in text_of(state):
                    break
            assert state is not None and '"Press me"' in text_of(state), text_of(state)
            assert re.search(r"^url=data:text/html", text_of(state), re.M)
            r = await client.call_tool(
                "click",
                {"state_id": state_id_of(state), "element_id": element_id(state, '"Press me"')},
            )
            assert not r.is_error, text_of(r)
            d = diag_of(r)
            assert d["actionOutcome"] == "call_returned"
            # Chromium reacts to DoAction at once: no GTK-like 250 ms activation delay
            assert d["timings"]["toolkitDelayMs"] is not None, d["timings"]
            assert d["timings"]["toolkitDelayMs"] < 200, d["timings"]
            if d["observationOutcome"] == "available":
                assert 'button "Done"' in text_of(r) and has_image(r)
            else:
                again = await client.call_tool("get_app_state", {"app": "chromium"})
                assert 'button "Done"' in text_of(again)
    finally:
        app.stop()


CONFIRM_PAGE = (
    "data:text/html,<title>Confirm</title><p id=out>waiting</p>"
    "<button onclick=\"document.getElementById('out').textContent="
    "confirm('Really?') ? 'accepted' : 'cancelled'\">Ask me</button>"
)


async def test_a_dialog_an_action_opened_takes_the_next_click(dp_desktop: Any) -> None:
    """The state handed back after a click that opened a JavaScript confirm() must be one the
    next click can act on: Chromium drops input to a dialog for 0.5 s after showing it."""
    app = launch_chromium(CONFIRM_PAGE)
    try:
        await await_accessible(app.pid)
        async with Client(stdio_params()) as client:
            state: Any = None
            for _ in range(50):
                state = await client.call_tool("get_app_state", {"app": str(app.pid)})
                if not state.is_error and '"Ask me"' in text_of(state):
                    break
                await asyncio.sleep(0.1)
            ask = {"state_id": state_id_of(state), "element_id": element_id(state, '"Ask me"')}
            opened = await client.call_tool("click", ask)
            assert not opened.is_error, text_of(opened)
            if "\nstate_id=" not in text_of(opened):  # not reusable (the reason is given)
                opened = await client.call_tool("get_app_state", {"app": str(app.pid)})
            assert '"Really?"' in text_of(opened), text_of(opened)  # the dialog is up
            cancel = element_id(opened, r'button "Cancel"')
            closed = await client.call_tool(
                "click", {"state_id": state_id_of(opened), "element_id": cancel}
            )
            assert not closed.is_error, text_of(closed)
            page = text_of(closed)
            if "cancelled" not in page:  # the new state may predate the page's own update
                await asyncio.sleep(0.5)
                page = text_of(await client.call_tool("get_app_state", {"app": str(app.pid)}))
            assert "cancelled" in page and '"Really?"' not in page, page
    finally:
        app.stop()


async def test_open_app_by_desktop_id_then_observe(dp_desktop: Any) -> None:
    import json
    import os
    import signal

    async with memory_client() as client:
        r = await client.call_tool("open_app", {"app": "org.gnome.Calculator"})
        assert not r.is_error, text_of(r)
        data = json.loads(text_of(r).split("\nOpened")[0])
        pid = data["pid"]
        try:
            assert data["launched"] is True and data["window"]["windowId"].startswith("0x")
            d = diag_of(r)
            assert d["actionOutcome"] == "call_returned"
            state = await client.call_tool("get_app_state", {"app": data["app"]["pid"]})
            assert not state.is_error and 'window "Calculator"' in text_of(state)
            missing = await client.call_tool("open_app", {"app": "no-such-app-xyz"})
            assert missing.is_error and diag_of(missing)["code"] == "target_not_found"
        finally:
            os.killpg(pid, signal.SIGTERM)
