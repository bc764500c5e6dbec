"""The kill-switch thread and the commands other threads send it.

One daemon thread owns its own X connection (python-xlib is not thread-safe, and the grab must
not share a connection with anything else). Every other thread talks to it through a command
queue (``arm`` / ``disarm`` / ``stop``) and a wake-up pipe, and reads :attr:`state`; the
thread's loop answers the commands, retries a grab that may have been let go, dispatches the X
events that arrived, then sleeps until the next event, command or 0.5 s.

It is armed at start from the settings — so a fresh install, which has no settings rows, is
armed with the default chord — and re-armed when the setting changes, in this process (a
settings listener) or in another one (the settings revision, checked every 2 s); that is the
kernel's part (docs/kernel.md, "Kill switch"). Repeated presses are coalesced twice: key
auto-repeat is ignored until the key is released (``events``), and the kernel ignores presses
while a kill is still running.

python-xlib is imported on the thread only, so this module imports without a display.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import secrets
import select
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from .state import RETRY_GRAB_SECONDS, ArmState, KillSwitchError, retryable

if TYPE_CHECKING:
    from .events import EventDispatch
    from .grab import ChordGrab
    from .session import DisplaySession

log = logging.getLogger(__name__)


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
        self._desired = ""  # the chord we were asked to arm (the X thread's own)
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
        # python-xlib, on this thread only
        from .events import EventDispatch
        from .session import DisplaySession, connect

        self._desired = ""
        try:
            d = connect(self._display_name)
        except Exception as exc:  # no display, no auth
            self._start_error = f"cannot open X display {self._display_name}: {exc}"
            self._ready.set()
            return
        session = DisplaySession(d, self._token)
        events = EventDispatch(
            session,
            escape_watch=self.escape_watch,
            on_chord=partial(self._chord_pressed, session),
            on_remote=self._remote_pressed,
            on_escape=self._escape_pressed,
        )
        session.sync()
        self._ready.set()
        self._loop(session, events)
        with contextlib.suppress(Exception):
            session.close()

    def _loop(self, session: DisplaySession, events: EventDispatch) -> None:
        """Commands, a due re-grab, the pending events, then wait; until ``stop`` or a dead
        connection."""
        chord = session.chord
        while self._serve_commands(chord):
            self._retry_grab(chord)
            events.dispatch_pending()
            if self._desired and chord.retry_at == 0.0 and retryable(self.state):
                continue  # take over at once, without waiting for the select timeout
            if not self._wait(session):
                return

    def _serve_commands(self, chord: ChordGrab) -> bool:
        """Answer every queued command; False once told to stop (what follows goes unanswered)."""
        while True:
            try:
                name, arg, reply = self._commands.get_nowait()
            except queue.Empty:
                return True
            if name == "stop":
                return False
            reply.put(self._apply(chord, name, arg))

    def _apply(self, chord: ChordGrab, name: str, arg: Any) -> ArmState:
        try:
            if name == "arm":
                self._desired = str(arg or "")
                self.state = chord.grab(self._desired)
            else:
                self._desired = ""
                chord.ungrab()
                self.state = ArmState(False, "", mode="off")
        except Exception as exc:  # keep the thread alive; report
            self.state = ArmState(False, str(arg or ""), f"grab failed: {exc}", mode="unavailable")
        return self.state

    def _retry_grab(self, chord: ChordGrab) -> None:
        """Watching, or refused by a grab that may be gone: try again once it is due."""
        if self._desired and retryable(self.state) and time.monotonic() >= chord.retry_at:
            try:
                self._set_state(chord.grab(self._desired))
            except Exception:
                log.exception("kill-switch re-grab failed")
                chord.retry_at = time.monotonic() + RETRY_GRAB_SECONDS

    def _wait(self, session: DisplaySession) -> bool:
        """Sleep until an X event, a command or 0.5 s; False when the connection or pipe died."""
        try:
            select.select([session.fileno(), self._wake_r], [], [], 0.5)
        except (OSError, ValueError):
            return False
        try:
            while select.select([self._wake_r], [], [], 0)[0]:
                os.read(self._wake_r, 64)
        except OSError:
            return False
        return True

    # -- what the thread reports
    def _set_state(self, new: ArmState) -> None:
        changed = new != self.state
        self.state = new
        if changed and self._on_state is not None:
            self._safe(partial(self._on_state, new))

    def _chord_pressed(self, session: DisplaySession) -> None:
        self.presses += 1
        if self._broadcast:
            self._safe(session.broadcast)
        self._safe(self._on_chord)

    def _remote_pressed(self) -> None:
        self.remote_presses += 1
        self._safe(self._on_chord)

    def _escape_pressed(self, keycode: int) -> None:
        if self._on_escape is not None:
            self._safe(partial(self._on_escape, keycode))

    @staticmethod
    def _safe(fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception:
            log.exception("kill-switch callback failed")


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
