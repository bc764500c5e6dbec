"""An xterm with a known output, for the visual tree tests, and the X PRIMARY selection a
double-click in it sets.

xterm exports no accessibility tree, so the kernel reads it by OCR (docs/vision.md, "Visual
trees"). 116x34 cells of DejaVu Sans Mono 14 fill a 1280x800 screen. Shared by
tests/kernel/test_visual_tree.py and tests/mcp/test_mcp_visual_tree.py (tests/ is on
``sys.path`` through its conftest.py).
"""

from __future__ import annotations

import shutil
import time

import pytest

from deskpilot.desktop.apps import App, launch

MARKER = "DESKPILOT-VISUAL-4711"
WORDS = "alpha bravo charlie"
#: The window's geometry and font: the whole 1280x800 screen.
ARGS = ["-geometry", "116x34+0+0", "-fa", "DejaVu Sans Mono", "-fs", "14"]


#: Text on coloured and inverted backgrounds (SGR 7: reverse, 1;31: bold red, 44: blue
#: background), and the lines it shows.
COLOURED = (
    r"printf 'plain words here\n\033[7mINVERTED WORDS\033[0m after\n"
    r"\033[1;31mRED BOLD\033[0m and \033[44mBLUEBG\033[0m\n'"
)
COLOURED_LINES = ("plain words here", "INVERTED WORDS after", "RED BOLD and BLUEBG")


def launch_xterm(*lines: str) -> App:
    """xterm showing ``lines`` (the marker and the words by default), then idle; skips the
    test when xterm is not installed."""
    shown = lines or (MARKER, WORDS)
    return launch_xterm_script("; ".join(f"echo {line}" for line in shown))


def launch_xterm_script(script: str) -> App:
    """xterm running the shell command ``script``, then idle (skips without xterm)."""
    path = shutil.which("xterm")
    if path is None:
        pytest.skip("xterm is not installed")
    return launch([path, *ARGS, "-e", "sh", "-c", f"{script}; exec sleep 600"])


def primary_selection(display: str, timeout: float = 3.0) -> str | None:
    """The X PRIMARY selection's text, asked of its owner (xterm) as UTF8_STRING; ``None``
    when nobody owns it or it does not answer in time."""
    from Xlib import X, Xatom
    from Xlib import display as xdisplay

    d = xdisplay.Display(display)
    try:
        window = d.screen().root.create_window(0, 0, 1, 1, 0, X.CopyFromParent)
        prop = d.intern_atom("DESKPILOT_TEST_SELECTION")
        window.convert_selection(Xatom.PRIMARY, d.intern_atom("UTF8_STRING"), prop, X.CurrentTime)
        d.flush()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not d.pending_events():
                time.sleep(0.02)
                continue
            event = d.next_event()
            if event.type != X.SelectionNotify:
                continue
            if event.property == X.NONE:
                return None
            data = window.get_full_property(prop, X.AnyPropertyType)
            if data is None:
                return None
            value = data.value
            return value.decode() if isinstance(value, bytes) else str(value)
        return None
    finally:
        d.close()
