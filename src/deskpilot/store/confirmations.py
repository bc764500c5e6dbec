"""The ``confirmations`` table: one-time confirmations a waiting action asks the person for.

The broker inserts a pending row and polls it; ``deskpilot confirm approve|deny`` (or the
dashboard) resolves it from any process. A row is resolved at most once (compare-and-set on
``status = 'pending'``), and an approval is consumed by exactly one execution.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from typing import Literal

from deskpilot.protocol.session import RiskLevel
from deskpilot.store.repo import Repository

ConfirmationStatus = Literal["pending", "approved", "denied", "expired", "consumed"]


@dataclass(frozen=True, slots=True)
class ConfirmationRow:
    id: str
    session_id: str
    action_id: str
    action_kind: str
    risk_level: RiskLevel
    reason: str
    summary: str
    status: ConfirmationStatus
    created_at: float
    expires_at: float
    resolved_at: float | None
    resolved_by: str | None


def _row(r: sqlite3.Row) -> ConfirmationRow:
    return ConfirmationRow(
        id=r["id"],
        session_id=r["session_id"],
        action_id=r["action_id"],
        action_kind=r["action_kind"],
        risk_level=RiskLevel(int(r["risk_level"])),
        reason=r["reason"],
        summary=r["summary"],
        status=r["status"],
        created_at=float(r["created_at"]),
        expires_at=float(r["expires_at"]),
        resolved_at=None if r["resolved_at"] is None else float(r["resolved_at"]),
        resolved_by=r["resolved_by"],
    )


class ConfirmationRepository(Repository):
    def create(
        self,
        confirmation_id: str,
        session_id: str,
        action_id: str,
        action_kind: str,
        risk_level: RiskLevel,
        reason: str,
        summary: str,
        ttl_seconds: float,
        *,
        conn: sqlite3.Connection | None = None,
    ) -> ConfirmationRow:
        now = time.time()
        with self._tx(conn) as c:
            c.execute(
                "INSERT INTO confirmations(id, session_id, action_id, action_kind, risk_level, "
                "reason, summary, status, created_at, expires_at) "
                "VALUES (?,?,?,?,?,?,?,'pending',?,?)",
                (
                    confirmation_id,
                    session_id,
                    action_id,
                    action_kind,
                    int(risk_level),
                    reason,
                    summary,
                    now,
                    now + ttl_seconds,
                ),
            )
        return ConfirmationRow(
            confirmation_id,
            session_id,
            action_id,
            action_kind,
            risk_level,
            reason,
            summary,
            "pending",
            now,
            now + ttl_seconds,
            None,
            None,
        )

    def get(self, confirmation_id: str) -> ConfirmationRow | None:
        r = self.db.query_one("SELECT * FROM confirmations WHERE id = ?", (confirmation_id,))
        return None if r is None else _row(r)

    def list(self, status: ConfirmationStatus | None = None) -> list[ConfirmationRow]:
        if status is None:
            rows = self.db.query("SELECT * FROM confirmations ORDER BY created_at")
        else:
            rows = self.db.query(
                "SELECT * FROM confirmations WHERE status = ? ORDER BY created_at", (status,)
            )
        return [_row(r) for r in rows]

    def resolve(
        self,
        confirmation_id: str,
        status: Literal["approved", "denied", "expired"],
        by: str,
        *,
        conn: sqlite3.Connection | None = None,
    ) -> bool:
        """Resolve a pending row; False when it was not pending (already resolved/expired).
        An approval after ``expires_at`` does not count: the row becomes ``expired``."""
        now = time.time()
        with self._tx(conn) as c:
            if status == "approved":
                c.execute(
                    "UPDATE confirmations SET status = 'expired', resolved_at = ?, "
                    "resolved_by = 'timeout' WHERE id = ? AND status = 'pending' "
                    "AND expires_at < ?",
                    (now, confirmation_id, now),
                )
            cur = c.execute(
                "UPDATE confirmations SET status = ?, resolved_at = ?, resolved_by = ? "
                "WHERE id = ? AND status = 'pending'",
                (status, now, by, confirmation_id),
            )
            return cur.rowcount == 1

    def consume(self, confirmation_id: str, *, conn: sqlite3.Connection | None = None) -> bool:
        """Turn an approval into a used one; only one execution can do this."""
        with self._tx(conn) as c:
            cur = c.execute(
                "UPDATE confirmations SET status = 'consumed' WHERE id = ? AND status = 'approved'",
                (confirmation_id,),
            )
            return cur.rowcount == 1

    def expire_session(self, session_id: str, *, conn: sqlite3.Connection | None = None) -> int:
        """A paused, stopped or killed session's pending confirmations can no longer be used."""
        with self._tx(conn) as c:
            cur = c.execute(
                "UPDATE confirmations SET status = 'expired', resolved_at = ?, "
                "resolved_by = 'session_ended' WHERE session_id = ? AND status = 'pending'",
                (time.time(), session_id),
            )
            return cur.rowcount
