"""What a delegated task (and an action's ``expect``) leaves in the store besides actions:
each verification as a row *and* as its timeline events, in one transaction, so a verdict
that decided a task can be read back later (``deskpilot verification show ID``) and the
timeline never tells of a check that has no row.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from deskpilot.kernel.session_manager import SessionManager
from deskpilot.protocol.session import EventType
from deskpilot.store.db import Database
from deskpilot.store.verifications import VerificationRepository, VerificationRow


@dataclass
class TaskRecords:
    db: Database
    sessions: SessionManager

    def __post_init__(self) -> None:
        self.verifications = VerificationRepository(self.db)

    def record_verification(
        self,
        session_id: str,
        verdict: dict[str, Any],
        *,
        action_id: str | None = None,
        source: str = "task",
    ) -> str:
        """Store one decided check (``verdict``: spec, passed, reason, evidence) and its
        ``verification_started``/``verification_completed`` events; returns its id."""
        vid = f"vf_{uuid.uuid4().hex[:20]}"
        spec = dict(verdict.get("spec") or {})
        passed = verdict.get("passed")
        reason = str(verdict.get("reason") or "unsupported_evidence")
        with self.db.transaction() as conn:
            self.verifications.record(
                vid,
                session_id,
                spec,
                passed=None if passed is None else bool(passed),
                reason=reason,
                evidence=verdict.get("evidence"),
                action_id=action_id,
                source=source,
                conn=conn,
            )
            kind = {"verificationId": vid, "kind": spec.get("kind"), "source": source}
            self.sessions.timeline.append(
                session_id,
                EventType.VERIFICATION_STARTED,
                action_id=action_id,
                payload=kind,
                conn=conn,
            )
            event = self.sessions.timeline.append(
                session_id,
                EventType.VERIFICATION_COMPLETED,
                action_id=action_id,
                payload={**kind, "passed": passed, "reason": reason},
                conn=conn,
            )
        row = self.sessions.get(session_id)
        if row is not None:
            self.sessions.notify(row, event)
        return vid

    def list(self, session_id: str) -> list[VerificationRow]:
        return self.verifications.list(session_id)

    def get(self, verification_id: str) -> VerificationRow | None:
        return self.verifications.get(verification_id)
