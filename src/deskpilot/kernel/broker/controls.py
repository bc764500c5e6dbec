"""Control of a session from outside its actions (docs/kernel.md, "Control").

Pause/takeover is a hard pause: observation cache cleared, in-flight action ended, pending
confirmations expired, lane released. A takeover also engages the desktop-wide hold
(kernel/takeover.py: every session's actions are refused while the person has the desktop),
also when the session is paused already, and remembers what the session's last frame showed
(kernel/handback.py). Resume only from paused; it re-claims the lane, ends the session's
hold when it has one (the hand back: its note waits in ``handbacks`` for whoever drives the
session next) and restarts the operator through the resume hooks on every path. Stop is
terminal and ends the session's hold too; kill is stop with reason ``kill_switch``.
bind_target only while paused.

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
from deskpilot.kernel.handback import HandBacks
from deskpilot.kernel.interrupts import InFlight, InFlightRegistry
from deskpilot.kernel.rollout import RolloutController
from deskpilot.kernel.session_manager import SessionManager
from deskpilot.kernel.takeover import Takeover
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import CancelReason, EventType, SessionState
from deskpilot.protocol.wire import TargetSpec
from deskpilot.store.confirmations import ConfirmationRepository
from deskpilot.store.db import Database
from deskpilot.store.session_rows import SessionRow

log = logging.getLogger(__name__)

CANCEL_GRACE_SECONDS = 0.25

#: who a control names when the agent's own runtime asks (no ``by``)
AGENT = "agent"
#: who may pause a session that the agent may then resume itself (the kernel pauses a
#: session whose resume hooks failed; it records no name)
AGENT_PAUSERS = frozenset({AGENT, "kernel"})
#: the reason code of an agent's resume refused because the person paused the session
PAUSED_BY_PERSON = "paused_by_person"

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
    takeover: Takeover
    handbacks: HandBacks = field(default_factory=HandBacks)
    #: sessions paused out of ``handoff_required`` (the agent may resume those)
    _from_handoff: set[str] = field(default_factory=set)

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
        """Hard pause (and takeover, which also records who took over and engages the
        desktop-wide hold)."""
        t0 = time.monotonic()
        row = self.sessions.require(session_id)
        # no ``by``: the agent's own runtime (its MCP pause/takeover, a task's operator); the
        # person's controls (dashboard, CLI, control requests) always say who they are
        who = by or AGENT
        if row.state == SessionState.HANDOFF_REQUIRED:
            # the session waited for the person: this pause only turns it back into a paused
            # one that the agent may resume once the person did their part
            self._from_handoff.add(session_id)
        else:
            self._from_handoff.discard(session_id)
        if row.state == SessionState.PAUSED:
            if takeover and self.takeover.of_session(session_id) is None:
                return self._take_over_paused(row, who)
            return row
        # what the agent last saw, before the pause drops it (a takeover's hand back
        # compares the window with it; kept in this process only)
        self.handbacks.seen(session_id, self.frames.get(session_id))
        row = self.sessions.transition(
            session_id,
            SessionState.PAUSED,
            payload={"by": who, "takeover": takeover},
            paused_by=who,
            taken_over_by=who if takeover else None,
        )
        if takeover:
            hold = self.takeover.engage(session_id, who)
            self.handbacks.begin(session_id, hold.held_by, hold.started_at)
        self.coordinator.release(session_id)
        # pausing keeps the session: the backend keeps its binding; only work in flight ends
        await self._quiesce(session_id, "paused", forget=False)
        self.rollout.record_takeover_stop((time.monotonic() - t0) * 1000)
        for hook in list(self.hooks.on_pause):
            _call_hook(hook, row, None)
        return row

    def _take_over_paused(self, row: SessionRow, who: str) -> SessionRow:
        """A takeover of a session that is paused already: the hold and who holds it (the
        frame was dropped at the pause; the one it showed then is the hand back's "before")."""
        hold = self.takeover.engage(row.id, who)
        self.handbacks.begin(row.id, hold.held_by, hold.started_at)
        person_paused = row.paused_by is not None and row.paused_by not in AGENT_PAUSERS
        self.sessions.rows.set_state(
            row.id,
            SessionState.PAUSED,
            expect=SessionState.PAUSED,
            # the agent's takeover of a pause the person made leaves it theirs to resume
            paused_by=row.paused_by if person_paused and who == AGENT else who,
            taken_over_by=who,
        )
        self.sessions.record(
            row.id,
            EventType.SESSION_PAUSED,
            payload={"by": who, "takeover": True, "from": SessionState.PAUSED.value},
        )
        row = self.sessions.require(row.id)
        for hook in list(self.hooks.on_pause):
            _call_hook(hook, row, None)
        return row

    async def resume(self, session_id: str, *, by: str | None = None) -> SessionRow:
        """Back to observing; a resume of the session that holds the takeover hands the
        desktop back (the hold ends, the hand back waits in ``handbacks``)."""
        row = self.sessions.require(session_id)
        if row.state != SessionState.PAUSED:
            raise DeskpilotError(
                ErrorCode.INVALID_STATE_TRANSITION,
                f"only a paused session resumes; session {session_id} is {row.state.value}"
                + (" (canceled sessions never resume; start a new one)" if row.terminal else ""),
                details={"state": row.state.value},
            )
        self.halt.check(row.agent_session_id)
        if by is None or by == AGENT:
            self._refuse_agent_resume(row)
        held = self.takeover.of_session(session_id)
        await self.coordinator.claim(session_id, row.agent_session_id)
        payload: dict[str, object] = {"by": by or AGENT}
        if held is not None:
            payload["handBack"] = True
        row = self.sessions.transition(
            session_id,
            SessionState.OBSERVING,
            payload=payload,
            allowed_from=[SessionState.PAUSED],
        )
        self._from_handoff.discard(session_id)
        if held is not None:
            ended = self.takeover.end(session_id, by or held.held_by)
            self.handbacks.hand_back(session_id, by, ended.ended_at if ended is not None else None)
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

    def _refuse_agent_resume(self, row: SessionRow) -> None:
        """A pause the person made is theirs to end (as a takeover is): the agent's resume
        of it is refused with ``handoff_required`` saying who paused it and since when."""
        who = row.paused_by
        if who is None or who in AGENT_PAUSERS or row.id in self._from_handoff:
            return
        since = row.updated_at
        when = time.strftime("%H:%M:%S", time.localtime(since))
        raise DeskpilotError(
            ErrorCode.HANDOFF_REQUIRED,
            f"session {row.id} was paused by the person ({who}) at {when}; only they resume "
            "it (the dashboard or `deskpilot session resume`). Wait for them; observing "
            "still works.",
            retryable=False,
            details={
                "reason": PAUSED_BY_PERSON,
                "pausedBy": who,
                "since": int(since * 1000),
                "sessionId": row.id,
            },
        )

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
        self.takeover.end(session_id, "stopped")
        self.handbacks.forget(session_id)
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
        if target.window_id:
            await self._require_window(target.window_id)
        await self.backend.bind_target(session_id, target)
        self.frames.drop(session_id)
        self.sessions.rows.set_target(session_id, target)
        self.sessions.record(
            session_id,
            EventType.TARGET_BOUND,
            payload={
                "target": target.wire(),
                "previous": row.target.wire() if row.target is not None else None,
            },
        )
        # the answer is the row with its new target: the window did change
        return self.sessions.require(session_id)

    async def _require_window(self, window_id: str) -> None:
        """A window to bind must exist and not be minimised; else ``target_not_found``
        naming it, and nothing changes."""
        windows = await self.backend.list_windows()
        found = next((w for w in windows if w.window_id.lower() == window_id.lower()), None)
        if found is None or found.minimized:
            why = "is minimised" if found is not None else "does not exist"
            raise DeskpilotError(
                ErrorCode.TARGET_NOT_FOUND,
                f"window {window_id} {why}; nothing was changed (list the windows and bind "
                "one that is shown)",
                details={
                    "windowId": window_id,
                    "reason": "window_minimized" if found is not None else "no_such_window",
                },
            )

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
