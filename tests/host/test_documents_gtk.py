"""Text views as the tree shows them, on real apps: gnome-text-editor 43 (GTK 4.8) and mousepad
(GTK 3). GTK 4.8 keeps its hidden infobars and pages in the tree, VISIBLE and never SHOWING;
the text view holds the file; a "•" label says the file has unsaved changes."""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from Xlib import X, display

from deskpilot.desktop import DesktopState
from deskpilot.desktop import apps as dapps
from deskpilot.host.atspi import (
    AtspiClient,
    ElementRef,
    FrameInfo,
    OpKind,
    SemanticOp,
    TreeSnapshot,
)

pytestmark = pytest.mark.desktop

TEXT = "first line of todo\nsecond line\nthird line\n"
#: what gnome-text-editor keeps in its tree while none of it is on screen
HIDDEN = (
    "Could Not Open File",
    "You do not have permission",
    "Document Restored",
    "Discard",
    "Start or Open a Document",
)


def _focus_window_of(pid: int) -> None:
    """No window manager runs: give the app's mapped top-level the input focus directly."""
    d = display.Display(os.environ["DISPLAY"])
    try:
        atom = d.intern_atom("_NET_WM_PID")
        for w in d.screen().root.query_tree().children:
            prop = w.get_full_property(atom, X.AnyPropertyType)
            mine = prop and prop.value and int(prop.value[0]) == pid
            if mine and w.get_attributes().map_state == X.IsViewable:
                w.set_input_focus(X.RevertToParent, X.CurrentTime)
        d.sync()
    finally:
        d.close()


async def _frame(client: AtspiClient, pid: int) -> FrameInfo:
    deadline = time.monotonic() + 30
    while True:
        frames = [f for f in await client.frames(pid=pid) if "showing" in f.states]
        if frames:
            return frames[0]
        assert time.monotonic() < deadline, "no frame"
        await asyncio.sleep(0.2)


async def _until(
    client: AtspiClient, frame: FrameInfo, ok: Callable[[TreeSnapshot], bool], timeout: float = 20
) -> TreeSnapshot:
    deadline = time.monotonic() + timeout
    while True:
        snap = await client.snapshot(frame.ref)
        if ok(snap):
            return snap
        if time.monotonic() > deadline:
            raise AssertionError(snap.text)
        await asyncio.sleep(0.2)


def _view(snap: TreeSnapshot) -> ElementRef:
    views = [e for e in snap.elements.values() if e.role == "textField"]
    assert len(views) == 1, snap.text
    return views[0]


def _line(snap: TreeSnapshot, e: ElementRef) -> str:
    return snap.text.splitlines()[e.id - 1].strip()


@pytest.fixture(scope="module")
def todo(desktop: DesktopState, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """gnome-text-editor on a file of known text (its own data dir: no restored drafts)."""
    if not shutil.which("gnome-text-editor"):
        pytest.skip("gnome-text-editor is not installed")
    root = tmp_path_factory.mktemp("gte")
    path = root / "todo.txt"
    path.write_text(TEXT)
    env = {**os.environ, "XDG_DATA_HOME": str(root / "data")}
    app = dapps.launch(["gnome-text-editor", "--standalone", str(path)], env)
    try:
        dapps.wait_accessible(pid=app.pid, timeout=60)
        path.with_suffix(".pid").write_text(str(app.pid))
        yield path
    finally:
        app.stop()


def _pid(todo: Path) -> int:
    return int(todo.with_suffix(".pid").read_text())


async def test_gtk4_hidden_infobars_and_pages_are_left_out_and_the_view_holds_the_file(
    todo: Path,
) -> None:
    pid = _pid(todo)
    _focus_window_of(pid)
    async with await AtspiClient.connect() as client:
        frame = await _frame(client, pid)
        snap = await _until(client, frame, lambda s: "first line of todo" in s.text)
        for gone in HIDDEN:
            assert gone not in snap.text, snap.text
        view = _view(snap)
        # (GtkSourceView keeps the file's last newline out of its buffer)
        assert _line(snap, view).startswith(
            '- textField = "first line of todo\\nsecond line\\nthird line" '
        )
        # the focused view says where the caret is (GTK puts it at the start of the file)
        focused = await _until(client, frame, lambda s: "[focused]" in _line(s, _view(s)))
        assert "[caret 0]" in _line(focused, _view(focused))
        assert snap.title == frame.title  # the header's title, read with the tree


async def test_gtk4_selection_and_unsaved_marker_are_in_the_tree(todo: Path) -> None:
    pid = _pid(todo)
    async with await AtspiClient.connect() as client:
        frame = await _frame(client, pid)
        snap = await _until(client, frame, lambda s: "first line of todo" in s.text)
        assert 'label "•"' not in snap.text  # saved as opened
        view = _view(snap)
        await client.perform(view, SemanticOp(OpKind.SELECT_TEXT, start=6, end=10))
        picked = await _until(client, frame, lambda s: "[selection" in _line(s, _view(s)))
        assert '[selection 6-10: "line"]' in _line(picked, _view(picked))
        # a second selection moves it (GTK 4.8's SetSelection alone would clear it)
        await client.perform(view, SemanticOp(OpKind.SELECT_TEXT, start=11, end=17))
        moved = await _until(client, frame, lambda s: "[selection 11-" in _line(s, _view(s)))
        assert '[selection 11-17: "of tod"]' in _line(moved, _view(moved))
        # a change the file does not have yet: the title bar's "•", in the first read once
        # the app went quiet (GTK 4.8 adds the label with no event of its own: a patch of
        # the kept tree missed it, tree_cache.py)
        await client.perform(view, SemanticOp(OpKind.INSERT_TEXT, text="new "), settle=True)
        edited = await client.snapshot(frame.ref)
        assert edited.cache_state == "full", edited.cache_state
        assert 'label "•"' in edited.text, edited.text
        assert "new " in _line(edited, _view(edited))
        assert 'label "todo.txt"' in edited.text


@pytest.fixture(scope="module")
def note(desktop: DesktopState, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("mousepad") / "note.txt"
    path.write_text(TEXT)
    app = dapps.launch(["mousepad", str(path)])
    try:
        dapps.wait_accessible(pid=app.pid, timeout=60)
        path.with_suffix(".pid").write_text(str(app.pid))
        yield path
    finally:
        app.stop()


async def test_gtk3_view_caret_and_selection(note: Path) -> None:
    pid = _pid(note)
    _focus_window_of(pid)
    async with await AtspiClient.connect() as client:
        frame = await _frame(client, pid)
        snap = await _until(client, frame, lambda s: "second line" in s.text)
        view = _view(snap)
        await client.perform(view, SemanticOp(OpKind.SELECT_TEXT, start=19, end=25))
        picked = await _until(client, frame, lambda s: "[selection" in _line(s, _view(s)))
        line = _line(picked, _view(picked))
        assert '[selection 19-25: "second"]' in line, line
        if "[focused]" in line:  # GTK 3 moves the caret to the selection's end
            assert "[caret 25]" in line
