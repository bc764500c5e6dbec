"""The kill switch: a global hot key grabbed on the X display, and the Escape watcher.

One daemon thread owns its own X connection (python-xlib is not thread-safe, and the grab must
not share a connection with anything else). It

* grabs the chord from the ``killSwitch`` setting (default ``ctrl+shift+Escape``) on the root
  window with ``XGrabKey``, once per Lock/NumLock combination so Caps Lock or Num Lock being on
  does not defeat it; the grab also keeps the chord from reaching applications;
* watches XInput2 raw key events on the root window (no grab: apps still get every key) to see
  the person's plain Escape (Escape with no modifier held); the broker decides whether an
  action is in flight and whether the Escape was our own (see ``kernel.interrupts``).

It is armed at start from the settings — so a fresh install, which has no settings rows, is
armed with the default chord — and re-armed when the setting changes, in this process (a
settings listener) or in another one (the settings revision, checked every 2 s). Repeated
presses are coalesced twice: key auto-repeat is ignored until the key is released, and the
kernel ignores presses while a kill is still running.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import select
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from deskpilot.kernel.policy.signals import chord_parts

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


@dataclass(frozen=True, slots=True)
class ArmState:
    armed: bool
    chord: str
    error: str | None = None


class KillSwitchError(RuntimeError):
    pass


def _keysym_name(key: str) -> str:
    """Our chord key spelling → an X keysym name."""
    aliases = {
        "escape": "Escape",
        "esc": "Escape",
        "return": "Return",
        "enter": "Return",
        "space": "space",
        "tab": "Tab",
        "delete": "Delete",
        "backspace": "BackSpace",
        "pause": "Pause",
        "break": "Break",
        "home": "Home",
        "end": "End",
    }
    if key in aliases:
        return aliases[key]
    if len(key) > 1 and key[0] == "f" and key[1:].isdigit():
        return key.upper()
    return key


class KillSwitchListener:
    """Runs the X thread. Callbacks are called on that thread; keep them short (schedule work
    onto your own loop)."""

    def __init__(
        self,
        on_chord: Callable[[], None],
        on_escape: Callable[[int], None] | None = None,
        *,
        display_name: str | None = None,
    ) -> None:
        self._on_chord = on_chord
        self._on_escape = on_escape
        self._display_name = display_name or os.environ.get("DISPLAY")
        self._commands: queue.Queue[tuple[str, Any, queue.Queue[ArmState]]] = queue.Queue()
        self._wake_r, self._wake_w = os.pipe()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._start_error: str | None = None
        self.state = ArmState(False, "")
        self.escape_watch = on_escape is not None
        self.presses = 0

    # -- lifecycle (any thread)
    def start(self) -> None:
        if self._thread is not None:
            return
        if not self._display_name:
            raise KillSwitchError("no X display (DISPLAY is not set)")
        self._thread = threading.Thread(target=self._run, name="deskpilot-killswitch", daemon=True)
        self._thread.start()
        self._ready.wait(5.0)
        if self._start_error is not None:
            raise KillSwitchError(self._start_error)

    def arm(self, chord: str, timeout: float = 5.0) -> ArmState:
        return self._command("arm", chord, timeout)

    def disarm(self, timeout: float = 5.0) -> ArmState:
        return self._command("disarm", None, timeout)

    def stop(self) -> None:
        if self._thread is None:
            return
        self._commands.put(("stop", None, queue.Queue()))
        os.write(self._wake_w, b"x")
        self._thread.join(5.0)
        self._thread = None
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)

    def _command(self, name: str, arg: Any, timeout: float) -> ArmState:
        if self._thread is None:
            self.start()
        reply: queue.Queue[ArmState] = queue.Queue()
        self._commands.put((name, arg, reply))
        os.write(self._wake_w, b"x")
        try:
            return reply.get(timeout=timeout)
        except queue.Empty:
            raise KillSwitchError("the kill-switch thread did not answer") from None

    # -- the X thread
    def _run(self) -> None:
        from Xlib import XK, X, display, error
        from Xlib.ext import xinput

        try:
            d = display.Display(self._display_name)
        except Exception as exc:  # no display, no auth
            self._start_error = f"cannot open X display {self._display_name}: {exc}"
            self._ready.set()
            return
        root = d.screen().root
        xi_opcode: int | None = None
        escape_code = d.keysym_to_keycode(XK.string_to_keysym("Escape"))
        mod_codes = {d.keysym_to_keycode(XK.string_to_keysym(name)) for name in _MOD_KEYSYMS} - {0}
        if self.escape_watch:
            ext = d.query_extension("XInputExtension")
            if ext.present:
                xi_opcode = ext.major_opcode
                root.xinput_select_events(
                    [
                        (
                            _XI_ALL_MASTER_DEVICES,
                            xinput.RawKeyPressMask | xinput.RawKeyReleaseMask,
                        )
                    ]
                )
            else:
                log.warning("XInput2 missing: the person's Escape cannot be watched")
        d.sync()
        self._ready.set()

        grabbed: list[tuple[int, int]] = []
        chord_code = 0
        chord_mods = 0
        chord_down = False
        held: set[int] = set()

        def ungrab() -> None:
            for code, mods in grabbed:
                root.ungrab_key(code, mods)
            grabbed.clear()
            d.sync()

        def grab(chord: str) -> ArmState:
            nonlocal chord_code, chord_mods
            ungrab()
            if not chord:
                return ArmState(False, "")
            mods, key = chord_parts(chord)
            mask = 0
            for m in mods:
                bit = {
                    "ctrl": X.ControlMask,
                    "shift": X.ShiftMask,
                    "alt": X.Mod1Mask,
                    "super": X.Mod4Mask,
                }.get(m)
                if bit is None:
                    return ArmState(False, chord, f"unknown modifier {m!r}")
                mask |= bit
            keysym = XK.string_to_keysym(_keysym_name(key))
            code = d.keysym_to_keycode(keysym) if keysym else 0
            if not code:
                return ArmState(False, chord, f"no key for {key!r} on this keyboard")
            catcher = error.CatchError(error.BadAccess)
            for extra in (0, X.LockMask, X.Mod2Mask, X.LockMask | X.Mod2Mask):
                root.grab_key(
                    code, mask | extra, True, X.GrabModeAsync, X.GrabModeAsync, onerror=catcher
                )
                grabbed.append((code, mask | extra))
            d.sync()
            if catcher.get_error() is not None:
                ungrab()
                return ArmState(
                    False, chord, "another X client already grabs this chord (BadAccess)"
                )
            chord_code, chord_mods = code, mask
            return ArmState(True, chord)

        ignore = X.LockMask | X.Mod2Mask
        running = True
        while running:
            while True:
                try:
                    name, arg, reply = self._commands.get_nowait()
                except queue.Empty:
                    break
                if name == "stop":
                    running = False
                    break
                try:
                    if name == "arm":
                        self.state = grab(arg)
                    else:
                        ungrab()
                        self.state = ArmState(False, "")
                except Exception as exc:  # keep the thread alive; report
                    self.state = ArmState(False, str(arg or ""), f"grab failed: {exc}")
                reply.put(self.state)
            if not running:
                break
            while d.pending_events():
                ev = d.next_event()
                if ev.type == X.KeyPress and ev.detail == chord_code and chord_code:
                    if ((ev.state & ~ignore) & 0xFF) == chord_mods and not chord_down:
                        chord_down = True  # auto-repeat sends more presses: one kill per hold
                        self.presses += 1
                        self._safe(self._on_chord)
                elif ev.type == X.KeyRelease and ev.detail == chord_code:
                    chord_down = False
                elif ev.type == _GENERIC_EVENT and xi_opcode is not None:
                    raw = _raw_key(ev)
                    if raw is None:
                        continue
                    evtype, keycode = raw
                    if evtype == _XI_RAW_KEY_RELEASE:
                        held.discard(keycode)
                        continue
                    if evtype != _XI_RAW_KEY_PRESS:
                        continue
                    plain = keycode == escape_code and not (held & mod_codes)
                    if plain and keycode not in held and self._on_escape is not None:
                        self._safe(partial(self._on_escape, keycode))
                    held.add(keycode)
            try:
                select.select([d.fileno(), self._wake_r], [], [], 0.5)
            except (OSError, ValueError):
                break
            try:
                while select.select([self._wake_r], [], [], 0)[0]:
                    os.read(self._wake_r, 64)
            except OSError:
                break
        try:
            ungrab()
            d.close()
        except Exception:
            pass

    @staticmethod
    def _safe(fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception:
            log.exception("kill-switch callback failed")


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
