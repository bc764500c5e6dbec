"""The kill-switch thread's own X connection, and the presses it shares with the display.

python-xlib is not thread-safe and the grab must not share a connection with anything else, so
the thread opens a connection of its own; :class:`DisplaySession` holds it, with the chord's
grab on it (``chord``, a :class:`~.grab.ChordGrab`).

Several deskpilot processes on one display share one switch through the X server: every press
a process catches is also broadcast as a new value of the root window property
``_DESKPILOT_KILL`` (pid, token), and every deskpilot kill-switch thread on the display selects
``PropertyChangeMask`` on the root window and treats another process's broadcast as a press
(docs/kernel.md, "Several deskpilot processes on one display").

Imports python-xlib: only the kill-switch thread imports it.
"""

from __future__ import annotations

import os
from typing import Any

from Xlib import X, Xatom, display

from .grab import ChordGrab
from .xnames import KILL_PROPERTY


def connect(display_name: str | None) -> Any:
    """Open a connection of the thread's own; raises when there is no display or no auth."""
    return display.Display(display_name)


class DisplaySession:
    """One open X connection: the root window, the chord's grab, the broadcast property."""

    def __init__(self, d: Any, token: int) -> None:
        self.d = d
        self.root = d.screen().root
        self.kill_atom = d.intern_atom(KILL_PROPERTY)
        self.chord = ChordGrab(d)
        self._token = token  # tells our own broadcasts from other processes'
        self._seq = 0
        # another deskpilot process's presses arrive as changes of a root property
        self.root.change_attributes(event_mask=X.PropertyChangeMask)

    def sync(self) -> None:
        self.d.sync()

    def fileno(self) -> int:
        return int(self.d.fileno())

    def broadcast(self) -> None:
        """Tell every deskpilot process on the display that the chord was pressed here."""
        self._seq += 1
        self.root.change_property(
            self.kill_atom,
            Xatom.CARDINAL,
            32,
            [os.getpid(), self._token, self._seq & 0x7FFFFFFF],
        )
        self.d.flush()

    def remote_press(self) -> bool:
        """Whether the broadcast property's current value came from another process."""
        prop = self.root.get_full_property(self.kill_atom, X.AnyPropertyType)
        if prop is None or len(prop.value) < 2:
            return False
        return int(prop.value[1]) != self._token

    def close(self) -> None:
        self.chord.ungrab()
        self.d.close()
