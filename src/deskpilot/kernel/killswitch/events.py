"""One step of the kill-switch loop: the X events that arrived, turned into presses.

* a ``KeyPress`` of the grabbed chord is a press; key auto-repeat sends more presses while the
  key is held, and they are ignored until it is released (one kill per hold);
* a new value of the ``_DESKPILOT_KILL`` root property set by another process is that
  process's press (see ``session``);
* a ``DestroyNotify`` of the holder's window we watch frees the chord (see ``grab``);
* XInput2 raw key events on the root window (no grab: apps still get every key) show the
  person's plain Escape (Escape with no modifier held); the broker decides whether an action
  is in flight and whether the Escape was our own (see ``kernel.interrupts`` and
  docs/kernel.md).

Imports python-xlib: only the kill-switch thread imports it.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from typing import Any

from Xlib import XK, X
from Xlib.ext import xinput

from .session import DisplaySession

log = logging.getLogger(__name__)

_GENERIC_EVENT = 35
_XI_RAW_KEY_PRESS = 13
_XI_RAW_KEY_RELEASE = 14
_XI_ALL_MASTER_DEVICES = 1

_MOD_KEYSYMS = (
    "Control_L",
    "Control_R",
    "Shift_L",
    "Shift_R",
    "Alt_L",
    "Alt_R",
    "Super_L",
    "Super_R",
    "Meta_L",
    "Meta_R",
    "ISO_Level3_Shift",
)

#: Caps Lock and Num Lock: not part of the chord when a press is matched against it
_IGNORED_MODS = X.LockMask | X.Mod2Mask


class EventDispatch:
    """Reads the session's pending events and calls back on presses (on the X thread)."""

    def __init__(
        self,
        session: DisplaySession,
        *,
        escape_watch: bool,
        on_chord: Callable[[], None],
        on_remote: Callable[[], None],
        on_escape: Callable[[int], None],
    ) -> None:
        d = session.d
        self._session = session
        self._on_chord = on_chord
        self._on_remote = on_remote
        self._on_escape = on_escape
        self._escape_code = d.keysym_to_keycode(XK.string_to_keysym("Escape"))
        self._mod_codes = {
            d.keysym_to_keycode(XK.string_to_keysym(name)) for name in _MOD_KEYSYMS
        } - {0}
        self._xi_opcode = _select_raw_keys(d) if escape_watch else None
        self._chord_down = False
        self._held: set[int] = set()  # keycodes down, from the raw events

    def dispatch_pending(self) -> None:
        d = self._session.d
        while d.pending_events():
            self._dispatch(d.next_event())

    def _dispatch(self, ev: Any) -> None:
        chord = self._session.chord
        if ev.type == X.KeyPress and ev.detail == chord.code and chord.code:
            self._chord_press(ev)
        elif ev.type == X.KeyRelease and ev.detail == chord.code:
            self._chord_down = False
        elif ev.type == X.PropertyNotify:
            self._property_change(ev)
        elif ev.type == X.DestroyNotify:
            chord.holder_gone(ev.window)
        elif ev.type == _GENERIC_EVENT and self._xi_opcode is not None:
            self._raw_key_event(ev)

    def _chord_press(self, ev: Any) -> None:
        mods = (ev.state & ~_IGNORED_MODS) & 0xFF
        if mods == self._session.chord.mods and not self._chord_down:
            self._chord_down = True  # auto-repeat sends more presses: one kill per hold
            self._on_chord()

    def _property_change(self, ev: Any) -> None:
        session = self._session
        if (
            ev.atom == session.kill_atom
            and ev.state == X.PropertyNewValue
            and session.remote_press()
        ):
            self._on_remote()

    def _raw_key_event(self, ev: Any) -> None:
        raw = _raw_key(ev)
        if raw is None:
            return
        evtype, keycode = raw
        if evtype == _XI_RAW_KEY_RELEASE:
            self._held.discard(keycode)
            return
        if evtype != _XI_RAW_KEY_PRESS:
            return
        plain = keycode == self._escape_code and not (self._held & self._mod_codes)
        if plain and keycode not in self._held:
            self._on_escape(keycode)
        self._held.add(keycode)


def _select_raw_keys(d: Any) -> int | None:
    """Ask for XI2 raw key events on the root window; the XInput opcode, None without XI2."""
    ext = d.query_extension("XInputExtension")
    if not ext.present:
        log.warning("XInput2 missing: the person's Escape cannot be watched")
        return None
    d.screen().root.xinput_select_events(
        [(_XI_ALL_MASTER_DEVICES, xinput.RawKeyPressMask | xinput.RawKeyReleaseMask)]
    )
    return int(ext.major_opcode)


def _raw_key(ev: Any) -> tuple[int, int] | None:
    """(evtype, keycode) of an XI2 raw key event; python-xlib leaves raw events unparsed."""
    data = getattr(ev, "_data", None)
    if not isinstance(data, dict):
        return None
    evtype = data.get("evtype")
    body = data.get("data")
    if evtype not in (_XI_RAW_KEY_PRESS, _XI_RAW_KEY_RELEASE) or not isinstance(body, bytes):
        return None
    if len(body) < 10:
        return None
    # deviceid u16, time u32, detail u32 (the keycode), sourceid u16, …
    _device, _time, detail = struct.unpack_from("<HII", body, 0)
    return int(evtype), int(detail)
