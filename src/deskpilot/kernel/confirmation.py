"""One-time confirmations for actions the policy sends to the person.

The path end to end: the broker asks :meth:`Confirmations.request`, which stores a pending
row, moves the session to ``waiting_approval``, emits ``approval_requested`` and waits; the
person runs ``deskpilot confirm list`` and ``deskpilot confirm approve ID`` (or ``deny``) in any
terminal — that writes the row — and the waiting broker sees it within one poll (100 ms),
emits ``approval_resolved`` and runs or blocks the action. An approval is consumed by that one
execution; a timeout (setting ``confirmationTimeoutSeconds``), a pause, a stop or the kill
switch ends the wait as not approved.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Literal

from deskpilot.kernel.session_manager import SessionManager
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import EventType, RiskLevel, SessionState
from deskpilot.store.confirmations import ConfirmationRepository, ConfirmationRow
from deskpilot.store.db import Database

Outcome = Literal["approved", "denied", "expired"]
POLL_SECONDS = 0.1


class Confirmations:
    def __init__(self, db: Database, sessions: SessionManager) -> None:
        self.repo = ConfirmationRepository(db)
        self.sessions = sessions

    async def request(
        self,
        session_id: str,
        action_id: str,
        action_kind: str,
        risk: RiskLevel,
        reason: str,
        summary: str,
        timeout_seconds: float,
    ) -> tuple[ConfirmationRow, Outcome]:
        cid = f"cf_{uuid.uuid4().hex[:12]}"
        row = self.repo.create(
            cid, session_id, action_id, action_kind, risk, reason, summary, timeout_seconds
        )
        before = self.sessions.require(session_id).state
        self.sessions.transition(session_id, SessionState.WAITING_APPROVAL)
        self.sessions.record(
            session_id,
            EventType.APPROVAL_REQUESTED,
            action_id=action_id,
            payload={
                "confirmationId": cid,
                "risk": risk.label,
                "reason": reason,
                "summary": summary,
                "expiresAt": row.expires_at,
                "how": f"deskpilot confirm approve {cid}",
            },
        )
        outcome: Outcome = "expired"
        by = "timeout"
        try:
            while True:
                current = self.repo.get(cid)
                if current is not None and current.status in ("approved", "denied", "expired"):
                    outcome = current.status
                    by = current.resolved_by or ""
                    break
                state = self.sessions.require(session_id).state
                if state != SessionState.WAITING_APPROVAL:
                    self.repo.resolve(cid, "expired", f"session_{state.value}")
                    by = f"session_{state.value}"
                    break
                if time.time() >= row.expires_at:
                    if self.repo.resolve(cid, "expired", "timeout"):
                        break
                    continue  # resolved by the person at the last moment: read it again
                await asyncio.sleep(POLL_SECONDS)
        finally:
            if outcome == "expired" and (r := self.repo.get(cid)) and r.status == "pending":
                self.repo.resolve(cid, "expired", "abandoned")
        if outcome == "approved" and not self.repo.consume(cid):
            outcome = "expired"
        self.sessions.record(
            session_id,
            EventType.APPROVAL_RESOLVED,
            action_id=action_id,
            payload={"confirmationId": cid, "outcome": outcome, "by": by},
        )
        state = self.sessions.require(session_id).state
        if state == SessionState.WAITING_APPROVAL:
            back = before if before != SessionState.WAITING_APPROVAL else SessionState.OBSERVING
            self.sessions.transition(session_id, back)
        final = self.repo.get(cid)
        return (final or row), outcome

    # -- the person's side (CLI, dashboard)
    def pending(self) -> list[ConfirmationRow]:
        now = time.time()
        return [r for r in self.repo.list("pending") if r.expires_at > now]

    def resolve(self, confirmation_id: str, approve: bool, by: str) -> ConfirmationRow:
        row = self.repo.get(confirmation_id)
        if row is None:
            raise DeskpilotError(ErrorCode.INVALID_REQUEST, f"no confirmation {confirmation_id!r}")
        if not self.repo.resolve(confirmation_id, "approved" if approve else "denied", by):
            row = self.repo.get(confirmation_id) or row
            raise DeskpilotError(
                ErrorCode.INVALID_REQUEST,
                f"confirmation {confirmation_id} is already {row.status}",
                details={"status": row.status},
            )
        return self.repo.get(confirmation_id) or row
