"""Synthetic input through XTEST, with a record of what is held down.

Every press goes into :class:`HeldInputs` before it is sent and leaves it after its release,
so the stdin-EOF watcher (another thread, its own X connection) can release whatever an
interrupted action left down — a stuck Ctrl or mouse button would otherwise outlive the host.
"""

from __future__ import annotations

import contextlib
import select
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from Xlib import X, display, error
from Xlib.ext import xtest
from Xlib.protocol import event as xevent

from deskpilot.host.x11.connection import XConnection
from deskpilot.host.x11.keymap import Chord, Keymap, keysym_for_char, modifier_keysym
from deskpilot.protocol.errors import DeskpilotError, ErrorCode

BUTTONS = {"left": 1, "middle": 2, "right": 3}
SCROLL_BUTTONS = {"up": 4, "down": 5, "left": 6, "right": 7}
SHIFT_L = 0xFFE1
# How long the focused app may take to read the key events queued before a ping. Past it the
# host stops typing rather than remap a key the app may still decode (see keymap.py).
PING_TIMEOUT_S = 5.0
# A window that lists _NET_WM_PING but never answered yet may simply not implement it.
PING_FIRST_TIMEOUT_S = 2.0


class HeldInputs:
    """Keycodes and buttons currently pressed by the host (shared across threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.keys: dict[int, None] = {}  # insertion-ordered set
        self.buttons: dict[int, None] = {}

    def press_key(self, code: int) -> None:
        with self._lock:
            self.keys[code] = None

    def release_key(self, code: int) -> None:
        with self._lock:
            self.keys.pop(code, None)

    def press_button(self, button: int) -> None:
        with self._lock:
            self.buttons[button] = None

    def release_button(self, button: int) -> None:
        with self._lock:
            self.buttons.pop(button, None)

    def take(self) -> tuple[list[int], list[int]]:
        """Everything held, newest first, and forget it (the caller releases it)."""
        with self._lock:
            keys, buttons = list(reversed(self.keys)), list(reversed(self.buttons))
            self.keys.clear()
            self.buttons.clear()
        return keys, buttons

    def __bool__(self) -> bool:
        with self._lock:
            return bool(self.keys or self.buttons)


def release_all(conn: XConnection, held: HeldInputs) -> tuple[int, int]:
    """Send a release for everything held; safe from any thread that owns ``conn``."""
    keys, buttons = held.take()
    for button in buttons:
        xtest.fake_input(conn.display, X.ButtonRelease, button)
    for code in keys:
        xtest.fake_input(conn.display, X.KeyRelease, code)
    if keys or buttons:
        conn.sync()
    return len(keys), len(buttons)


class Canceled(DeskpilotError):
    def __init__(self) -> None:
        super().__init__(ErrorCode.SESSION_CANCELED, "the session was canceled during the action")


class AppPing:
    """Proof that the focused app has read the input sent so far: a ``_NET_WM_PING`` round trip.

    EWMH clients (GTK 3/4, Chromium, Qt, Firefox) answer the ping from their event loop, in
    queue order, by sending it back to the root window; the answer therefore arrives only after
    the app has read (and decoded) every key event queued before the ping. The answer is
    caught on a second connection that selects SubstructureNotify on the root only while it
    waits, so the host's main connection never collects root events. An app that does not
    list ``_NET_WM_PING``, or lists it but never answered, gets the keymap's pause instead;
    one that answered before and now stays silent is not reading its input, and typing stops
    with ``action_timeout`` rather than send keys it would decode with a later mapping.
    """

    def __init__(self, conn: XConnection, check: Callable[[], None]) -> None:
        self.conn = conn
        self.check = check
        self.timeout_s = PING_TIMEOUT_S
        self.first_timeout_s = PING_FIRST_TIMEOUT_S
        self._listener: Any = None
        self._token = 0
        self._answered: set[int] = set()  # windows that answered a ping
        self._silent: set[int] = set()  # windows that list the protocol but never answered

    def __call__(self) -> bool:
        """True once the app answered; False when it cannot be asked."""
        self.conn.sync()  # the server has delivered every key event sent so far
        target = self._target()
        if target is None or target.id in self._silent or not self._open_listener():
            return False
        self.check()
        known = target.id in self._answered
        if self._ping(target, self.timeout_s if known else self.first_timeout_s):
            self._remember(self._answered, target.id)
            return True
        if known:
            raise DeskpilotError(
                ErrorCode.ACTION_TIMEOUT,
                "the app stopped reading keyboard input; typing was stopped part-way",
            )
        self._remember(self._silent, target.id)
        return False

    @staticmethod
    def _remember(windows: set[int], xid: int) -> None:
        if len(windows) >= 256:  # windows come and go; a forgotten one is simply asked again
            windows.clear()
        windows.add(xid)

    def _target(self) -> Any | None:
        """The focused window, or the nearest ancestor that takes ``_NET_WM_PING``."""
        d = self.conn.display
        try:
            focus = d.get_input_focus().focus
            if isinstance(focus, int) or focus.id == self.conn.root.id:  # PointerRoot / None
                focus = self.conn.root.query_pointer().child
                if isinstance(focus, int) or not focus.id:
                    return None
            protocols = self.conn.atom("WM_PROTOCOLS")
            ping = self.conn.atom("_NET_WM_PING")
            win = focus
            for _ in range(12):
                prop = win.get_full_property(protocols, X.AnyPropertyType)
                if prop is not None and ping in prop.value:
                    return win
                parent = win.query_tree().parent
                if isinstance(parent, int) or not parent.id or parent.id == self.conn.root.id:
                    return None
                win = parent
        except error.XError:  # the window went away between two requests
            return None
        return None

    def _open_listener(self) -> bool:
        if self._listener is None:
            try:
                self._listener = display.Display(self.conn.name)
            except (error.DisplayError, error.ConnectionClosedError, OSError):
                return False  # the pause stands in
            self._listener.set_error_handler(lambda *_: None)
        return True

    def _ping(self, target: Any, timeout_s: float) -> bool:
        listener = self._listener
        root = listener.screen().root
        protocols = self.conn.atom("WM_PROTOCOLS")
        ping = self.conn.atom("_NET_WM_PING")
        self._token = self._token % 0x7FFFFFFF + 1
        token = self._token
        root.change_attributes(event_mask=X.SubstructureNotifyMask)
        listener.sync()  # selected before the app can answer
        try:
            ev = xevent.ClientMessage(
                window=target,
                client_type=protocols,
                data=(32, [ping, token, target.id, 0, 0]),
            )
            target.send_event(ev, event_mask=0)
            self.conn.sync()
            deadline = time.monotonic() + timeout_s
            while True:
                while listener.pending_events():
                    got = listener.next_event()
                    if (
                        got.type == X.ClientMessage
                        and got.client_type == protocols
                        and got.data[1][0] == ping
                        and got.data[1][1] == token
                    ):
                        return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                select.select([listener.fileno()], [], [], min(left, 0.05))
                self.check()
        finally:
            root.change_attributes(event_mask=0)
            listener.sync()
            while listener.pending_events():
                listener.next_event()

    def close(self) -> None:
        if self._listener is not None:
            with contextlib.suppress(Exception):  # a dead connection is not worth a failure
                self._listener.close()
            self._listener = None


class XInput:
    """Pointer and keyboard through XTEST on the host's main connection."""

    def __init__(self, conn: XConnection, held: HeldInputs) -> None:
        if not conn.extensions.xtest:
            raise DeskpilotError(
                ErrorCode.INPUT_PERMISSION_DENIED, "the X server does not offer XTEST"
            )
        self.conn = conn
        self.held = held
        self.check: Callable[[], None] = lambda: None  # raises to abort a long action
        self.ping = AppPing(conn, lambda: self.check())
        self.keymap = Keymap(conn, self.ping)

    # ---------------------------------------------------------------- pointer

    def move(self, x: int, y: int) -> None:
        xtest.fake_input(self.conn.display, X.MotionNotify, x=int(x), y=int(y))
        self.conn.sync()

    def button_down(self, button: int) -> None:
        self.held.press_button(button)
        xtest.fake_input(self.conn.display, X.ButtonPress, button)
        self.conn.sync()

    def button_up(self, button: int) -> None:
        xtest.fake_input(self.conn.display, X.ButtonRelease, button)
        self.conn.sync()
        self.held.release_button(button)

    def click(self, x: int, y: int, button: str = "left", count: int = 1) -> None:
        code = BUTTONS[button]
        self.move(x, y)
        time.sleep(0.02)  # let the target see the pointer arrive (enter/hover) first
        for i in range(count):
            self.check()
            self.button_down(code)
            self.button_up(code)
            if i + 1 < count:
                time.sleep(0.03)

    def click_holding(
        self, x: int, y: int, button: str, count: int, modifiers: Sequence[str]
    ) -> None:
        """:meth:`click` with the keys ``modifiers`` ("ctrl", "shift", "alt", "super") held
        down, as a person's ctrl-click; released whatever happens."""
        self.keymap.refresh()
        codes = [self.keymap.keycode_for(modifier_keysym(m))[0] for m in modifiers]
        pressed: list[int] = []
        try:
            for code in codes:
                self.key_down(code)
                pressed.append(code)
            self.conn.sync()
            time.sleep(0.02)  # the app sees the modifier before the button
            self.click(x, y, button, count)
        finally:
            self.keys_up(pressed)

    def scroll(self, x: int, y: int, direction: str, amount: int) -> None:
        code = SCROLL_BUTTONS[direction]
        self.move(x, y)
        for _ in range(amount):
            self.check()
            self.button_down(code)
            self.button_up(code)
            time.sleep(0.01)

    def drag(self, x0: int, y0: int, x1: int, y1: int, duration_s: float = 0.3) -> None:
        self.move(x0, y0)
        time.sleep(0.03)
        self.button_down(1)
        try:
            steps = max(4, min(60, int(duration_s / 0.016)))
            for i in range(1, steps + 1):
                self.check()
                self.move(x0 + (x1 - x0) * i // steps, y0 + (y1 - y0) * i // steps)
                time.sleep(duration_s / steps)
        finally:
            self.button_up(1)

    # ---------------------------------------------------------------- keyboard

    def key_down(self, code: int) -> None:
        self.held.press_key(code)
        xtest.fake_input(self.conn.display, X.KeyPress, code)

    def key_up(self, code: int) -> None:
        xtest.fake_input(self.conn.display, X.KeyRelease, code)
        self.held.release_key(code)

    def chord_down(self, chord: Chord) -> list[int]:
        """Press a chord's modifiers then its key; returns the keycodes in press order."""
        self.keymap.refresh()
        pressed: list[int] = []
        for keysym in (*chord.modifiers, chord.key):
            code, shift = self.keymap.keycode_for(keysym)
            if shift and keysym == chord.key and SHIFT_L not in chord.modifiers:
                shift_code, _ = self.keymap.keycode_for(SHIFT_L)
                self.key_down(shift_code)
                pressed.append(shift_code)
            self.key_down(code)
            pressed.append(code)
        self.conn.sync()
        return pressed

    def keys_up(self, pressed: list[int]) -> None:
        for code in reversed(pressed):
            self.key_up(code)
        self.conn.sync()

    def press_chord(self, chord: Chord) -> None:
        pressed = self.chord_down(chord)
        try:
            time.sleep(0.01)
        finally:
            self.keys_up(pressed)

    def type_text(self, text: str) -> int:
        """Type any Unicode text with key events; returns how many characters were typed."""
        self.keymap.refresh()
        shift_code, _ = self.keymap.keycode_for(SHIFT_L)
        keysyms: list[int] = []
        previous = ""
        for ch in text:
            if ch == "\n" and previous == "\r":
                previous = ch
                continue
            previous = ch
            keysym = keysym_for_char(ch)
            if keysym is not None:
                keysyms.append(keysym)
        for typed, keysym in enumerate(keysyms):
            if typed % 16 == 0:
                self.check()
            found = self.keymap.lookup(keysym)
            if found is None:
                try:  # remap the next pool-full of missing characters (may wait, see keymap)
                    self.keymap.prepare(keysyms[typed:])
                except DeskpilotError as exc:
                    exc.details.setdefault("typedCharacters", typed)
                    raise
                found = self.keymap.lookup(keysym)
                assert found is not None
            code, shift = found
            if shift:
                self.key_down(shift_code)
            self.key_down(code)
            self.key_up(code)
            if shift:
                self.key_up(shift_code)
            if typed % 16 == 15:
                self.conn.sync()
        self.conn.sync()
        return len(keysyms)
