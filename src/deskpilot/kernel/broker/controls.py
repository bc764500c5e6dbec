"""Control of a session from outside its actions (docs/kernel.md, "Control").

Pause/takeover is a hard pause: observation cache cleared, in-flight action ended, pending
confirmations expired, lane released. Resume only from paused; it re-claims the lane and
restarts the operator through the resume hooks on every path. Stop is terminal; kill is stop
with reason ``kill_switch``. bind_target only while paused.

In-flight actions end this way: the backend's ``cancel_session`` (stop/kill) makes the host
forget the session; an action still running is aborted through the backend's
``abort_session`` when it has one (the host client stops the host process — there is no finer
cancellation inside the host; it releases held keys and buttons on the way out). With the
``gracefulCancel`` flag the in-flight action first gets a short grace to end on its own, which
keeps the host process alive for quick actions.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from deskpilot.hostclient.api import DesktopBackend
from deskpilot.kernel.coordinator import DesktopCoordinator
from deskpilot.kernel.flags import Flags
from deskpilot.kernel.frames import CurrentFrames
from deskpilot.kernel.halt import Halt
from deskpilot.kernel.interrupts import InFlight, InFlightRegistry
from deskpilot.kernel.rollout import RolloutController
from deskpilot.kernel.session_manager import SessionManager
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import CancelReason, EventType, SessionState
from deskpilot.protocol.wire import TargetSpec
from deskpilot.store.confirmations import ConfirmationRepository
from deskpilot.store.db import Database
from deskpilot.store.session_rows import SessionRow

log = logging.getLogger(__name__)

CANCEL_GRACE_SECONDS = 0.25

ResumeHook = Callable[[SessionRow], Awaitable[None]]
StopHook = Callable[[SessionRow, CancelReason | None], None]


@dataclass
class ControlHooks:
    """Where the runtime plugs its operator in: resume relaunches it (every resume path comes
    through the broker), pause/stop tell it to let go."""

    on_resume: list[ResumeHook] = field(default_factory=list)
    on_pause: list[StopHook] = field(default_factory=list)
    on_stop: list[StopHook] = field(default_factory=list)


async def end_inflight(backend: DesktopBackend, flags: Flags, item: InFlight, reason: str) -> None:
    """End one in-flight action: the grace (``gracefulCancel``), then abort, then cancel."""
    task = item.task
    if task is None or task.done():
        return
    if flags.enabled("gracefulCancel"):
        with contextlib.suppress(TimeoutError, Exception):
            await asyncio.wait_for(asyncio.shield(task), CANCEL_GRACE_SECONDS)
        if task.done():
            return
    with contextlib.suppress(DeskpilotError):
        await backend.abort_session(item.session_id, reason)
    if not task.done():
        task.cancel()
    with contextlib.suppress(BaseException):
        await task


@dataclass
class Controls:
    db: Database
    backend: DesktopBackend
    sessions: SessionManager
    halt: Halt
    coordinator: DesktopCoordinator
    frames: CurrentFrames
    inflight: InFlightRegistry
    flags: Flags
    rollout: RolloutController
    hooks: ControlHooks

    async def _quiesce(self, session_id: str, reason: str, *, forget: bool) -> None:
        self.frames.drop(session_id)
        ConfirmationRepository(self.db).expire_session(session_id)
        if forget:
            with contextlib.suppress(DeskpilotError):
                await self.backend.cancel_session(session_id)
        items = self.inflight.for_session(session_id)
        if items:
            await asyncio.gather(
                *(end_inflight(self.backend, self.flags, i, reason) for i in items)
            )

    async def pause(
        self, session_id: str, *, takeover: bool = False, by: str | None = None
    ) -> SessionRow:
        """Hard pause (and takeover, which also records who took over)."""
        t0 = time.monotonic()
        row = self.sessions.require(session_id)
        if row.state == SessionState.PAUSED:
            return row
        who = by or ("person" if takeover else "agent")
        row = self.sessions.transition(
            session_id,
            SessionState.PAUSED,
            payload={"by": who, "takeover": takeover},
            paused_by=who,
            taken_over_by=who if takeover else None,
        )
        self.coordinator.release(session_id)
        # pausing keeps the session: the backend keeps its binding; only work in flight ends
        await self._quiesce(session_id, "paused", forget=False)
        self.rollout.record_takeover_stop((time.monotonic() - t0) * 1000)
        for hook in list(self.hooks.on_pause):
            _call_hook(hook, row, None)
        return row

    async def resume(self, session_id: str) -> SessionRow:
        row = self.sessions.require(session_id)
        if row.state != SessionState.PAUSED:
            raise DeskpilotError(
                ErrorCode.INVALID_STATE_TRANSITION,
                f"only a paused session resumes; session {session_id} is {row.state.value}"
                + (" (canceled sessions never resume; start a new one)" if row.terminal else ""),
                details={"state": row.state.value},
            )
        self.halt.check(row.agent_session_id)
        await self.coordinator.claim(session_id, row.agent_session_id)
        row = self.sessions.transition(
            session_id, SessionState.OBSERVING, allowed_from=[SessionState.PAUSED]
        )
        try:
            for hook in list(self.hooks.on_resume):
                await hook(row)
        except Exception:
            # the operator did not restart: do not leave a running session nobody drives
            self.sessions.transition(
                session_id, SessionState.PAUSED, payload={"by": "kernel", "reason": "resume_failed"}
            )
            self.coordinator.release(session_id)
            raise
        return row

    async def stop(
        self,
        session_id: str,
        reason: CancelReason = CancelReason.USER_STOP,
        *,
        note: str | None = None,
    ) -> SessionRow:
        """End the session; ``note`` is the person's or agent's own words for why (kept in
        the ``session_canceled`` event, at most 500 characters)."""
        t0 = time.monotonic()
        row = self.sessions.require(session_id)
        if row.terminal:
            return row
        row = self.sessions.transition(
            session_id,
            SessionState.CANCELED,
            cancel_reason=reason,
            payload={"note": note[:500]} if note else None,
        )
        self.coordinator.release(session_id)
        await self._quiesce(session_id, f"stopped ({reason.value})", forget=True)
        self.rollout.record_takeover_stop((time.monotonic() - t0) * 1000)
        for hook in list(self.hooks.on_stop):
            _call_hook(hook, row, reason)
        return row

    async def bind_target(self, session_id: str, target: TargetSpec) -> SessionRow:
        row = self.sessions.require(session_id)
        if row.state != SessionState.PAUSED:
            raise DeskpilotError(
                ErrorCode.INVALID_STATE_TRANSITION,
                "Pause the computer session before changing its bound target window.",
                details={"state": row.state.value},
            )
        await self.backend.bind_target(session_id, target)
        self.frames.drop(session_id)
        self.sessions.rows.set_target(session_id, target)
        self.sessions.record(session_id, EventType.TARGET_BOUND, payload={"target": target.wire()})
        return self.sessions.require(session_id)

    async def drop_closed_binding(self, row: SessionRow) -> bool:
        """Forget a bound window that no longer exists; True when it was dropped."""
        bound = row.target
        if bound is None or not bound.window_id:
            return False
        try:
            windows = await self.backend.list_windows()
        except DeskpilotError:
            return False
        if any(w.window_id.lower() == bound.window_id.lower() for w in windows):
            return False
        await self.backend.bind_target(row.id, TargetSpec())
        self.sessions.rows.set_target(row.id, TargetSpec())
        self.sessions.record(
            row.id,
            EventType.TARGET_BOUND,
            payload={"target": None, "reason": "bound_window_closed"},
        )
        return True


def _call_hook(hook: StopHook, row: SessionRow, reason: CancelReason | None) -> None:
    try:
        hook(row, reason)
    except Exception:  # a runtime hook must not break a stop
        log.exception("control hook failed")
