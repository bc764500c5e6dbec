"""The ``control_requests`` table: a control another process asks a session's owner to run.

The dashboard (or ``deskpilot session …``) cannot pause, resume or stop a session that a
different process drives: the operator, the in-flight action and the runtime's books live
there. It leaves a request here; the owner's inbox (kernel/control_requests.py) claims it
(``pending`` → ``running``, a compare-and-set, so one executor wins), runs it through the
kernel's controls and writes the outcome (``done`` with the session's new state, or
``failed`` with the error's code and its message in ``result_json``).
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from dataclasses import dataclass
from typing import Any, Literal

from deskpilot.store.repo import Repository, dumps, loads

ControlVerb = Literal["pause", "takeover", "resume", "stop", "bind_target"]
RequestStatus = Literal["pending", "running", "done", "failed"]
VERBS: tuple[ControlVerb, ...] = ("pause", "takeover", "resume", "stop", "bind_target")


@dataclass(frozen=True, slots=True)
class ControlRequestRow:
    id: str
    session_id: str
    verb: ControlVerb
    args: dict[str, Any]
    requested_by: str
    status: RequestStatus
    result: dict[str, Any] | None
    error_code: str | None
    created_at: float
    finished_at: float | None

    @property
    def finished(self) -> bool:
        return self.status in ("done", "failed")


def _row(r: sqlite3.Row) -> ControlRequestRow:
    return ControlRequestRow(
        id=r["id"],
        session_id=r["session_id"],
        verb=r["verb"],
        args=loads(r["args_json"]) or {},
        requested_by=r["requested_by"],
        status=r["status"],
        result=loads(r["result_json"]),
        error_code=r["error_code"],
        created_at=float(r["created_at"]),
        finished_at=None if r["finished_at"] is None else float(r["finished_at"]),
    )


class ControlRequestRepository(Repository):
    def insert(
        self,
        session_id: str,
        verb: ControlVerb,
        args: dict[str, Any],
        requested_by: str,
        *,
        conn: sqlite3.Connection | None = None,
    ) -> str:
        rid = f"cr_{uuid.uuid4().hex[:20]}"
        with self._tx(conn) as c:
            c.execute(
                "INSERT INTO control_requests(id, session_id, verb, args_json, requested_by, "
                "status, created_at) VALUES (?,?,?,?,?,'pending',?)",
                (rid, session_id, verb, dumps(args), requested_by, time.time()),
            )
        return rid

    def get(self, request_id: str) -> ControlRequestRow | None:
        r = self.db.query_one("SELECT * FROM control_requests WHERE id = ?", (request_id,))
        return None if r is None else _row(r)

    def pending_for_owner(self, owner_pid: int) -> list[ControlRequestRow]:
        """Pending requests for sessions this process owns, oldest first: the pending rows
        through their partial index, each session by its key (a no-op poll reads nothing)."""
        rows = self.db.query(
            "SELECT r.* FROM control_requests r JOIN sessions s ON s.id = r.session_id "
            "WHERE r.status = 'pending' AND s.owner_pid = ? ORDER BY r.created_at",
            (owner_pid,),
        )
        return [_row(r) for r in rows]

    def claim(self, request_id: str, *, conn: sqlite3.Connection | None = None) -> bool:
        """pending → running; False when someone else claimed (or withdrew) it first."""
        with self._tx(conn) as c:
            cur = c.execute(
                "UPDATE control_requests SET status = 'running' "
                "WHERE id = ? AND status = 'pending'",
                (request_id,),
            )
            return cur.rowcount == 1

    def finish(
        self,
        request_id: str,
        status: Literal["done", "failed"],
        *,
        result: dict[str, Any] | None = None,
        error_code: str | None = None,
        only_if: RequestStatus | None = None,
        conn: sqlite3.Connection | None = None,
    ) -> bool:
        """Write the outcome; with ``only_if``, only while the row is still in that status
        (a client withdrawing its own timed-out request only withdraws a pending one)."""
        sql = (
            "UPDATE control_requests SET status = ?, result_json = ?, error_code = ?, "
            "finished_at = ? WHERE id = ?"
        )
        params: list[object] = [
            status,
            None if result is None else dumps(result),
            error_code,
            time.time(),
            request_id,
        ]
        if only_if is not None:
            sql += " AND status = ?"
            params.append(only_if)
        with self._tx(conn) as c:
            return c.execute(sql, params).rowcount == 1

    def recent(self, session_id: str, limit: int = 20) -> list[ControlRequestRow]:
        rows = self.db.query(
            "SELECT * FROM control_requests WHERE session_id = ? ORDER BY created_at DESC LIMIT ?",
            (session_id, limit),
        )
        return [_row(r) for r in rows]
