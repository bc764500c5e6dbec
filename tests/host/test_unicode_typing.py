"""Typing far more distinct unmapped characters than there are spare keycodes, exactly.

Every character below is missing from the US layout, so each one needs a spare keycode, and
there are only ~19 of those: the host must reuse keycodes many times per text. Without the
reuse barrier (keymap.py) Chromium and GTK 4 decode queued keys with a later mapping and the
text comes out garbled. The text is read back from the app itself: the page posts its
textarea's value to a loopback server, mousepad's through the accessibility tree, the GTK 4
window writes its buffer to a file.
"""

from __future__ import annotations

import http.server
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from host_harness import HostProcess, act, launch_accessible, observe, wait_for
from Xlib import X

from deskpilot.desktop import apps
from deskpilot.host.x11.connection import XConnection
from deskpilot.host.x11.input import HeldInputs, XInput
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from desktop_kit import needs_chromium

pytestmark = pytest.mark.desktop

CYRILLIC = "абвгдеёжзийклмнопрстуфхцчшщъыьэюяАБВГДЕЁЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯ"
LATIN1 = "àáâãäåæçèéêëìíîïðñòóôõöøùúûüýþÿÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÐÑÒÓÔÕÖØÙÚÛÜÝÞ"
HUNDRED = CYRILLIC + LATIN1[: 100 - len(CYRILLIC)]  # 100 distinct characters, none on the layout
SENTENCE = "Привет, как у тебя дела сегодня? Всё хорошо, спасибо! Ça va très bien, merci."


def test_the_texts_really_need_many_keycode_reuses() -> None:
    assert len(set(HUNDRED)) == 100
    assert all(ord(c) > 0x7E for c in HUNDRED)
    assert len(set(SENTENCE) - set(map(chr, range(0x20, 0x7F)))) > 20  # > the spare pool


# ------------------------------------------------------------------------------ chromium

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Typing page</title></head>
<body><textarea id="t" rows="12" cols="90" autofocus></textarea>
<script>
const t = document.getElementById('t');
let seq = 0;
function report() { seq += 1; fetch('/value', {method: 'POST', body: seq + ':' + t.value}); }
t.addEventListener('input', report);
window.addEventListener('load', () => { t.focus(); report(); });
</script></body></html>"""


class PageValue:
    """The textarea's latest value as the page reported it (posts may arrive out of order)."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.seq = 0
        self.value: str | None = None

    def put(self, body: str) -> None:
        number, _, value = body.partition(":")
        with self.cond:
            if int(number) > self.seq:
                self.seq, self.value = int(number), value
            self.cond.notify_all()

    def wait(self, expected: str, timeout: float = 15.0) -> str | None:
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.value != expected and time.monotonic() < deadline:
                self.cond.wait(0.1)
            return self.value


@pytest.fixture
def page(desktop: object) -> Iterator[tuple[str, PageValue]]:
    state = PageValue()
    body = PAGE.encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            state.put(self.rfile.read(length).decode())
            self.send_response(204)
            self.end_headers()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", state
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def host(desktop: object) -> Iterator[HostProcess]:
    with HostProcess() as h:
        yield h


@needs_chromium
@pytest.mark.chromium
def test_chromium_gets_100_distinct_unmapped_characters_exactly(
    host: HostProcess, page: tuple[str, PageValue]
) -> None:
    url, value = page
    chromium = apps.launch_chromium(url)
    try:
        assert value.wait("", timeout=60) == "", "the page did not load"
        target = {"pid": chromium.pid}
        # two texts back to back: the second reuses keycodes the first left unconfirmed
        for i, text in enumerate((HUNDRED, SENTENCE)):
            obs, _ = observe(host, target, session="cr", includeScreenshot=False)
            if i:
                act(host, obs, {"kind": "press_key", "keys": ["ctrl+a", "BackSpace"]}, "cr")
                assert value.wait("") == ""
                obs, _ = observe(host, target, session="cr", includeScreenshot=False)
            result = act(host, obs, {"kind": "type_text", "text": text}, "cr", timeout=60)
            assert result["type"] == "action_result", result
            assert result["method"] == "synthetic"
            assert result["detail"] == f"xtest typed {len(text)} characters"
            assert value.wait(text) == text
    finally:
        chromium.stop()


# ------------------------------------------------------------------------------ GTK 3


def test_mousepad_gets_100_distinct_unmapped_characters_exactly(host: HostProcess) -> None:
    mousepad = launch_accessible(["mousepad"])
    try:
        target = {"pid": mousepad.pid}

        def field_ready() -> dict[str, Any] | None:
            obs, _ = observe(host, target, session="mp", includeScreenshot=False)
            return obs if "- textField" in obs["tree"] else None

        obs = wait_for(field_ready, timeout=30, interval=0.3)
        result = act(host, obs, {"kind": "type_text", "text": HUNDRED + SENTENCE}, "mp", 60)
        assert result["type"] == "action_result", result
        assert result["method"] == "synthetic"

        def typed() -> str | None:
            obs, _ = observe(host, target, session="mp", includeScreenshot=False)
            tree: str = obs["tree"]
            return tree if f'textField = "{HUNDRED + SENTENCE}"' in tree else None

        wait_for(typed, timeout=10, interval=0.3)
    finally:
        mousepad.stop()


# ------------------------------------------------------------------------------ GTK 4

# No GTK 4 app ships on the test machine, but libgtk-4 does: a text view through ctypes.
GTK4_APP = r"""
import ctypes, os, sys
out = sys.argv[1]
gtk = ctypes.CDLL("libgtk-4.so.1")
glib = ctypes.CDLL("libglib-2.0.so.0")
gobj = ctypes.CDLL("libgobject-2.0.so.0")
P = ctypes.c_void_p
for name, res, args in [
    ("gtk_window_new", P, []), ("gtk_text_view_new", P, []),
    ("gtk_window_set_child", None, [P, P]), ("gtk_window_set_title", None, [P, ctypes.c_char_p]),
    ("gtk_window_set_default_size", None, [P, ctypes.c_int, ctypes.c_int]),
    ("gtk_window_present", None, [P]), ("gtk_widget_grab_focus", ctypes.c_bool, [P]),
    ("gtk_text_view_get_buffer", P, [P]), ("gtk_text_buffer_get_bounds", None, [P, P, P]),
    ("gtk_text_buffer_get_text", P, [P, P, P, ctypes.c_bool]),
]:
    f = getattr(gtk, name); f.restype = res; f.argtypes = args
glib.g_main_context_iteration.argtypes = [P, ctypes.c_bool]
glib.g_free.argtypes = [P]
gobj.g_signal_connect_data.argtypes = [P, ctypes.c_char_p, P, P, P, ctypes.c_int]
gtk.gtk_init()
win = gtk.gtk_window_new()
gtk.gtk_window_set_title(win, b"GTK4 typing")
gtk.gtk_window_set_default_size(win, 500, 300)
view = gtk.gtk_text_view_new()
gtk.gtk_window_set_child(win, view)
buf = gtk.gtk_text_view_get_buffer(view)
start, end = ctypes.create_string_buffer(256), ctypes.create_string_buffer(256)

@ctypes.CFUNCTYPE(None, P, P)
def changed(_b, _d):
    gtk.gtk_text_buffer_get_bounds(buf, start, end)
    raw = gtk.gtk_text_buffer_get_text(buf, start, end, True)
    text = ctypes.string_at(raw).decode()
    glib.g_free(raw)
    with open(out + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(out + ".tmp", out)

gobj.g_signal_connect_data(buf, b"changed", ctypes.cast(changed, P), None, None, 0)
gtk.gtk_window_present(win)
gtk.gtk_widget_grab_focus(view)
with open(out + ".ready", "w") as f:
    f.write("1")
while True:
    glib.g_main_context_iteration(None, True)
"""


class Gtk4Window:
    def __init__(self, app: apps.App, out: Path) -> None:
        self.app = app
        self.out = out

    def text(self) -> str:
        return self.out.read_text(encoding="utf-8") if self.out.exists() else ""

    def wait_text(self, expected: str, timeout: float = 10.0) -> str:
        deadline = time.monotonic() + timeout
        while self.text() != expected and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # nothing more may arrive after the expected text
        return self.text()


def find_window(conn: XConnection, title: str) -> Any:
    for child in conn.root.query_tree().children:
        name = child.get_full_property(conn.atom("_NET_WM_NAME"), X.AnyPropertyType)
        if name is not None and title in bytes(name.value).decode(errors="replace"):
            return child
    return None


@pytest.fixture
def gtk4(desktop: object, tmp_path: Path) -> Iterator[Gtk4Window]:
    script = tmp_path / "gtk4_text.py"
    script.write_text(GTK4_APP)
    out = tmp_path / "buffer.txt"
    env = dict(os.environ, GDK_BACKEND="x11", GSK_RENDERER="cairo")
    app = apps.launch([sys.executable, str(script), str(out)], env)
    try:
        wait_for(lambda: Path(str(out) + ".ready").exists(), timeout=30)
        yield Gtk4Window(app, out)
    finally:
        app.stop()


@pytest.fixture
def xinput(desktop: object) -> Iterator[XInput]:
    conn = XConnection()
    xi = XInput(conn, HeldInputs())
    try:
        yield xi
    finally:
        xi.keymap.restore()
        xi.ping.close()
        conn.close()


def focus(xi: XInput, title: str) -> None:
    win = wait_for(lambda: find_window(xi.conn, title), timeout=20)
    wait_for(lambda: win.get_attributes().map_state == X.IsViewable, timeout=10)
    geo = win.get_geometry()
    win.set_input_focus(X.RevertToPointerRoot, X.CurrentTime)
    xi.conn.sync()
    xi.click(geo.x + geo.width // 2, geo.y + geo.height // 2)
    time.sleep(0.3)


def test_gtk4_gets_100_distinct_unmapped_characters_with_ping_barriers(
    gtk4: Gtk4Window, xinput: XInput
) -> None:
    focus(xinput, "GTK4 typing")
    assert xinput.ping._target() is not None  # GTK 4 takes _NET_WM_PING: the exact barrier
    assert xinput.type_text(HUNDRED) == 100
    assert gtk4.wait_text(HUNDRED) == HUNDRED
    pool = len(xinput.keymap._spare)
    assert 0 < pool < 100
    assert xinput.keymap.barriers >= 100 // pool - 1  # one per pool-full, not one per key


def test_without_a_ping_the_fixed_pause_keeps_the_text_exact(
    gtk4: Gtk4Window, xinput: XInput
) -> None:
    focus(xinput, "GTK4 typing")
    xinput.keymap.barrier = None  # as for an app that does not answer _NET_WM_PING
    started = time.monotonic()
    assert xinput.type_text(SENTENCE + HUNDRED) == len(SENTENCE + HUNDRED)
    elapsed = time.monotonic() - started
    assert gtk4.wait_text(SENTENCE + HUNDRED) == SENTENCE + HUNDRED
    assert elapsed >= 0.3 * (xinput.keymap.barriers - 1)


def test_an_app_that_stops_reading_fails_the_typing_instead_of_garbling(
    gtk4: Gtk4Window, xinput: XInput
) -> None:
    focus(xinput, "GTK4 typing")
    assert xinput.type_text(SENTENCE) == len(SENTENCE)  # the window answers pings
    assert gtk4.wait_text(SENTENCE) == SENTENCE
    xinput.ping.timeout_s = 1.0
    os.kill(gtk4.app.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        with pytest.raises(DeskpilotError) as caught:
            xinput.type_text(HUNDRED)
        assert caught.value.code is ErrorCode.ACTION_TIMEOUT
        assert 1.0 <= time.monotonic() - started < 5.0
        typed = caught.value.details["typedCharacters"]
        assert 0 <= typed < 100
    finally:
        os.kill(gtk4.app.pid, signal.SIGCONT)
    # what was sent before the stop arrives intact: a prefix, never a wrong character
    time.sleep(1.0)
    assert gtk4.text() == SENTENCE + HUNDRED[:typed]
