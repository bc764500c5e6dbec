"""The chord's key grab on the root window, and who holds it when this process may not.

The chord from the ``killSwitch`` setting (default ``ctrl+shift+Escape``) is grabbed on the root
window with ``XGrabKey``, once per Lock/NumLock combination so Caps Lock or Num Lock being on
does not defeat it; the grab also keeps the chord from reaching applications.

Only one X client can grab a chord, so a second ``deskpilot serve`` on the same display is
refused (``BadAccess``). The X server is what every process on the display has in common, and
it forgets a client the moment it dies, so it also tells who holds the chord:

* a process that grabbed the chord advertises it by owning the selection
  ``_DESKPILOT_KILL_SWITCH_<keycode>_<mods>`` with a small unmapped window carrying
  ``_NET_WM_PID``;
* a process refused the grab looks up that selection's owner: a deskpilot process there means
  this one is ``watching`` it (its presses stop us too, see ``session``); no owner means some
  other program holds the chord and the switch is ``unavailable``. A watcher follows the
  owner's window (``DestroyNotify``): when that process exits the chord is taken over at once
  (and retried every 2 s otherwise), so the display is never left without an armed switch
  while one deskpilot process runs.

See docs/kernel.md, "Kill switch". Imports python-xlib: only the kill-switch thread imports it.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any

from Xlib import XK, X, Xatom, error
from Xlib.protocol import request

from deskpilot.kernel.policy.signals import chord_parts

from .state import RETRY_GRAB_SECONDS, ArmState
from .xnames import MODIFIER_MASKS, SELECTION_PREFIX, _keysym_name

#: grabbed alongside the chord's own modifiers: none, Caps Lock, Num Lock, both
_LOCK_VARIANTS = (0, X.LockMask, X.Mod2Mask, X.LockMask | X.Mod2Mask)

_NOT_DESKPILOT = (
    "another X client (not deskpilot) already grabs this chord (BadAccess); "
    "presses of it cannot be caught on this display"
)


class ChordGrab:
    """The chord this process grabs and advertises, or the holder it watches instead.

    Lives on the kill-switch thread, on that thread's X connection."""

    def __init__(self, d: Any) -> None:
        self._d = d
        self._root = d.screen().root
        self._pid_atom = d.intern_atom("_NET_WM_PID")
        self._grabbed: list[tuple[int, int]] = []
        #: the grabbed chord's keycode (0: none) and modifier mask
        self.code = 0
        self.mods = 0
        self._owner_win: Any = None  # our advertisement window, made on the first grab
        self._owned_sel = 0  # the selection atom we own while armed
        self._watched: Any = None  # the other process's advertisement window we follow
        #: when to try the grab again (time.monotonic(); 0.0: at once)
        self.retry_at = 0.0

    # -- grab / ungrab
    def grab(self, chord: str) -> ArmState:
        """Let go of any previous chord, then grab ``chord`` or find who holds it."""
        self.ungrab()
        if not chord:
            return ArmState(False, "", mode="off")
        resolved = self._resolve(chord)
        if isinstance(resolved, ArmState):
            return resolved
        code, mask = resolved
        sel = self._d.intern_atom(f"{SELECTION_PREFIX}_{code}_{mask}")
        if self._grab_key(code, mask):
            self.code, self.mods = code, mask
            self._advertise(sel)
            self._d.sync()
            return ArmState(True, chord, mode="armed")
        self.ungrab()
        self.retry_at = time.monotonic() + RETRY_GRAB_SECONDS
        return self._watch_holder(sel, chord)

    def ungrab(self) -> None:
        for code, mods in self._grabbed:
            self._root.ungrab_key(code, mods)
        self._grabbed.clear()
        self.code = 0
        self._release_selection()
        self._unwatch()
        self._d.sync()

    def _resolve(self, chord: str) -> tuple[int, int] | ArmState:
        """(keycode, modifier mask) of ``chord`` on this keyboard, or why it has none."""
        mods, key = chord_parts(chord)
        mask = 0
        for m in mods:
            attr = MODIFIER_MASKS.get(m)
            bit = getattr(X, attr) if attr else None
            if bit is None:
                return ArmState(False, chord, f"unknown modifier {m!r}", mode="unavailable")
            mask |= bit
        keysym = XK.string_to_keysym(_keysym_name(key))
        code = self._d.keysym_to_keycode(keysym) if keysym else 0
        if not code:
            return ArmState(
                False, chord, f"no key for {key!r} on this keyboard", mode="unavailable"
            )
        return int(code), mask

    def _grab_key(self, code: int, mask: int) -> bool:
        """``XGrabKey`` for every lock variant; False when another client has it (BadAccess)."""
        catcher = error.CatchError(error.BadAccess)
        for extra in _LOCK_VARIANTS:
            self._root.grab_key(
                code, mask | extra, True, X.GrabModeAsync, X.GrabModeAsync, onerror=catcher
            )
            self._grabbed.append((code, mask | extra))
        self._d.sync()
        return catcher.get_error() is None

    # -- the selection that says who holds the chord
    def _advertise(self, sel: int) -> None:
        if self._owner_win is None:
            self._owner_win = self._root.create_window(
                -10, -10, 1, 1, 0, 0, window_class=X.InputOnly, override_redirect=True
            )
            self._owner_win.change_property(self._pid_atom, Xatom.CARDINAL, 32, [os.getpid()])
            self._owner_win.set_wm_name("deskpilot kill switch")
        self._owner_win.set_selection_owner(sel, X.CurrentTime)
        self._owned_sel = sel

    def _release_selection(self) -> None:
        if self._owned_sel:
            request.SetSelectionOwner(
                display=self._d.display,
                window=X.NONE,
                selection=self._owned_sel,
                time=X.CurrentTime,
            )
            self._owned_sel = 0

    def _owner_pid(self, sel: int) -> tuple[Any, int | None]:
        """The window owning ``sel`` and its pid; (None, None) when nobody owns it."""
        owner = self._d.get_selection_owner(sel)
        wid = getattr(owner, "id", owner)
        if not wid:
            return None, None
        win = self._d.create_resource_object("window", wid)
        catcher = error.CatchError(error.BadWindow)
        prop = win.get_full_property(self._pid_atom, X.AnyPropertyType)
        if catcher.get_error() is not None or prop is None or not len(prop.value):
            return win, None
        return win, int(prop.value[0])

    # -- watching the deskpilot process that holds it
    def _watch_holder(self, sel: int, chord: str) -> ArmState:
        """Refused the grab: watch the deskpilot process that owns ``sel``, if one does."""
        # a deskpilot process that grabbed it a moment ago may not own the selection yet
        win: Any = None
        pid: int | None = None
        for _ in range(5):
            win, pid = self._owner_pid(sel)
            if win is not None:
                break
            time.sleep(0.04)
        if win is None or pid is None:
            return ArmState(False, chord, _NOT_DESKPILOT, mode="unavailable")
        catcher = error.CatchError(error.BadWindow)
        win.change_attributes(event_mask=X.StructureNotifyMask, onerror=catcher)
        self._d.sync()
        if catcher.get_error() is not None:  # it exited meanwhile: try again now
            self.retry_at = 0.0
        else:
            self._watched = win
        return ArmState(False, chord, None, mode="watching", holder_pid=pid)

    def holder_gone(self, window: Any) -> None:
        """A ``DestroyNotify`` for ``window``: if it was the holder's, take the chord over now."""
        if self._watched is not None and window.id == self._watched.id:
            # the process we watched is gone: the chord is free, take it over
            self._watched = None
            self.retry_at = 0.0

    def _unwatch(self) -> None:
        if self._watched is not None:
            with contextlib.suppress(Exception):
                self._watched.change_attributes(event_mask=0, onerror=error.CatchError())
            self._watched = None
