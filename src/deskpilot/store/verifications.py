"""The ``verifications`` table: each success-criterion check of a delegated task and its
verdict, so a result survives the process (a verdict kept only in memory would be lost with it)."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from typing import Any

from deskpilot.store.repo import Repository, dumps, loads


@dataclass(frozen=True, slots=True)
class VerificationRow:
    id: str
    session_id: str
    spec: dict[str, Any]
    passed: bool | None
    reason: str | None
    evidence: dict[str, Any] | None
    created_at: float
    completed_at: float | None
    #: the action this check belongs to (an atomic action's ``expect``), else None
    action_id: str | None = None
    #: ``task`` (a delegated task's success criteria) or ``expect`` (an action's expectation)
    source: str = "task"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "sessionId": self.session_id,
            "actionId": self.action_id,
            "source": self.source,
            "spec": self.spec,
            "passed": self.passed,
            "reason": self.reason,
            "evidence": self.evidence,
            "createdAt": self.created_at,
            "completedAt": self.completed_at,
        }


def _row(r: sqlite3.Row) -> VerificationRow:
    return VerificationRow(
        id=r["id"],
        session_id=r["session_id"],
        spec=loads(r["spec_json"]) or {},
        passed=None if r["passed"] is None else bool(r["passed"]),
        reason=r["reason"],
        evidence=loads(r["evidence_json"]),
        created_at=float(r["created_at"]),
        completed_at=None if r["completed_at"] is None else float(r["completed_at"]),
        action_id=r["action_id"],
        source=r["source"],
    )


class VerificationRepository(Repository):
    def record(
        self,
        verification_id: str,
        session_id: str,
        spec: dict[str, Any],
        *,
        passed: bool | None,
        reason: str,
        evidence: dict[str, Any] | None,
        action_id: str | None = None,
        source: str = "task",
        started_at: float | None = None,
        conn: sqlite3.Connection | None = None,
    ) -> None:
        """A decided check in one write (the engine decides before anything is stored)."""
        now = time.time()
        with self._tx(conn) as c:
            c.execute(
                "INSERT INTO verifications(id, session_id, spec_json, passed, reason, "
                "evidence_json, created_at, completed_at, action_id, source) "
                "VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    verification_id,
                    session_id,
                    dumps(spec),
                    None if passed is None else (1 if passed else 0),
                    reason,
                    None if evidence is None else dumps(evidence),
                    started_at if started_at is not None else now,
                    now,
                    action_id,
                    source,
                ),
            )

    def start(
        self,
        verification_id: str,
        session_id: str,
        spec: dict[str, Any],
        *,
        conn: sqlite3.Connection | None = None,
    ) -> None:
        with self._tx(conn) as c:
            c.execute(
                "INSERT INTO verifications(id, session_id, spec_json, created_at) VALUES (?,?,?,?)",
                (verification_id, session_id, dumps(spec), time.time()),
            )

    def complete(
        self,
        verification_id: str,
        *,
        passed: bool,
        reason: str,
        evidence: dict[str, Any] | None = None,
        conn: sqlite3.Connection | None = None,
    ) -> None:
        with self._tx(conn) as c:
            c.execute(
                "UPDATE verifications SET passed = ?, reason = ?, evidence_json = ?, "
                "completed_at = ? WHERE id = ?",
                (
                    1 if passed else 0,
                    reason,
                    None if evidence is None else dumps(evidence),
                    time.time(),
                    verification_id,
                ),
            )

    def get(self, verification_id: str) -> VerificationRow | None:
        r = self.db.query_one("SELECT * FROM verifications WHERE id = ?", (verification_id,))
        return None if r is None else _row(r)

    def list(self, session_id: str) -> list[VerificationRow]:
        rows = self.db.query(
            "SELECT * FROM verifications WHERE session_id = ? ORDER BY created_at, rowid",
            (session_id,),
        )
        return [_row(r) for r in rows]

    def latest(self, session_id: str) -> VerificationRow | None:
        r = self.db.query_one(
            "SELECT * FROM verifications WHERE session_id = ? ORDER BY created_at DESC, "
            "rowid DESC LIMIT 1",
            (session_id,),
        )
        return None if r is None else _row(r)
