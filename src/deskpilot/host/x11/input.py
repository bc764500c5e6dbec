"""Synthetic input through XTEST, with a record of what is held down.

Every press goes into :class:`HeldInputs` before it is sent and leaves it after its release,
so the stdin-EOF watcher (another thread, its own X connection) can release whatever an
interrupted action left down — a stuck Ctrl or mouse button would otherwise outlive the host.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from Xlib import X
from Xlib.ext import xtest

from deskpilot.host.x11.connection import XConnection
from deskpilot.host.x11.keymap import Chord, Keymap, keysym_for_char
from deskpilot.protocol.errors import DeskpilotError, ErrorCode

BUTTONS = {"left": 1, "middle": 2, "right": 3}
SCROLL_BUTTONS = {"up": 4, "down": 5, "left": 6, "right": 7}
SHIFT_L = 0xFFE1


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


class XInput:
    """Pointer and keyboard through XTEST on the host's main connection."""

    def __init__(self, conn: XConnection, held: HeldInputs) -> None:
        if not conn.extensions.xtest:
            raise DeskpilotError(
                ErrorCode.INPUT_PERMISSION_DENIED, "the X server does not offer XTEST"
            )
        self.conn = conn
        self.held = held
        self.keymap = Keymap(conn)
        self.check: Callable[[], None] = lambda: None  # raises to abort a long action

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
        typed = 0
        previous = ""
        for i, ch in enumerate(text):
            if ch == "\n" and previous == "\r":
                previous = ch
                continue
            previous = ch
            keysym = keysym_for_char(ch)
            if keysym is None:
                continue
            if i % 16 == 0:
                self.check()
            code, shift = self.keymap.keycode_for(keysym)
            if shift:
                self.key_down(shift_code)
            self.key_down(code)
            self.key_up(code)
            if shift:
                self.key_up(shift_code)
            typed += 1
            if typed % 16 == 0:
                self.conn.sync()
        self.conn.sync()
        return typed
