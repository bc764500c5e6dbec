"""GIMP 2.10 (GTK 2) through the official TypeScript SDK: the app matrix's GTK 2 row.

GIMP runs as ``gimp-2.10``, and GTK 2 has no accessibility bridge of its own: the private
desktop and every app deskpilot starts get ``GTK_MODULES=gail:atk-bridge``
(desktop/a11y_env.py), so it has a tree. Read: its menu bar, a closed menu's items left out,
an open menu's (and submenu's) items in (gail says none is showing: atspi/gtk2_menus.py).
Act: Image → Transform → Flip Horizontally by element ids; the image is modified (its title
gets GIMP's "*"), the menus close, and Edit's first item is now "Undo Flip image" — GIMP's own
record of what was done. Reading it never makes GIMP open a "GIMP Message" dialog (gail
answers the name of one of GIMP's tooltips with a message). Without the bridge the same
window is read by OCR, its menus as sections of their own: tests/mcp/test_app_gimp_ocr.py.
GIMP starts once for the module.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from real_clients import TS_CALLS, run_ts_script, stdio_config

from deskpilot.desktop.apps import App
from gimp_kit import launch_gimp, picture, titles

pytestmark = pytest.mark.desktop


@pytest.fixture(scope="module")
def gimp(dp_desktop: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    app = launch_gimp(picture(tmp_path_factory.mktemp("gimp")), bridge=True)
    try:
        yield app
    finally:
        app.stop()


def _ok(result: dict[str, Any]) -> str:
    assert not result["isError"], (result.get("text"), result.get("diagnostic"))
    text: str = result["text"]
    return text


def _click(label: str) -> dict[str, Any]:
    return {
        "name": "click",
        "arguments": {"state_id": "$state", "element_id": f"$element:{label}"},
    }


def _title(text: str) -> str:
    m = re.search(r'^Window=\(title="(.*)", id=', text, re.M)
    assert m, text
    return m.group(1)


def _items(text: str, menu: str) -> list[str]:
    """The lines directly below ``- menu "<menu>"`` (its shown items), by their indent."""
    lines = text.splitlines()
    at = next(i for i, ln in enumerate(lines) if re.match(rf'^(\s*)- menu "{menu}" \[', ln))
    indent = len(lines[at]) - len(lines[at].lstrip()) + 2
    out: list[str] = []
    for ln in lines[at + 1 :]:
        depth = len(ln) - len(ln.lstrip())
        if depth < indent:
            break
        if depth == indent:
            out.append(ln.strip().removeprefix("- "))
    return out


async def test_gimp_menus_are_read_and_an_item_is_chosen_by_id(gimp: App) -> None:
    calls = [
        {"name": "get_app_state", "arguments": {"app": "gimp"}},
        _click('menu "Image"'),
        _click('menu "Transform"'),
        _click('menuItem "Flip Horizontally"'),
        _click('menu "Edit"'),
        {"name": "press_key", "arguments": {"state_id": "$state", "keys": ["Escape"]}},
    ]
    report = await run_ts_script(TS_CALLS, stdio_config(), json.dumps(calls))
    first, image, transform, flipped, edit, closed = report["results"]
    text = _ok(first)
    assert f"pid={gimp.pid})" in text, text  # "gimp" found it (its executable: gimp-2.10)
    assert _title(text).startswith("[pic]"), text
    assert re.search(r"^  - menuBar \[\d+\]$", text, re.M), text
    for menu in ("File", "Edit", "Image", "Filters"):
        assert f'    - menu "{menu}" [' in text, text
        assert _items(text, menu) == [], text  # closed: their items are not on screen
    # Image opened: its items, its submenus closed
    shown = _items(_ok(image), "Image")
    assert any(i.startswith('menuItem "Canvas Size..." [') for i in shown), shown
    assert any(i.startswith('menu "Transform" [') for i in shown), shown
    assert _items(_ok(image), "Transform") == []
    assert 'menuItem "Flip Horizontally"' not in image["text"]
    # Transform opened inside it
    flips = _items(_ok(transform), "Transform")
    assert flips[0].startswith('menuItem "Flip Horizontally" ['), flips
    assert flips[1].startswith('menuItem "Flip Vertically" ['), flips
    # chosen: the image is modified and the menus closed
    after = _ok(flipped)
    assert _title(after).startswith("*[pic]"), _title(after)
    assert _items(after, "Image") == [] and "Flip Horizontally" not in after, after
    # GIMP's own account of what was done
    undo = _items(_ok(edit), "Edit")
    assert undo and undo[0].startswith('menuItem "Undo Flip image" ['), undo
    assert _items(_ok(closed), "Edit") == []
    # reading it opened nothing: GIMP shows a GLib message as a dialog, and gail sends one
    # when asked the name of a tooltip of GIMP's (atspi/frames.py leaves them unread)
    assert [t for t in titles(gimp.pid) if t == "GIMP Message"] == []
