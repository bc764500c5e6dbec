"""Values and names the tree shows for form controls: Chromium's select, date and number
inputs; GTK3 form fields named from their labels (zenity --forms, mousepad's Find and
Replace); the items of an open GTK4 popover (gnome-calculator's mode menu)."""

from __future__ import annotations

import asyncio
import http.server
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest
from gtk_kit import frame_titled
from Xlib import XK, X, display
from Xlib.ext import xtest

from deskpilot.desktop import DesktopState
from deskpilot.desktop import apps as dapps
from deskpilot.host.atspi import (
    AtspiClient,
    ElementRef,
    FrameInfo,
    OpKind,
    SemanticOp,
    TreeSnapshot,
    collect,
)
from deskpilot.host.atspi.collect import RawNode, is_hidden
from deskpilot.host.atspi.vocab import ROLE_NUMBER, State, bit
from desktop_kit import needs_chromium

PAGE = """<!doctype html><html><head><title>Values page</title></head><body>
<label for="color">Color</label><select id="color"><option value="">--</option>
<option>Red</option><option>Green</option><option>Blue</option></select>
<label for="dob">Birthday</label><input id="dob" type="date" value="2024-03-15">
<label for="empty">Empty date</label><input id="empty" type="date">
<label for="qty">Quantity</label><input id="qty" type="number" value="7">
<label for="vol">Volume</label><input id="vol" type="range" min="0" max="10" value="4">
<label for="code">Code</label><input id="code" readonly value="RO-1">
<label for="off">Off</label><input id="off" disabled value="OFF-1">
<label for="notes">Kept notes</label><textarea id="notes" readonly>kept</textarea>
<p id="out">none</p>
<script>color.onchange = () => out.textContent = 'picked ' + color.value;</script>
</body></html>
"""


# ---------------------------------------------------------------------------- helpers


def _keys(*names: str) -> None:
    """Press a chord (all down, then all up) with XTEST on the private desktop."""
    d = display.Display(os.environ["DISPLAY"])
    try:
        codes = [d.keysym_to_keycode(XK.string_to_keysym(n)) for n in names]
        for c in codes:
            xtest.fake_input(d, X.KeyPress, c)
        for c in reversed(codes):
            xtest.fake_input(d, X.KeyRelease, c)
        d.sync()
    finally:
        d.close()


def _click(x: int, y: int) -> None:
    d = display.Display(os.environ["DISPLAY"])
    try:
        xtest.fake_input(d, X.MotionNotify, x=x, y=y)
        xtest.fake_input(d, X.ButtonPress, 1)
        xtest.fake_input(d, X.ButtonRelease, 1)
        d.sync()
    finally:
        d.close()


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


def _find(snap: TreeSnapshot, role: str, name: str) -> ElementRef:
    hits = [e for e in snap.elements.values() if e.role == role and e.name == name]
    assert hits, f"no {role} {name!r} in:\n{snap.text}"
    return hits[0]


def _line(snap: TreeSnapshot, e: ElementRef) -> str:
    return snap.text.splitlines()[e.id - 1].strip()


async def _launch(argv: list[str]) -> dapps.App:
    app = dapps.launch(argv, capture_stdout=True)
    await asyncio.to_thread(dapps.wait_accessible, pid=app.pid, timeout=60)
    return app


# ---------------------------------------------------------------------------- Chromium


@pytest.fixture(scope="module")
def values_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root: Path = tmp_path_factory.mktemp("values")
    (root / "index.html").write_text(PAGE)

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), partial(Handler, directory=str(root))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/index.html"
    server.shutdown()
    server.server_close()


@pytest.mark.desktop
@pytest.mark.chromium
@needs_chromium
async def test_chromium_select_date_and_number_values(
    desktop: DesktopState, values_url: str
) -> None:
    app = dapps.launch_chromium(values_url)
    try:
        await asyncio.to_thread(dapps.wait_accessible, pid=app.pid, timeout=60)
        async with await AtspiClient.connect() as client:
            frame = await frame_titled(client, app.pid, "Values page")
            snap = await _until(client, frame, lambda s: "Volume" in s.text)
            combo = _find(snap, "comboBox", "Color")
            assert _line(snap, combo).startswith('- comboBox "Color" = "--"')
            month = _find(snap, "spinButton", "Month Birthday")
            assert _line(snap, month).startswith('- spinButton "Month Birthday" = "3"')
            assert '- spinButton "Day Birthday" = "15"' in snap.text
            assert '- spinButton "Year Birthday" = "2024"' in snap.text
            # an unset date segment reports 0 below its minimum of 1: shown empty
            assert '- spinButton "Month Empty date" = ""' in snap.text
            assert '- spinButton "Quantity" = "7"' in snap.text
            assert '- slider "Volume" = "4"' in snap.text
            # Chromium leaves a read-only field neither enabled nor sensitive: read only (a
            # click on it still does what the page says), not disabled; a disabled one is
            assert '- textField "Code" = "RO-1" [readonly]' in snap.text, snap.text
            assert '- textField "Kept notes" = "kept" [readonly]' in snap.text, snap.text
            assert '- textField "Off" = "OFF-1" [disabled]' in snap.text, snap.text
            # choose "Green" the way a user would: focus the select, type its first letter
            await client.perform(combo, SemanticOp(OpKind.GRAB_FOCUS))
            _keys("g")
            after = await _until(client, frame, lambda s: "picked Green" in s.text)
            assert _line(after, _find(after, "comboBox", "Color")).startswith(
                '- comboBox "Color" = "Green"'
            )
            assert after.tree_version != snap.tree_version
        # reading values must not take the browser down (Properties.GetAll on Value does)
        assert app.proc.poll() is None
    finally:
        app.stop()


# ---------------------------------------------------------------------------- GTK3 labels


@pytest.mark.desktop
async def test_zenity_form_fields_are_named_after_their_labels(desktop: DesktopState) -> None:
    app = await _launch(
        ["zenity", "--forms", "--title", "Sign up", "--text", "Details",
         "--add-entry", "Name", "--add-entry", "Email", "--add-password", "Pass",
         "--add-combo", "Pet", "--combo-values", "Cat|Dog|Fish"]
    )  # fmt: skip
    try:
        async with await AtspiClient.connect() as client:
            frame = await frame_titled(client, app.pid, "Sign up")
            snap = await _until(client, frame, lambda s: "OK" in s.text)
            assert _line(snap, _find(snap, "textField", "Name")).startswith(
                '- textField "Name" = ""'
            )
            email = _find(snap, "textField", "Email")
            assert _find(snap, "passwordField", "Pass").secure
            assert _find(snap, "comboBox", "Pet")
            # zenity prints the fields in order, "|"-separated: the named box is the right one
            await client.perform(email, SemanticOp(OpKind.SET_TEXT, text="ada@example.org"))
            again = await client.snapshot(frame.ref)
            assert '- textField "Email" = "ada@example.org"' in again.text
            await client.perform(_find(again, "button", "OK"), SemanticOp.invoke())
        out, _ = await asyncio.to_thread(app.proc.communicate, timeout=10)
        assert out.decode().split("|")[:2] == ["", "ada@example.org"]
    finally:
        app.stop()


@pytest.mark.desktop
async def test_mousepad_find_dialog_uses_labelled_by(desktop: DesktopState) -> None:
    if not shutil.which("mousepad"):
        pytest.skip("mousepad is not installed")
    app = await _launch(["mousepad"])
    try:
        async with await AtspiClient.connect() as client:
            main = await frame_titled(client, app.pid, "Untitled")
            await _until(client, main, lambda s: "menuBar" in s.text)
            dialog = None
            for _ in range(5):  # the first key may arrive before the window takes focus
                _focus_window_of(app.pid)
                _keys("Control_L", "r")
                try:
                    dialog = await frame_titled(client, app.pid, "Find and Replace", timeout=4)
                    break
                except AssertionError:
                    continue
            assert dialog is not None, "the Find and Replace dialog did not open"
            snap = await _until(client, dialog, lambda s: "Search for:" in s.text)
            # the combo boxes carry LABELLED_BY; their entries get the label by position
            assert _find(snap, "comboBox", "Search for:")
            assert _find(snap, "textField", "Search for:")
            assert _find(snap, "textField", "Replace with:")
            # GTK3 names a combo box after its active item: with a label it is the value
            direction = _find(snap, "comboBox", "Search direction:")
            assert _line(snap, direction).startswith('- comboBox "Search direction:" = "Down"')
    finally:
        app.stop()


# ---------------------------------------------------------------------------- GTK4 popover


@pytest.mark.desktop
async def test_calculator_mode_popover_items_are_shown_and_invokable(
    desktop: DesktopState,
) -> None:
    app = await _launch(["gnome-calculator"])
    try:
        async with await AtspiClient.connect() as client:
            frame = await frame_titled(client, app.pid, "Calculator")
            snap = await _until(client, frame, lambda s: "Mode selection" in s.text)
            assert "radioMenuItem" not in snap.text  # closed: nothing of the popover
            mode = _find(snap, "button", "Mode selection")
            # the menu button has no action of its own: a real click opens the popover
            r = await client.extents(mode)
            assert r is not None
            _click(r.x + r.width // 2, r.y + r.height // 2)
            opened = await _until(client, frame, lambda s: 'radioMenuItem "Advanced"' in s.text)
            assert _line(opened, _find(opened, "button", "Mode selection")).endswith(
                f"[expanded] [{_find(opened, 'button', 'Mode selection').id}]"
            )
            for item in ("Basic", "Financial", "Programming", "Keyboard"):
                assert f'radioMenuItem "{item}"' in opened.text
            result = await client.perform(
                _find(opened, "radioMenuItem", "Advanced"), SemanticOp.invoke()
            )
            assert "Click" in result.detail
            # the popover closes; GTK keeps its objects cached, but they are no child any more
            closed = await _until(
                client, frame, lambda s: "radioMenuItem" not in s.text and "Advanced" in s.text
            )
            assert _find(closed, "button", "Mode selection")
            assert '- button "Advanced"' in closed.text
            # back to Basic, so the mode saved in the settings is as found
            _keys("Control_L", "Alt_L", "b")
            await _until(client, frame, lambda s: '- button "Basic"' in s.text)
    finally:
        app.stop()


# ---------------------------------------------------------------------------- pure rules


def _node(role: str, name: str = "", states: int = 0, parent: int = -1) -> RawNode:
    return RawNode(":1.1", f"/n/{name or role}", role=ROLE_NUMBER[role], name=name,
                   states=states, parent=parent)  # fmt: skip


def test_menu_items_hidden_only_under_a_showing_menu() -> None:
    vis, show = bit(State.VISIBLE), bit(State.SHOWING)
    item = _node("menu item", "Open", vis)
    # GTK3: a closed menu in a menu bar is showing, its items are not
    assert is_hidden(item, _node("menu", "File", vis | show))
    # GTK 4.8: nothing is ever showing; a visible popover's items are on screen
    assert not is_hidden(item, _node("menu", "", vis))
    assert is_hidden(_node("menu item", "x", 0), _node("menu", "", vis))


def test_cache_drops_children_the_parent_no_longer_counts() -> None:
    def item(path: str, parent: str, idx: int, cc: int, role: str) -> list[object]:
        vis = [bit(State.VISIBLE), 0]
        return [(":1.1", path), (":1.1", "/"), (":1.1", parent), idx, cc, [],
                path.rsplit("/", 1)[1], ROLE_NUMBER[role], "", vis]  # fmt: skip

    items = [
        item("/a/frame", "/", 0, 1, "frame"),
        item("/a/button", "/a/frame", 0, 1, "push button"),
        item("/a/label", "/a/button", 0, 0, "label"),
        item("/a/popover", "/a/button", 1, 1, "menu"),  # closed: the button counts 1 child
        item("/a/entry", "/a/popover", 0, 0, "menu item"),
    ]
    nodes, incomplete = collect.from_cache(items, "/a/frame", 100)
    assert [n.name for n in nodes] == ["frame", "button", "label"]
    assert incomplete == []


def _cache_item(path: str, parent: str, idx: int, cc: int, role: str, vis: int) -> list[object]:
    return [(":1.1", path), (":1.1", "/"), (":1.1", parent), idx, cc, [],
            path.rsplit("/", 1)[1], ROLE_NUMBER[role], "", [vis, 0]]  # fmt: skip


def test_cache_children_must_be_exactly_the_live_indexes() -> None:
    """Chromium adds and removes children without children-changed, so its cache can hold a
    removed child (index -1) or miss one: such a parent is read again, not trusted."""
    vis = bit(State.VISIBLE)
    frame = _cache_item("/a/frame", "/", 0, 1, "frame", vis)
    cases = {
        "a gap": [_cache_item("/a/box", "/a/frame", 0, 2, "panel", vis),
                  _cache_item("/a/b1", "/a/box", 1, 0, "push button", vis)],
        "a removed child still cached": [
            _cache_item("/a/box", "/a/frame", 0, 1, "panel", vis),
            _cache_item("/a/gone", "/a/box", -1, 0, "push button", vis),
            _cache_item("/a/b0", "/a/box", 0, 0, "push button", vis)],
        "two at one index": [
            _cache_item("/a/box", "/a/frame", 0, 2, "panel", vis),
            _cache_item("/a/b0", "/a/box", 0, 0, "push button", vis),
            _cache_item("/a/b1", "/a/box", 0, 0, "push button", vis)],
    }  # fmt: skip
    for what, items in cases.items():
        nodes, incomplete = collect.from_cache([frame, *items], "/a/frame", 100)
        assert [nodes[i].name for i in incomplete] == ["box"], what
        assert [n.name for n in nodes] == ["frame", "box"], what
    exact = [_cache_item("/a/box", "/a/frame", 0, 2, "panel", vis),
             _cache_item("/a/b1", "/a/box", 1, 0, "push button", vis),
             _cache_item("/a/b0", "/a/box", 0, 0, "push button", vis)]  # fmt: skip
    nodes, incomplete = collect.from_cache([frame, *exact], "/a/frame", 100)
    assert incomplete == []
    assert [n.name for n in nodes] == ["frame", "box", "b0", "b1"]


def test_hidden_parts_of_a_cache_are_checked_only_when_asked() -> None:
    """A hidden node's missing children do not change what is shown (GTK 4 exports them
    lazily: not walked); a Chromium read stands for its whole tree, hidden parts too."""
    vis = bit(State.VISIBLE)
    items = [
        _cache_item("/a/frame", "/", 0, 1, "frame", vis),
        _cache_item("/a/menu", "/a/frame", 0, 3, "menu", 0),
        _cache_item("/a/item", "/a/menu", 0, 0, "menu item", 0),
    ]
    assert collect.from_cache(items, "/a/frame", 100)[1] == []
    nodes, incomplete = collect.from_cache(items, "/a/frame", 100, hidden_too=True)
    assert [nodes[i].name for i in incomplete] == ["menu"]


@pytest.mark.parametrize(
    ("label", "field", "gap"),
    [
        ((516, 222, 37, 34), (565, 222, 204, 34), 12),  # zenity: same row, left
        ((516, 262, 37, 34), (565, 222, 204, 34), None),  # the row below
        ((800, 222, 37, 34), (565, 222, 204, 34), None),  # right of the field
        ((10, 222, 37, 34), (565, 222, 204, 34), None),  # too far away
        ((111, 110, 109, 34), (228, 115, 264, 24), 8),  # taller label, centred row
    ],
)
def test_left_gap(
    label: tuple[int, int, int, int], field: tuple[int, int, int, int], gap: int | None
) -> None:
    assert collect._left_gap(label, field) == gap
