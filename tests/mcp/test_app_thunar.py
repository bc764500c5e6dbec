"""Thunar 4.18 through the official TypeScript SDK: the app matrix's file manager row.

A folder with six known files. Read: in the default icon view (an ``ExoIconView``, whose
accessible has no children: its files are read from the screenshot and listed under it,
kernel/opaque_text.py) and in the detailed list view (a GTK tree view, its cells of several
renderers one cell each: atspi/cells.py), every file by name, once; the side pane's places
once each, by name. Act, by element ids only: a single click on a file selects it (the
status bar names it, the folder is not opened), a ctrl-click adds a second, both are cut,
a new folder is made with Thunar's own dialog (Ctrl+Shift+N), opened with a double click,
and the files pasted into it — read back from the file system. Thunar starts once for the
module.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from real_clients import TS_CALLS, run_ts_script, stdio_config

from deskpilot.desktop import apps
from deskpilot.vision import ocr_ready

pytestmark = pytest.mark.desktop

FILES = {
    "alpha.txt": "alpha\n",
    "beta.txt": "beta two\n",
    "delta.md": "# delta\n",
    "epsilon.csv": "e,p,s\n",
    "gamma.txt": "gamma 3\n",
    "zeta.log": "zeta\n",
}
PLACES = ("Computer", "Trash", "File System")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("thunar") / "files"
    root.mkdir()
    for name, text in FILES.items():
        (root / name).write_text(text)
    return root


@pytest.fixture(scope="module")
def thunar(dp_desktop: object, folder: Path) -> Iterator[apps.App]:
    if shutil.which("thunar") is None:
        pytest.skip("thunar is not installed")
    if not ocr_ready():
        pytest.skip("no OCR engine (tesserocr, tesseract-ocr-eng): its icon view is pixels")
    app = apps.launch_accessible(["thunar", str(folder)])
    try:
        yield app
    finally:
        app.stop()


def _ok(result: dict[str, Any]) -> str:
    assert not result["isError"], result["text"]
    text: str = result["text"]
    return text


def _click(label: str, **more: Any) -> dict[str, Any]:
    args = {"state_id": "$state", "element_id": f"$element:{label}", **more}
    return {"name": "click", "arguments": args}


def _keys(*keys: str) -> dict[str, Any]:
    return {"name": "press_key", "arguments": {"state_id": "$state", "keys": list(keys)}}


STATE = {"name": "get_app_state", "arguments": {"app": "thunar"}}


def _until(pattern: str) -> dict[str, Any]:
    """get_app_state until the text matches (a folder's view is filled a moment after it
    opened; tests/clients/ts_calls.mjs)."""
    return {"name": "$until", "arguments": {"app": "thunar", "pattern": pattern}}


async def _run(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    report = await run_ts_script(TS_CALLS, stdio_config(), json.dumps(calls))
    results: list[dict[str, Any]] = report["results"]
    return results


def _section(text: str, heading: str) -> str:
    """The lines of the tree below the line holding ``heading``, while they are deeper."""
    lines = text.splitlines()
    at = next(i for i, ln in enumerate(lines) if heading in ln)
    depth = len(lines[at]) - len(lines[at].lstrip())
    out = []
    for ln in lines[at + 1 :]:
        if len(ln) - len(ln.lstrip()) <= depth:
            break
        out.append(ln)
    return "\n".join(out)


def _status(text: str) -> str:
    m = re.search(r'^\s*- statusBar "(.*)" \[\d+\]$', text, re.M)
    assert m, text
    return m.group(1).replace('\\"', '"')


def _exists(path: Path, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)


ICONS_SHOWN = r'text "zeta\.log" \[ocr\]'


async def test_the_icon_view_lists_the_files_by_name_and_the_places_once(
    thunar: apps.App,
) -> None:
    # View → Icon View: Thunar keeps the last view in xfconf, shared by every desktop of
    # this user (a fresh one starts in the icon view)
    *_, result = await _run([_until("statusBar"), _keys("ctrl+1"), _until(ICONS_SHOWN)])
    text = _ok(result)
    view = _section(text, 'group "Icon view"')
    for name in FILES:
        line = rf'^\s+- text "{re.escape(name)}" \[ocr\] \[\d+\]$'
        assert len(re.findall(line, view, re.M)) == 1, view
    assert re.search(r"^ocr=", text, re.M), text  # the header says where they come from
    side = _section(text, "  - table [")
    for place in PLACES:
        assert len(re.findall(rf'- cell "{place}" \[\d+\]$', side, re.M)) == 1, side
    assert not re.search(r"- cell \[", side), side  # no nameless cells
    assert "Expand or contract" not in side, side  # no cell there expands


async def test_the_details_view_lists_the_files_by_name(thunar: apps.App) -> None:
    shown = r'- cell "zeta\.log"( \[\w+\])* \[\d+\]$'
    results = await _run(
        [
            STATE,
            _keys("ctrl+2"),  # View → Detailed List
            _until(shown),
            # a click selects a row, a ctrl-click adds one: both are in the selection
            _click('cell "delta.md"'),
            _click('cell "gamma.txt"', modifiers=["ctrl"]),
            STATE,
            _keys("ctrl+1"),  # back to the icon view
        ]
    )
    text = _ok(results[2])
    view = _section(text, 'group "Details view"')
    for name in FILES:
        line = rf'^\s+- cell "{re.escape(name)}"( \[\w+\])* \[\d+\]$'
        assert len(re.findall(line, view, re.M)) == 1, view
    assert "[ocr]" not in view  # a tree view exposes its rows: nothing is read by OCR
    assert not re.search(r"- cell \[", view), view  # an icon and a name: one cell, named
    assert _status(_ok(results[3])).startswith('"delta.md"'), results[3]["text"]
    assert _status(_ok(results[4])).startswith("Selection: 2 files"), results[4]["text"]
    _ok(results[6])


async def test_two_files_are_selected_and_moved_into_a_new_folder_by_element_ids(
    thunar: apps.App, folder: Path
) -> None:
    results = await _run(
        [
            _until(ICONS_SHOWN),
            _click('text "alpha.txt"'),
            _click('text "beta.txt"', modifiers=["ctrl"]),
            _keys("ctrl+x"),
            _keys("ctrl+shift+n"),  # File → Create Folder…: its dialog
            STATE,
            {
                "name": "set_value",
                "arguments": {
                    "state_id": "$state",
                    "element_id": "$element:textField",
                    "value": "moved",
                },
            },
            STATE,
            _click('button "Create"'),
            _until(r'text "moved" (\[highlighted\] )?\[ocr\]'),
            _click('text "moved"', count=2),
            _keys("ctrl+v"),
            # Thunar's view of the folder it pasted into can stay "0 items" (its file monitor
            # silent on this desktop): reloaded, as a person would
            STATE,
            _keys("F5"),
            _until(r'text "beta\.txt" (\[highlighted\] )?\[ocr\]'),
        ]
    )
    (_, single, added, cut, asked, dialog, named, filled, create, made, opened, pasted) = results[
        :12
    ]
    # a single click selects the file; it does not open it
    one = _ok(single)
    assert _status(one).startswith('"alpha.txt"'), one
    assert re.search(r'^Window=\(title="files - Thunar"', one, re.M), one
    assert re.search(r'- text "alpha\.txt" \[highlighted\] \[ocr\]', one), one
    assert re.search(r'- text "beta\.txt" \[ocr\]', one), one
    two = _ok(added)
    assert _status(two).startswith("Selection: 2 files"), two
    assert re.search(r'- text "beta\.txt" \[highlighted\] \[ocr\]', two), two
    _ok(cut)
    assert "Create New Folder" in _ok(asked), asked["text"]
    assert re.search(r'^- dialog "Create New Folder"', _ok(dialog), re.M), dialog["text"]
    _ok(named)
    assert re.search(r'- textField = "moved"', _ok(filled)), filled["text"]
    _ok(create)
    assert re.search(r'- text "moved" (\[highlighted\] )?\[ocr\]', _ok(made)), made["text"]
    assert re.search(r'^Window=\(title="moved - Thunar"', _ok(opened), re.M), opened["text"]
    _ok(pasted)
    await asyncio.to_thread(_exists, folder / "moved" / "beta.txt")
    assert sorted(p.name for p in (folder / "moved").iterdir()) == ["alpha.txt", "beta.txt"]
    assert (folder / "moved" / "alpha.txt").read_text() == FILES["alpha.txt"]
    assert not (folder / "alpha.txt").exists() and not (folder / "beta.txt").exists()
    assert (folder / "gamma.txt").exists()
    # and the folder's view shows them
    view = _section(_ok(results[-1]), 'group "Icon view"')
    assert "alpha.txt" in view and "beta.txt" in view and "gamma.txt" not in view, view
