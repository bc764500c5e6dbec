"""The ``actions`` table: the ledger. Every action the broker lets through or blocks has a row
with its risk level, decision and reason, written before anything reaches the desktop."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from deskpilot.protocol.session import Decision, RiskLevel
from deskpilot.store.repo import Repository, dumps, loads

ActionStatus = Literal["requested", "blocked", "executing", "executed", "failed", "noop"]


@dataclass(frozen=True, slots=True)
class ActionRow:
    id: str
    session_id: str
    kind: str
    params_hash: str
    frame_id: str | None
    tree_version: str | None
    risk_level: RiskLevel
    decision: Decision
    reason: str
    status: ActionStatus
    effect_class: str | None = None
    target_kind: str | None = None
    data_classes: list[str] = field(default_factory=list)
    approval_id: str | None = None
    outcome: dict[str, Any] | None = None
    error_code: str | None = None
    created_at: float = 0.0
    finished_at: float | None = None


def _row(r: sqlite3.Row) -> ActionRow:
    return ActionRow(
        id=r["id"],
        session_id=r["session_id"],
        kind=r["kind"],
        params_hash=r["params_hash"],
        frame_id=r["frame_id"],
        tree_version=r["tree_version"],
        risk_level=RiskLevel(int(r["risk_level"])),
        decision=Decision(r["decision"]),
        reason=r["reason"],
        status=r["status"],
        effect_class=r["effect_class"],
        target_kind=r["target_kind"],
        data_classes=loads(r["data_classes"]) or [],
        approval_id=r["approval_id"],
        outcome=loads(r["outcome_json"]),
        error_code=r["error_code"],
        created_at=float(r["created_at"]),
        finished_at=None if r["finished_at"] is None else float(r["finished_at"]),
    )


class ActionRepository(Repository):
    def insert(self, row: ActionRow, *, conn: sqlite3.Connection | None = None) -> None:
        with self._tx(conn) as c:
            c.execute(
                "INSERT INTO actions(id, session_id, kind, params_hash, frame_id, tree_version, "
                "risk_level, decision, reason, status, effect_class, target_kind, data_classes, "
                "approval_id, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    row.id,
                    row.session_id,
                    row.kind,
                    row.params_hash,
                    row.frame_id,
                    row.tree_version,
                    int(row.risk_level),
                    row.decision.value,
                    row.reason,
                    row.status,
                    row.effect_class,
                    row.target_kind,
                    dumps(sorted(row.data_classes)),
                    row.approval_id,
                    row.created_at or time.time(),
                ),
            )

    def get(self, action_id: str) -> ActionRow | None:
        r = self.db.query_one("SELECT * FROM actions WHERE id = ?", (action_id,))
        return None if r is None else _row(r)

    def list(self, session_id: str, *, limit: int = 1_000) -> list[ActionRow]:
        rows = self.db.query(
            "SELECT * FROM actions WHERE session_id = ? ORDER BY created_at, rowid LIMIT ?",
            (session_id, limit),
        )
        return [_row(r) for r in rows]

    def set_status(
        self,
        action_id: str,
        status: ActionStatus,
        *,
        approval_id: str | None = None,
        conn: sqlite3.Connection | None = None,
    ) -> None:
        with self._tx(conn) as c:
            c.execute(
                "UPDATE actions SET status = ?, approval_id = COALESCE(?, approval_id) "
                "WHERE id = ?",
                (status, approval_id, action_id),
            )

    def finish(
        self,
        action_id: str,
        status: ActionStatus,
        *,
        outcome: dict[str, Any] | None = None,
        error_code: str | None = None,
        conn: sqlite3.Connection | None = None,
    ) -> None:
        with self._tx(conn) as c:
            c.execute(
                "UPDATE actions SET status = ?, outcome_json = ?, error_code = ?, "
                "finished_at = ? WHERE id = ?",
                (
                    status,
                    None if outcome is None else dumps(outcome),
                    error_code,
                    time.time(),
                    action_id,
                ),
            )
