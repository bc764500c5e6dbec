"""The kill switch: a global hot key grabbed on the X display, and the Escape watcher.

One daemon thread owns its own X connection (python-xlib is not thread-safe, and the grab must
not share a connection with anything else). It

* grabs the chord from the ``killSwitch`` setting (default ``ctrl+shift+Escape``) on the root
  window with ``XGrabKey``, once per Lock/NumLock combination so Caps Lock or Num Lock being on
  does not defeat it; the grab also keeps the chord from reaching applications;
* watches XInput2 raw key events on the root window (no grab: apps still get every key) to see
  the person's plain Escape (Escape with no modifier held); the broker decides whether an
  action is in flight and whether the Escape was our own (see ``kernel.interrupts``).

**One desktop, several deskpilot processes.** Only one X client can grab a chord, so a second
``deskpilot serve`` on the same display cannot arm the same chord (``BadAccess``). The switch
is shared through the X server instead, which is the one thing every process on the display
has in common and which forgets a client the moment it dies:

* a process that grabbed the chord advertises it by owning the selection
  ``_DESKPILOT_KILL_SWITCH_<keycode>_<mods>`` with a small unmapped window carrying
  ``_NET_WM_PID``;
* every press it catches is also broadcast as a new value of the root window property
  ``_DESKPILOT_KILL`` (pid, token); every deskpilot kill-switch thread on the display selects
  ``PropertyChangeMask`` on the root window and treats another process's broadcast as a press;
* a process refused the grab looks up that selection's owner: a deskpilot process there means
  this one is ``watching`` it (its presses stop us too); no owner means some other program holds
  the chord and the switch is ``unavailable``. A watcher follows the owner's window
  (``DestroyNotify``): when that process exits it grabs the chord itself at once (and retries
  every 2 s otherwise), so the display is never left without an armed switch while one
  deskpilot process runs.

The state (``armed`` / ``watching`` / ``unavailable`` / ``off``, the holder's pid, the cause) is
in :class:`ArmState`, reported by ``status``, ``get_capabilities`` and ``deskpilot doctor``.

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
import secrets
import select
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from deskpilot.kernel.policy.signals import chord_parts
from deskpilot.protocol.chords import keysym_name

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


#: canonical modifier (see ``protocol.chords.KILL_SWITCH_MODIFIERS``) → its Xlib mask name
MODIFIER_MASKS = {
    "ctrl": "ControlMask",
    "shift": "ShiftMask",
    "alt": "Mod1Mask",
    "super": "Mod4Mask",
}

KILL_PROPERTY = "_DESKPILOT_KILL"
SELECTION_PREFIX = "_DESKPILOT_KILL_SWITCH"
RETRY_GRAB_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class ArmState:
    armed: bool
    chord: str
    error: str | None = None
    #: armed | watching | unavailable | off ("" = derived from the fields above)
    mode: str = ""
    #: the deskpilot process whose grab we watch (mode watching)
    holder_pid: int | None = None

    @property
    def state(self) -> str:
        if self.mode:
            return self.mode
        if self.armed:
            return "armed"
        return "unavailable" if self.error else "off"

    def to_json(self) -> dict[str, Any]:
        cause = self.error
        if self.state == "watching":
            cause = (
                f"deskpilot process pid {self.holder_pid} already grabs {self.chord}; its "
                "presses are broadcast on the display and stop this process too"
            )
        elif self.state == "off" and not cause:
            cause = "not armed in this process (not started, or the killSwitch setting is empty)"
        return {
            "state": self.state,
            "armed": self.armed,
            "chord": self.chord,
            "holderPid": self.holder_pid,
            "cause": cause,
            "error": self.error,
            # every deskpilot kill switch on this display stops this process
            "sharedOnDisplay": self.state in ("armed", "watching"),
        }


class KillSwitchError(RuntimeError):
    pass


def _keysym_name(key: str) -> str:
    """Our chord key spelling → an X keysym name (the table is shared with the settings store)."""
    return keysym_name(key)


class KillSwitchListener:
    """Runs the X thread. Callbacks are called on that thread; keep them short (schedule work
    onto your own loop)."""

    def __init__(
        self,
        on_chord: Callable[[], None],
        on_escape: Callable[[int], None] | None = None,
        *,
        display_name: str | None = None,
        on_state: Callable[[ArmState], None] | None = None,
        broadcast: bool = True,
    ) -> None:
        self._on_chord = on_chord
        self._on_escape = on_escape
        self._on_state = on_state
        self._broadcast = broadcast
        self._token = secrets.randbits(31)
        self.remote_presses = 0
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
        from Xlib import XK, X, Xatom, display, error
        from Xlib.ext import xinput
        from Xlib.protocol import request

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
        kill_atom = d.intern_atom(KILL_PROPERTY)
        pid_atom = d.intern_atom("_NET_WM_PID")
        # another deskpilot process's presses arrive as changes of a root property
        root.change_attributes(event_mask=X.PropertyChangeMask)
        d.sync()
        self._ready.set()

        grabbed: list[tuple[int, int]] = []
        chord_code = 0
        chord_mods = 0
        chord_down = False
        held: set[int] = set()
        owner_win: Any = None  # our advertisement window, made on the first grab
        owned_sel = 0  # the selection atom we own while armed
        watched: Any = None  # the other process's advertisement window we follow
        desired = ""  # the chord we were asked to arm
        retry_at = 0.0
        seq = 0

        def release_selection() -> None:
            nonlocal owned_sel
            if owned_sel:
                request.SetSelectionOwner(
                    display=d.display, window=X.NONE, selection=owned_sel, time=X.CurrentTime
                )
                owned_sel = 0

        def unwatch() -> None:
            nonlocal watched
            if watched is not None:
                with contextlib.suppress(Exception):
                    watched.change_attributes(event_mask=0, onerror=error.CatchError())
                watched = None

        def ungrab() -> None:
            nonlocal chord_code
            for code, mods in grabbed:
                root.ungrab_key(code, mods)
            grabbed.clear()
            chord_code = 0
            release_selection()
            unwatch()
            d.sync()

        def owner_pid(sel: int) -> tuple[Any, int | None]:
            """The window owning ``sel`` and its pid; (None, None) when nobody owns it."""
            owner = d.get_selection_owner(sel)
            wid = getattr(owner, "id", owner)
            if not wid:
                return None, None
            win = d.create_resource_object("window", wid)
            catcher = error.CatchError(error.BadWindow)
            prop = win.get_full_property(pid_atom, X.AnyPropertyType)
            if catcher.get_error() is not None or prop is None or not len(prop.value):
                return win, None
            return win, int(prop.value[0])

        def advertise(sel: int) -> None:
            nonlocal owner_win, owned_sel
            if owner_win is None:
                owner_win = root.create_window(
                    -10, -10, 1, 1, 0, 0, window_class=X.InputOnly, override_redirect=True
                )
                owner_win.change_property(pid_atom, Xatom.CARDINAL, 32, [os.getpid()])
                owner_win.set_wm_name("deskpilot kill switch")
            owner_win.set_selection_owner(sel, X.CurrentTime)
            owned_sel = sel

        def grab(chord: str) -> ArmState:
            nonlocal chord_code, chord_mods, watched, retry_at
            ungrab()
            if not chord:
                return ArmState(False, "", mode="off")
            mods, key = chord_parts(chord)
            mask = 0
            for m in mods:
                attr = MODIFIER_MASKS.get(m)
                bit = getattr(X, attr) if attr else None
                if bit is None:
                    return ArmState(False, chord, f"unknown modifier {m!r}", mode="unavailable")
                mask |= bit
            keysym = XK.string_to_keysym(_keysym_name(key))
            code = d.keysym_to_keycode(keysym) if keysym else 0
            if not code:
                return ArmState(
                    False, chord, f"no key for {key!r} on this keyboard", mode="unavailable"
                )
            sel = d.intern_atom(f"{SELECTION_PREFIX}_{code}_{mask}")
            catcher = error.CatchError(error.BadAccess)
            for extra in (0, X.LockMask, X.Mod2Mask, X.LockMask | X.Mod2Mask):
                root.grab_key(
                    code, mask | extra, True, X.GrabModeAsync, X.GrabModeAsync, onerror=catcher
                )
                grabbed.append((code, mask | extra))
            d.sync()
            if catcher.get_error() is None:
                chord_code, chord_mods = code, mask
                advertise(sel)
                d.sync()
                return ArmState(True, chord, mode="armed")
            ungrab()
            retry_at = time.monotonic() + RETRY_GRAB_SECONDS
            # a deskpilot process that grabbed it a moment ago may not own the selection yet
            win: Any = None
            pid: int | None = None
            for _ in range(5):
                win, pid = owner_pid(sel)
                if win is not None:
                    break
                time.sleep(0.04)
            if win is None or pid is None:
                return ArmState(
                    False,
                    chord,
                    "another X client (not deskpilot) already grabs this chord (BadAccess); "
                    "presses of it cannot be caught on this display",
                    mode="unavailable",
                )
            catcher = error.CatchError(error.BadWindow)
            win.change_attributes(event_mask=X.StructureNotifyMask, onerror=catcher)
            d.sync()
            if catcher.get_error() is not None:  # it exited meanwhile: try again now
                retry_at = 0.0
            else:
                watched = win
            return ArmState(False, chord, None, mode="watching", holder_pid=pid)

        def set_state(new: ArmState) -> None:
            changed = new != self.state
            self.state = new
            if changed and self._on_state is not None:
                self._safe(partial(self._on_state, new))

        def broadcast() -> None:
            nonlocal seq
            seq += 1
            root.change_property(
                kill_atom, Xatom.CARDINAL, 32, [os.getpid(), self._token, seq & 0x7FFFFFFF]
            )
            d.flush()

        def remote_press() -> bool:
            prop = root.get_full_property(kill_atom, X.AnyPropertyType)
            if prop is None or len(prop.value) < 2:
                return False
            return int(prop.value[1]) != self._token

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
                        desired = str(arg or "")
                        self.state = grab(desired)
                    else:
                        desired = ""
                        ungrab()
                        self.state = ArmState(False, "", mode="off")
                except Exception as exc:  # keep the thread alive; report
                    self.state = ArmState(
                        False, str(arg or ""), f"grab failed: {exc}", mode="unavailable"
                    )
                reply.put(self.state)
            if not running:
                break
            if desired and _retryable(self.state) and time.monotonic() >= retry_at:
                try:
                    set_state(grab(desired))
                except Exception:
                    log.exception("kill-switch re-grab failed")
                    retry_at = time.monotonic() + RETRY_GRAB_SECONDS
            while d.pending_events():
                ev = d.next_event()
                if ev.type == X.KeyPress and ev.detail == chord_code and chord_code:
                    if ((ev.state & ~ignore) & 0xFF) == chord_mods and not chord_down:
                        chord_down = True  # auto-repeat sends more presses: one kill per hold
                        self.presses += 1
                        if self._broadcast:
                            self._safe(broadcast)
                        self._safe(self._on_chord)
                elif ev.type == X.KeyRelease and ev.detail == chord_code:
                    chord_down = False
                elif ev.type == X.PropertyNotify:
                    if ev.atom == kill_atom and ev.state == X.PropertyNewValue and remote_press():
                        self.remote_presses += 1
                        self._safe(self._on_chord)
                elif ev.type == X.DestroyNotify:
                    if watched is not None and ev.window.id == watched.id:
                        # the process we watched is gone: the chord is free, take it over
                        watched = None
                        retry_at = 0.0
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
            if desired and retry_at == 0.0 and _retryable(self.state):
                continue  # take over at once, without waiting for the select timeout
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


def _retryable(state: ArmState) -> bool:
    """Watching another process, or refused by a grab that may be let go: try again."""
    if state.state == "watching":
        return True
    return state.state == "unavailable" and "BadAccess" in (state.error or "")


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


def probe(chord: str, display_name: str | None = None) -> ArmState:
    """What a deskpilot process started now would get for ``chord``: armed (the chord is free),
    watching (another deskpilot process holds it, pid named) or unavailable (the cause). For
    ``deskpilot doctor``. The grab lasts a few milliseconds; a press during it is broadcast
    like any other, so it still stops every deskpilot process on the display."""
    listener = KillSwitchListener(lambda: None, display_name=display_name)
    try:
        listener.start()
        state = listener.arm(chord)
    except KillSwitchError as exc:
        return ArmState(False, chord, str(exc), mode="unavailable")
    finally:
        listener.stop()
    return state
