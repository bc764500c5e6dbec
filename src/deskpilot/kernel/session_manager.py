"""Session state machine and timeline: every state change is checked against TRANSITIONS and
lands in the same transaction as the timeline event that tells it.

Events that tell who did what: ``session_paused`` (with who paused and whether it
was a takeover), ``session_resumed``, and ``session_canceled`` always carries its reason, so
a kill-switch stop (``kill_switch``) is told apart from a person's stop (``user_stop``).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import (
    EXECUTABLE_STATES,
    REFUSED_BY,
    SESSION_STATE,
    TERMINAL_STATES,
    CancelReason,
    EventType,
    SessionState,
    TaskContract,
    can_transition,
    operator_state,
)
from deskpilot.protocol.wire import TargetSpec
from deskpilot.store.db import Database
from deskpilot.store.session_rows import SessionMode, SessionRepository, SessionRow
from deskpilot.store.timeline import TimelineEventRow, TimelineRepository

__all__ = ["SessionListener", "SessionManager", "operator_state"]

SessionListener = Callable[[SessionRow, TimelineEventRow | None], None]


#: The event each state change produces; phase moves inside an active session produce none
#: (actions have their own events).
_STATE_EVENTS: dict[SessionState, EventType] = {
    SessionState.PAUSED: EventType.SESSION_PAUSED,
    SessionState.HANDOFF_REQUIRED: EventType.HANDOFF_REQUIRED,
    SessionState.COMPLETED: EventType.SESSION_COMPLETED,
    SessionState.FAILED: EventType.SESSION_FAILED,
    SessionState.CANCELED: EventType.SESSION_CANCELED,
}


class SessionManager:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.rows = SessionRepository(db)
        self.timeline = TimelineRepository(db)
        self._listeners: list[SessionListener] = []
        self._waiters: set[asyncio.Future[None]] = set()

    # -- reading
    def get(self, session_id: str) -> SessionRow | None:
        return self.rows.get(session_id)

    def require(self, session_id: str) -> SessionRow:
        row = self.rows.get(session_id)
        if row is None:
            raise DeskpilotError(ErrorCode.SESSION_NOT_FOUND, f"no computer session {session_id!r}")
        return row

    def require_executable(self, session_id: str) -> SessionRow:
        """The session's row while it may act; otherwise its refusal, which carries
        ``details[REFUSED_BY] == SESSION_STATE``. That marks an error this check raised, and a
        check sends nothing to the desktop: ``session_canceled`` is also what an action cut off
        in flight ends with (the host was stopped under it, so it may have run), and only the
        marker tells the two apart for whoever reports what happened."""
        row = self.require(session_id)
        if row.state in EXECUTABLE_STATES:
            return row
        if row.state == SessionState.CANCELED:
            raise DeskpilotError(
                ErrorCode.SESSION_CANCELED,
                f"session {session_id} was canceled ({row.cancel_reason or 'no reason'}); "
                "start a new one",
                details={"reason": row.cancel_reason or "", REFUSED_BY: SESSION_STATE},
            )
        raise DeskpilotError(
            ErrorCode.SESSION_NOT_EXECUTABLE,
            f"session {session_id} is {row.state.value}; actions run only while it is "
            "observing, planning, waiting_approval or acting",
            details={"state": row.state.value, REFUSED_BY: SESSION_STATE},
        )

    def active(self, agent_session_id: str | None = None) -> list[SessionRow]:
        return self.rows.list_active(agent_session_id)

    def events(self, session_id: str, after_seq: int = 0) -> list[TimelineEventRow]:
        return self.timeline.list(session_id, after_seq=after_seq)

    # -- writing
    def create(
        self,
        agent_session_id: str,
        mode: SessionMode,
        contract: TaskContract | None = None,
        target: TargetSpec | None = None,
        *,
        session_id: str | None = None,
    ) -> SessionRow:
        sid = session_id or f"cs_{uuid.uuid4().hex[:20]}"
        contract = contract or TaskContract()
        with self.db.transaction() as conn:
            self.rows.insert(sid, agent_session_id, mode, contract, target, conn=conn)
            event = self.timeline.append(
                sid,
                EventType.SESSION_STARTED,
                payload={
                    "mode": mode,
                    "agentSessionId": agent_session_id,
                    "target": None if target is None else target.wire(),
                },
                conn=conn,
            )
        row = self.require(sid)
        self.notify(row, event)
        return row

    def transition(
        self,
        session_id: str,
        to: SessionState,
        *,
        payload: dict[str, Any] | None = None,
        cancel_reason: CancelReason | None = None,
        paused_by: str | None = None,
        taken_over_by: str | None = None,
        allowed_from: Iterable[SessionState] | None = None,
    ) -> SessionRow:
        """Move a session to ``to``; raises invalid_state_transition when illegal.

        The write is a compare-and-set on the state read just before, so two racing
        transitions cannot both succeed from the same state.
        """
        for _ in range(3):
            row = self.require(session_id)
            if row.state == to and to != SessionState.PAUSED:
                return row
            allowed = set(allowed_from) if allowed_from is not None else None
            if not can_transition(row.state, to) or (
                allowed is not None and row.state not in allowed
            ):
                raise DeskpilotError(
                    ErrorCode.INVALID_STATE_TRANSITION,
                    f"session {session_id} cannot go from {row.state.value} to {to.value}",
                    details={"from": row.state.value, "to": to.value},
                )
            event_type = _STATE_EVENTS.get(to)
            if row.state == SessionState.PAUSED and to not in TERMINAL_STATES:
                event_type = EventType.SESSION_RESUMED
            body = dict(payload or {})
            body.setdefault("from", row.state.value)
            if cancel_reason is not None:
                body["reason"] = cancel_reason.value
            event: TimelineEventRow | None = None
            with self.db.transaction() as conn:
                ok = self.rows.set_state(
                    session_id,
                    to,
                    expect=row.state,
                    cancel_reason=None if cancel_reason is None else cancel_reason.value,
                    paused_by=paused_by,
                    taken_over_by=taken_over_by,
                    conn=conn,
                )
                if ok and event_type is not None:
                    event = self.timeline.append(session_id, event_type, payload=body, conn=conn)
            if ok:
                new = self.require(session_id)
                self.notify(new, event)
                return new
        raise DeskpilotError(
            ErrorCode.INVALID_STATE_TRANSITION,
            f"session {session_id} kept changing state; try again",
        )

    def record(
        self,
        session_id: str,
        event_type: EventType,
        *,
        action_id: str | None = None,
        payload: dict[str, Any] | None = None,
    ) -> TimelineEventRow:
        """A timeline event without a state change (observation_created, target_bound, …)."""
        event = self.timeline.append(session_id, event_type, action_id=action_id, payload=payload)
        row = self.rows.get(session_id)
        if row is not None:
            self.notify(row, event)
        return event

    # -- watching
    def subscribe(self, listener: SessionListener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def notify(self, row: SessionRow, event: TimelineEventRow | None) -> None:
        for fut in list(self._waiters):
            if not fut.done():
                fut.get_loop().call_soon_threadsafe(_resolve, fut)
        for listener in list(self._listeners):
            listener(row, event)

    async def wait_for(
        self, session_id: str, states: Iterable[SessionState], timeout: float
    ) -> tuple[SessionRow, bool]:
        """Wait until the session is in one of ``states``; returns (row, timed_out).

        Woken by in-process changes; polls every 250 ms for changes made by other processes.
        """
        wanted = set(states)
        deadline = time.monotonic() + timeout
        loop = asyncio.get_running_loop()
        while True:
            row = self.require(session_id)
            if row.state in wanted:
                return row, False
            left = deadline - time.monotonic()
            if left <= 0:
                return row, True
            fut: asyncio.Future[None] = loop.create_future()
            self._waiters.add(fut)
            try:
                await asyncio.wait_for(asyncio.shield(fut), timeout=min(left, 0.25))
            except TimeoutError:
                pass
            finally:
                self._waiters.discard(fut)


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
