"""The person at the keyboard and mouse, for tests: XTEST from a separate X client.

A physical keyboard's keys reach the X server the same way, so what these helpers type is
what a person types: nothing of deskpilot is involved. Shared by the takeover, control
request, hand back and dashboard tests (tests/ is on ``sys.path`` through its conftest.py).
"""

from __future__ import annotations

import time


def person_types(
    display_name: str,
    keys: list[str],
    *,
    pointer: tuple[int, int] | None = None,
    focus_window: int | None = None,
    gap_s: float = 0.05,
) -> None:
    """Press and release each keysym name of ``keys`` (names that need no modifier: "5",
    "Escape", "a"). ``pointer``: first move the pointer there (without a window manager the
    keyboard follows it); ``focus_window``: first give that X window the input focus."""
    from Xlib import XK, X, display
    from Xlib.ext import xtest

    d = display.Display(display_name)
    try:
        if pointer is not None:
            xtest.fake_input(d, X.MotionNotify, x=pointer[0], y=pointer[1])
        if focus_window is not None:
            window = d.create_resource_object("window", focus_window)
            d.set_input_focus(window, X.RevertToParent, X.CurrentTime)
        if pointer is not None or focus_window is not None:
            d.sync()
            time.sleep(0.2)
        for name in keys:
            code = d.keysym_to_keycode(XK.string_to_keysym(name))
            assert code, f"no keycode for keysym {name!r}"
            xtest.fake_input(d, X.KeyPress, code)
            xtest.fake_input(d, X.KeyRelease, code)
            d.sync()
            time.sleep(gap_s)
    finally:
        d.close()
