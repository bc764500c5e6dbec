"""The kill switch: a global hot key grabbed on the X display, and the Escape watcher.

One daemon thread owns its own X connection and

* grabs the chord from the ``killSwitch`` setting (default ``ctrl+shift+Escape``) on the root
  window, so a press cancels every session whatever has the focus;
* watches the person's plain Escape, which cancels the action in flight;
* shares the switch with every other deskpilot process on the same display through the X
  server: one of them holds the grab, the others watch it, and every press stops them all.

The state (``armed`` / ``watching`` / ``unavailable`` / ``off``, the holder's pid, the cause) is
in :class:`ArmState`, reported by ``status``, ``get_capabilities`` and ``deskpilot doctor``.
docs/kernel.md ("Kill switch") has the whole design and its measurements.

The package, along the thread's loop:

* ``state``: :class:`ArmState`, :class:`KillSwitchError`, when a refused grab is retried;
* ``xnames``: the X names (modifier masks, keysyms, the shared selection and property);
* ``listener``: the thread, its command queue and loop, and :func:`probe`;
* ``session``: the thread's X connection and the press broadcast on the root window;
* ``grab``: the key grab, the selection that advertises it, watching its holder;
* ``events``: one pass over the pending X events, turned into presses;
* ``arming``: the kernel's side — start, arm from the settings, follow them, presses onto the
  event loop.

Only ``listener`` and below are imported here; the X modules (``session``, ``grab``, ``events``)
import python-xlib and are imported by the thread, so this package imports without a display.
"""

from __future__ import annotations

from .listener import KillSwitchListener, probe
from .state import RETRY_GRAB_SECONDS, ArmState, KillSwitchError
from .xnames import KILL_PROPERTY, MODIFIER_MASKS, SELECTION_PREFIX, _keysym_name

__all__ = [
    "KILL_PROPERTY",
    "MODIFIER_MASKS",
    "RETRY_GRAB_SECONDS",
    "SELECTION_PREFIX",
    "ArmState",
    "KillSwitchError",
    "KillSwitchListener",
    "_keysym_name",
    "probe",
]
