"""A context menu is part of what an agent sees, through the official TypeScript MCP SDK
(what Claude Code and pi are built on). A menu a right click opens is a window of its own
(override-redirect, an application child beside the window's frame); the observation shows
it after the window's tree as a ``- popup`` section (host/popups.py,
host/atspi/popup_sections.py), its items are acted on by element id like any other, and it
is gone from the tree once it closes.

* a GTK 3 window (tests/host/context_menu_gtk_app.py): items that relabel a label, a
  disabled one (refused, as any disabled element), and a submenu;
* a Qt 6 and a Qt 5 window (tests/host/context_menu_qt_app.py): Qt leaves its menus out of
  the application's children, so the host finds them by their ``showing`` events; an item
  of a submenu hanging past the window's edge is clicked where it is, which closes the menus;
  a tool button that only opens a menu is clicked as a person would (its ShowMenu action
  opens nothing);
* Chromium's own page menu: "Reload" reloads the page (a counter the page keeps in
  sessionStorage goes up); Escape closes the menu.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from real_clients import TS_CALLS, run_ts_script, stdio_config

from deskpilot.desktop.apps import App
from desktop_kit import GTK3_NOOP_ARGV, app_fixture, page_fixture, running

pytestmark = pytest.mark.desktop

GTK3_MENU_APP = Path(__file__).resolve().parent.parent / "host" / "context_menu_gtk_app.py"
gtk_menu = app_fixture(
    "gtk_menu", ["/usr/bin/python3", str(GTK3_MENU_APP)], scope="function", desktop="dp_desktop"
)

QT_MENU_APP = GTK3_MENU_APP.with_name("context_menu_qt_app.py")


def _has(module: str) -> bool:
    probe = ["/usr/bin/python3", "-c", f"import {module}.QtWidgets"]
    return subprocess.run(probe, capture_output=True).returncode == 0


@pytest.fixture(
    params=[
        pytest.param("qt6", marks=pytest.mark.skipif(not _has("PyQt6"), reason="no PyQt6")),
        pytest.param("qt5", marks=pytest.mark.skipif(not _has("PyQt5"), reason="no PyQt5")),
    ]
)
def qt_menu(dp_desktop: object, request: pytest.FixtureRequest) -> Iterator[App]:
    with running(["/usr/bin/python3", str(QT_MENU_APP), request.param]) as app:
        yield app


PAGE = """<!doctype html><html><head><title>Menu page</title></head><body>
<p id="loads">loads 0</p>
<script>
const n = Number(sessionStorage.getItem("loads") || 0) + 1;
sessionStorage.setItem("loads", String(n));
document.getElementById("loads").textContent = "loads " + n;
</script>
</body></html>"""

menu_page = page_fixture("menu_page", PAGE, scope="function", desktop="dp_desktop")


def _ok(result: dict[str, Any]) -> str:
    assert not result["isError"], (result.get("text"), result.get("diagnostic"))
    text: str = result["text"]
    return text


def _popup(text: str) -> str:
    """The popup section of a state's tree ("" when there is none)."""
    m = re.search(r"^- popup \[\d+\]$.*", text, re.M | re.S)
    return m.group(0) if m else ""


def _right_click(target: str) -> dict[str, Any]:
    return {
        "name": "click",
        "arguments": {"state_id": "$state", "element_id": f"$element:{target}", "button": "right"},
    }


def _click(target: str) -> dict[str, Any]:
    return {
        "name": "click",
        "arguments": {"state_id": "$state", "element_id": f"$element:{target}"},
    }


async def test_a_gtk_context_menu_is_seen_and_chosen_from(gtk_menu: App) -> None:
    calls = [
        {"name": "get_app_state", "arguments": {"app": gtk_menu.pid}},
        _right_click('label "Notes"'),
        _click('menuItem "Nothing here"'),  # disabled: refused, the state still acts
        _click('menuItem "Whisper"'),
        _right_click('label "Notes"'),
        _click('menu "More"'),
        _click('menuItem "Echo"'),
    ]
    report = await run_ts_script(TS_CALLS, stdio_config(), json.dumps(calls))
    first, opened, disabled, whisper, again, more, echo = report["results"]
    assert _popup(_ok(first)) == "", first["text"]
    menu = _popup(_ok(opened))
    assert re.search(r"^  - menu \[\d+\]$", menu, re.M), menu
    for line in ('menuItem "Shout"', 'menuItem "Whisper"', 'menuItem "Nothing here" [disabled]'):
        assert f"    - {line} [" in menu, menu
    assert menu.index('"Shout"') < menu.index('"Whisper"'), menu
    # the window's own tree comes first, unchanged: the popup is appended after it
    assert _ok(opened).index('label "Said: nothing"') < _ok(opened).index("- popup ["), opened
    assert disabled["isError"] and disabled["diagnostic"]["details"]["reason"] == "disabled"
    assert 'label "Said: whisper"' in _ok(whisper), whisper["text"]
    assert _popup(whisper["text"]) == "", whisper["text"]  # chosen: the menu closed
    assert _popup(_ok(again)), again["text"]
    assert re.search(r'- menu "More" .*\n\s+- menuItem "Echo"', _ok(more)), more["text"]
    assert 'label "Said: echo"' in _ok(echo) and _popup(echo["text"]) == "", echo["text"]


async def test_a_qt_context_menu_is_found_by_its_events_and_chosen_from(qt_menu: App) -> None:
    point = {"x": 200, "y": 200, "button": "right"}  # its submenu hangs past the bottom
    calls = [
        {"name": "get_app_state", "arguments": {"app": qt_menu.pid}},
        {"name": "click", "arguments": {"state_id": "$state", **point}},
        _click('menuItem "Nothing here"'),
        _click('menuItem "Beta"'),
        {"name": "click", "arguments": {"state_id": "$state", **point}},
        _click('menuItem "More"'),
        _click('menuItem "Delta"'),
        {"name": "click", "arguments": {"state_id": "$state", **point}},
        {"name": "press_key", "arguments": {"state_id": "$state", "keys": ["Escape"]}},
        _click('button "Tools"'),  # a tool button that only opens its menu (InstantPopup)
        _click('menuItem "Saw"'),
    ]
    report = await run_ts_script(TS_CALLS, stdio_config(), json.dumps(calls))
    first, opened, disabled, beta, again, more, delta, third, escaped, tools, saw = report[
        "results"
    ]
    assert _popup(_ok(first)) == "", first["text"]
    menu = _popup(_ok(opened))
    for line in ('menuItem "Alpha"', 'menuItem "Beta"', 'menuItem "Nothing here" [disabled]'):
        assert f"  - {line} [" in menu, menu
    assert disabled["isError"] and disabled["diagnostic"]["details"]["reason"] == "disabled"
    assert 'label "chosen: Beta"' in _ok(beta) and _popup(beta["text"]) == "", beta["text"]
    assert _popup(_ok(again)), again["text"]
    assert re.search(r'menuItem "More".*\n.*\n\s+- menuItem "Delta"', _ok(more)), more["text"]
    # a person's click on the item: it is chosen and every menu closes
    assert 'label "chosen: Delta"' in _ok(delta) and _popup(delta["text"]) == "", delta["text"]
    assert _popup(_ok(third)), third["text"]
    assert _popup(_ok(escaped)) == "", escaped["text"]
    # Qt's ShowMenu action opens nothing for it: the click is a person's click
    assert re.search(r'^  - menuItem "Hammer" \[\d+\]$', _popup(_ok(tools)), re.M), tools
    assert 'label "chosen: Saw"' in _ok(saw) and _popup(saw["text"]) == "", saw["text"]


gtk_below = app_fixture("gtk_below", GTK3_NOOP_ARGV, scope="function", desktop="dp_desktop")


async def test_keys_for_another_app_are_refused_while_a_menu_holds_them(
    gtk_below: App, gtk_menu: App
) -> None:
    """An open menu takes every key until it closes: keys meant for another app would
    choose in it (a trial erased a document that way: Down, Return ran another app's
    Undo). They are refused, saying whose menu it is; once it closed, they go through."""
    calls = [
        {"name": "get_app_state", "arguments": {"app": gtk_menu.pid}},
        _right_click('label "Notes"'),
        {"name": "get_app_state", "arguments": {"app": gtk_below.pid}},
        {"name": "press_key", "arguments": {"state_id": "$state", "keys": ["Down", "Return"]}},
        {"name": "get_app_state", "arguments": {"app": gtk_menu.pid}},
        {"name": "press_key", "arguments": {"state_id": "$state", "keys": ["Escape"]}},
        {"name": "get_app_state", "arguments": {"app": gtk_below.pid}},
        {"name": "press_key", "arguments": {"state_id": "$state", "keys": ["Tab"]}},
        {"name": "get_app_state", "arguments": {"app": gtk_menu.pid}},
    ]
    report = await run_ts_script(TS_CALLS, stdio_config(), json.dumps(calls))
    _, opened, _, refused, own, escaped, _, tab, last = report["results"]
    assert _popup(_ok(opened)), opened["text"]
    assert refused["isError"], refused
    d = refused["diagnostic"]
    assert d["code"] == "unsupported_action" and d["actionOutcome"] == "not_dispatched", d
    assert d["details"] == {"reason": "other_menu_open", "menuPid": gtk_menu.pid}, d
    assert _popup(_ok(own)), own["text"]  # the menu is still open, nothing was chosen
    assert _popup(_ok(escaped)) == "", escaped["text"]  # its own app's keys reach it
    _ok(tab)
    assert 'label "Said: nothing"' in _ok(last), last["text"]


async def test_keys_are_refused_while_a_qt_menu_holds_them(gtk_below: App, qt_menu: App) -> None:
    """Qt 6.4 gives its menus the window type "normal", not a menu type: a mapped popup on
    screen is taken as a menu unless it says it is a tooltip, notification or drag icon."""
    calls = [
        {"name": "get_app_state", "arguments": {"app": qt_menu.pid}},
        {
            "name": "click",
            "arguments": {"state_id": "$state", "x": 200, "y": 200, "button": "right"},
        },
        {"name": "get_app_state", "arguments": {"app": gtk_below.pid}},
        {"name": "press_key", "arguments": {"state_id": "$state", "keys": ["Down", "Return"]}},
        {"name": "get_app_state", "arguments": {"app": qt_menu.pid}},
        {"name": "press_key", "arguments": {"state_id": "$state", "keys": ["Escape"]}},
    ]
    report = await run_ts_script(TS_CALLS, stdio_config(), json.dumps(calls))
    _, opened, _, refused, own, escaped = report["results"]
    assert _popup(_ok(opened)), opened["text"]
    d = refused["diagnostic"]
    assert d["details"] == {"reason": "other_menu_open", "menuPid": qt_menu.pid}, d
    assert _popup(_ok(own)) and 'label "chosen: none"' in own["text"], own["text"]
    assert _popup(_ok(escaped)) == "", escaped["text"]


gtk_autoclose = app_fixture(
    "gtk_autoclose",
    ["/usr/bin/python3", str(GTK3_MENU_APP), "autoclose"],
    scope="function",
    desktop="dp_desktop",
)


async def test_an_item_of_a_menu_that_closed_since_the_state_is_refused(
    gtk_autoclose: App,
) -> None:
    """The app closes its menu by itself after 0.8 s; the agent acts on the state that
    showed it open: refused, with what happened, and the item does not run."""
    calls = [
        {"name": "get_app_state", "arguments": {"app": gtk_autoclose.pid}},
        _right_click('label "Notes"'),
        {"name": "$sleep", "arguments": {"ms": 2000}},
        _click('menuItem "Shout"'),
        {"name": "get_app_state", "arguments": {"app": gtk_autoclose.pid}},
    ]
    report = await run_ts_script(TS_CALLS, stdio_config(), json.dumps(calls))
    first, opened, stale, after = report["results"]
    _ok(first)
    assert _popup(_ok(opened)), opened["text"]
    assert stale["isError"], stale
    assert stale["diagnostic"]["code"] == "stale_tree", stale["diagnostic"]
    assert "menu or popup that element was in has closed" in stale["text"], stale["text"]
    assert 'label "Said: nothing"' in _ok(after) and _popup(after["text"]) == "", after


@pytest.mark.chromium
async def test_chromium_page_menu_is_seen_chosen_from_and_closed(menu_page: App) -> None:
    calls = [
        {"name": "get_app_state", "arguments": {"app": menu_page.pid}},
        _right_click('text "loads 1"'),
        _click('menuItem "Reload'),
        {"name": "get_app_state", "arguments": {"app": menu_page.pid}},
        _right_click('text "loads 2"'),
        {"name": "press_key", "arguments": {"state_id": "$state", "keys": ["Escape"]}},
    ]
    report = await run_ts_script(TS_CALLS, stdio_config(), json.dumps(calls))
    first, opened, reload, after, again, escaped = report["results"]
    assert _popup(_ok(first)) == "", first["text"]
    menu = _popup(_ok(opened))
    assert re.search(r'- menuItem "Reload[^"]*" \[\d+\]$', menu, re.M), menu
    assert re.search(r'- menuItem "Back[^"]*" \[disabled\]', menu), menu
    _ok(reload)
    assert 'text "loads 2"' in _ok(after) and _popup(after["text"]) == "", after["text"]
    assert _popup(_ok(again)), again["text"]
    assert _popup(_ok(escaped)) == "", escaped["text"]
