"""Popups over a window through the real host (host/popups.py, atspi/popup_sections.py):
what an agent must not be able to do with a menu it saw, and whose menu it is.

* a menu item seen open is not acted on after the menu closed (the app popped it down):
  ``stale_tree``, and the item does not run — before, GTK ran it anyway, Qt clicked what lay
  under it and Chromium crashed;
* a right click on an element of a covered window is refused (``covered_point``): it would
  open the menu of the window on top, and keys would follow it there;
* a menu one window opened is not shown with another window of the same app that it also
  lies over (``WM_TRANSIENT_FOR`` names its window).

The menus themselves, as agents meet them, are tested through the TypeScript SDK in
tests/mcp/test_mcp_popups.py.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from host_harness import (
    HostProcess,
    act,
    launch_accessible,
    line_id,
    observe_until,
    wait_for,
)

from deskpilot.desktop import apps
from desktop_kit import GTK3_NOOP_ARGV, chromium_page, needs_chromium

pytestmark = pytest.mark.desktop

MENU_APP = ["/usr/bin/python3", str(Path(__file__).with_name("context_menu_gtk_app.py"))]
PAGE = "<!doctype html><title>Menu page</title><p>Page words</p>"


@pytest.fixture
def menu_app(desktop: object) -> Iterator[apps.App]:
    app = launch_accessible(MENU_APP)
    try:
        yield app
    finally:
        app.stop()


def right_click(host: HostProcess, obs: dict[str, Any], element: int, session: str) -> Any:
    response, _ = host.request(
        {
            "type": "execute_action",
            "sessionId": session,
            "frameId": obs["frameId"],
            "treeVersion": obs["treeVersion"],
            "action": {"kind": "click", "elementId": element, "button": "right"},
            "observeAfter": True,
        }
    )
    return response


def test_an_item_of_a_menu_that_closed_since_is_refused_and_not_run(
    host: HostProcess, menu_app: apps.App
) -> None:
    target = {"pid": menu_app.pid}
    obs = observe_until(host, target, r'label "Notes"', "pop-stale")
    opened = right_click(host, obs, line_id(obs["tree"], r'label "Notes"'), "pop-stale")
    assert opened["type"] == "action_result", opened
    menu = opened["observation"]
    assert "- popup [" in menu["tree"], menu["tree"]
    os.kill(menu_app.pid, signal.SIGUSR1)  # the app pops its menu down
    observe_until(host, target, r"^- window", "pop-watch")  # another session: no rebind
    shout = line_id(menu["tree"], r'menuItem "Shout"')
    refused = act(host, menu, {"kind": "click", "elementId": shout}, "pop-stale")
    assert refused["type"] == "error" and refused["code"] == "stale_tree", refused
    assert "menu or popup it was in has closed" in refused["message"], refused
    after = observe_until(host, target, r'label "Said: ', "pop-after")
    assert 'label "Said: nothing"' in after["tree"] and "- popup [" not in after["tree"]


@needs_chromium
def test_an_item_of_a_closed_chromium_menu_is_refused_and_chromium_lives(desktop: object) -> None:
    """Chromium's items of a closed menu still say they are showing: the host asks the X
    server whether the menu is still mapped. Before, the click crashed Chromium."""
    with chromium_page(PAGE) as page, HostProcess() as host:
        target = {"pid": page.pid}
        obs = observe_until(host, target, r'text "Page words"', "c-menu")
        opened = right_click(host, obs, line_id(obs["tree"], r'text "Page words"'), "c-menu")
        menu = opened["observation"]
        reload = line_id(menu["tree"], r'menuItem "Reload')
        closer = observe_until(host, target, r"- popup \[", "c-close")
        assert act(host, closer, {"kind": "press_key", "keys": ["Escape"]}, "c-close")
        observe_until(host, target, r'text "Page words"(?![\s\S]*- popup)', "c-close")
        refused = act(host, menu, {"kind": "click", "elementId": reload}, "c-menu")
        assert refused["type"] == "error" and refused["code"] == "stale_tree", refused
        assert "menu or popup it was in has closed" in refused["message"], refused
        assert page.proc.poll() is None  # alive
        assert "Page words" in observe_until(host, target, r"Page words", "c-after")["tree"]


def test_a_right_click_on_a_covered_window_is_refused(
    host: HostProcess, menu_app: apps.App
) -> None:
    target = {"pid": menu_app.pid}
    obs = observe_until(host, target, r'label "Notes"', "pop-covered")
    cover = launch_accessible(GTK3_NOOP_ARGV)  # maps at 0,0 on top (no window manager)
    try:
        observe_until(host, {"pid": cover.pid}, r'button "Count"', "pop-cover")
        refused = right_click(host, obs, line_id(obs["tree"], r'label "Notes"'), "pop-covered")
        assert refused["type"] == "error", refused
        assert refused["code"] == "unsupported_action", refused
        assert refused["details"]["reason"] == "covered_point", refused
        cover_tree = observe_until(host, {"pid": cover.pid}, r"Count", "pop-cover")["tree"]
        assert "- popup [" not in cover_tree, cover_tree  # no menu opened on the top window
    finally:
        cover.stop()


def test_a_menu_is_shown_with_the_window_that_opened_it_only(desktop: object) -> None:
    app = launch_accessible([*MENU_APP, "two"])
    try:
        with HostProcess() as host:

            def both() -> dict[str, str] | None:
                listed = host.call({"type": "list_windows"})["windows"]
                ids = {w["title"]: w["windowId"] for w in listed if w["app"]["pid"] == app.pid}
                return ids if {"Context menus", "Other window"} <= ids.keys() else None

            ids = wait_for(both)
            first = {"windowId": ids["Context menus"]}
            obs = observe_until(host, first, r'label "Notes"', "pop-two")
            opened = right_click(host, obs, line_id(obs["tree"], r'label "Notes"'), "pop-two")
            assert "- popup [" in opened["observation"]["tree"], opened
            # where it lies, in the window's coordinates: a window with no tree reads it by
            # OCR as a section of its own (kernel/visual_tree.py)
            (region,) = opened["observation"]["popupRegions"]
            bounds = opened["observation"]["window"]["bounds"]
            assert 0 <= region["x"] < bounds["width"] and 0 <= region["y"] < bounds["height"]
            assert region["width"] > 50 and region["height"] > 20, region
            # the menu (opened at x≈180, ~150 px wide) lies over the other window (x=250) too
            other = {"windowId": ids["Other window"]}
            seen = observe_until(host, other, r'label "Second pane"', "pop-other")
            assert "- popup [" not in seen["tree"], seen["tree"]
            assert seen["popupRegions"] == []  # not this window's menu
            # the menu holds keys and clicks: meant for the other window, they are refused
            # (they would choose in the menu, or only close it)
            for action in (
                {"kind": "press_key", "keys": ["Down", "Return"]},
                {"kind": "click", "point": {"x": 0.8, "y": 0.8}},
            ):
                seen = observe_until(host, other, r'label "Second pane"', "pop-other")
                refused = act(host, seen, action, "pop-other")
                assert refused["type"] == "error", refused
                assert refused["details"] == {"reason": "other_menu_open", "menuPid": app.pid}
            still = observe_until(host, first, r'label "Said: ', "pop-two")
            assert "- popup [" in still["tree"] and 'label "Said: nothing"' in still["tree"]
    finally:
        app.stop()
