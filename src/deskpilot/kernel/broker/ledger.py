"""Step 4's records, and the outcome at the end of step 5: each change of an action's ledger
row is written in one transaction with its timeline event.

The row carries the rating and is written before anything reaches the desktop — at once for a
denial or a confirmation, under the desktop lane with the move to acting for an allowed
action; a denial is finished and recorded as ``action_blocked`` with its reason code, then
raised. What goes into the rows and payloads is in records.py (docs/kernel.md, "Broker").
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from typing import Any

from deskpilot.kernel.broker.records import blocked_error, executed, observed, outcome
from deskpilot.kernel.policy import PolicyDecision
from deskpilot.kernel.rollout import RolloutController
from deskpilot.kernel.session_manager import SessionManager
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.session import (
    EXECUTABLE_STATES,
    TERMINAL_STATES,
    Decision,
    EventType,
    SessionState,
)
from deskpilot.protocol.wire import ActionResult
from deskpilot.store.db import Database
from deskpilot.store.ledger import ActionRepository, ActionRow, ActionStatus

#: the host's own freshness refusals: not samples of the action error rate (docs/kernel.md,
#: "Flags and rollback")
NOT_ACTION_ERRORS = frozenset({ErrorCode.STALE_FRAME, ErrorCode.STALE_TREE})


@dataclass
class Ledger:
    db: Database
    sessions: SessionManager
    actions: ActionRepository
    rollout: RolloutController

    def record_request(
        self,
        session_id: str,
        ledger: ActionRow,
        requested: dict[str, Any],
        decision: PolicyDecision,
    ) -> None:
        """Write an action's ledger row with its action_requested event; a denied one is
        finished and recorded as action_blocked in the same transaction, then raised."""
        with self.db.transaction() as conn:
            self.actions.insert(ledger, conn=conn)
            self.sessions.timeline.append(
                session_id,
                EventType.ACTION_REQUESTED,
                action_id=ledger.id,
                payload=requested,
                conn=conn,
            )
            if decision.decision == Decision.DENY:
                self.actions.finish(ledger.id, "blocked", error_code="action_blocked", conn=conn)
                self.sessions.timeline.append(
                    session_id,
                    EventType.ACTION_BLOCKED,
                    action_id=ledger.id,
                    payload={**requested, **decision.details},
                    conn=conn,
                )
        if decision.decision == Decision.DENY:
            raise blocked_error(decision)

    def move_to_acting(
        self,
        session_id: str,
        aid: str,
        approval_id: str | None,
        *,
        insert: tuple[ActionRow, dict[str, Any]] | None = None,
    ) -> None:
        """Under the desktop lane, just before the desktop is touched: the session moves to
        acting and the ledger row to executing (written now with its action_requested event
        when ``insert`` gives it). Paused or stopped while waiting for the lane: the row fails
        and that is raised."""
        current = self.sessions.require(session_id)
        moved = False
        with self.db.transaction() as conn:
            if current.state in EXECUTABLE_STATES:
                moved = current.state == SessionState.ACTING or self.sessions.rows.set_state(
                    session_id, SessionState.ACTING, expect=current.state, conn=conn
                )
            status: ActionStatus = "executing" if moved else "failed"
            if insert is not None:
                ledger, requested = insert
                self.actions.insert(replace(ledger, status=status), conn=conn)
                self.sessions.timeline.append(
                    session_id,
                    EventType.ACTION_REQUESTED,
                    action_id=aid,
                    payload=requested,
                    conn=conn,
                )
            else:
                self.actions.set_status(aid, status, approval_id=approval_id, conn=conn)
        if not moved:
            try:
                self.sessions.require_executable(session_id)
                raise DeskpilotError(
                    ErrorCode.STATE_CHANGED, "the session changed state; observe again"
                )
            except DeskpilotError as exc:
                self.actions.finish(aid, "failed", error_code=exc.code.value)
                raise

    def record_executed(
        self,
        session_id: str,
        aid: str,
        kind: str,
        result: ActionResult,
        decision: PolicyDecision,
        post: ObservedState | None,
    ) -> None:
        """The backend answered: outcome, action_executed, the step counted (a no-op counts
        toward the no-op budget), back to observing; then the post-action observation's
        event when the host carried one back."""
        noop = not result.dispatched
        with self.db.transaction() as conn:
            self.actions.finish(
                aid, "executed" if not noop else "noop", outcome=outcome(result), conn=conn
            )
            self.sessions.timeline.append(
                session_id,
                EventType.ACTION_EXECUTED,
                action_id=aid,
                payload=executed(kind, result, decision.risk.label),
                conn=conn,
            )
            self.sessions.rows.count_step(session_id, noop=noop, conn=conn)
            self.sessions.rows.set_state(
                session_id, SessionState.OBSERVING, expect=SessionState.ACTING, conn=conn
            )
        if post is not None:
            self.sessions.record(
                session_id, EventType.OBSERVATION_CREATED, payload=observed(post.observation)
            )
        self.rollout.record_action(False)

    def finish_outside(
        self, session_id: str, aid: str, kind: str, risk: str, outcome: dict[str, Any]
    ) -> None:
        """A governed action outside every window (a launch, a shell command) is over: its
        outcome, action_executed, the step counted, back to observing."""
        with self.db.transaction() as conn:
            self.actions.finish(aid, "executed", outcome=outcome, conn=conn)
            self.sessions.timeline.append(
                session_id,
                EventType.ACTION_EXECUTED,
                action_id=aid,
                payload={"kind": kind, "risk": risk, **outcome},
                conn=conn,
            )
            self.sessions.rows.count_step(session_id, noop=False, conn=conn)
            self.sessions.rows.set_state(
                session_id, SessionState.OBSERVING, expect=SessionState.ACTING, conn=conn
            )
        self.rollout.record_action(False)

    def finish_failed(self, session_id: str, aid: str, exc: DeskpilotError) -> None:
        """The backend (or a spawn) failed: the row and action_failed, back to observing —
        except after the person's Escape, which hands the session to them."""
        handoff = exc.code == ErrorCode.HANDOFF_REQUIRED
        with self.db.transaction() as conn:
            self.actions.finish(aid, "failed", error_code=exc.code.value, conn=conn)
            self.sessions.timeline.append(
                session_id,
                EventType.ACTION_FAILED,
                action_id=aid,
                payload={"code": exc.code.value, "retryable": exc.retryable},
                conn=conn,
            )
            if not handoff:  # back to observing unless a pause/stop moved it meanwhile
                self.sessions.rows.set_state(
                    session_id, SessionState.OBSERVING, expect=SessionState.ACTING, conn=conn
                )
        if exc.code not in NOT_ACTION_ERRORS:
            self.rollout.record_action(True)
        if handoff and self.sessions.require(session_id).state not in TERMINAL_STATES:
            with contextlib.suppress(DeskpilotError):
                self.sessions.transition(
                    session_id,
                    SessionState.HANDOFF_REQUIRED,
                    payload={
                        "reason": exc.details.get("reason", "physical_escape"),
                        "actionId": aid,
                    },
                )
