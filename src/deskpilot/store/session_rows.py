"""The ``sessions`` table: one row per computer-use session (atomic or delegated)."""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from deskpilot.protocol.session import TERMINAL_STATES, SessionState, TaskContract
from deskpilot.protocol.wire import TargetSpec
from deskpilot.store.repo import Repository, dumps, loads

SessionMode = Literal["atomic", "delegated"]


@dataclass(frozen=True, slots=True)
class SessionRow:
    id: str
    agent_session_id: str
    mode: SessionMode
    state: SessionState
    contract: TaskContract
    target: TargetSpec | None
    cancel_reason: str | None
    taken_over_by: str | None
    paused_by: str | None
    steps: int
    consecutive_noops: int
    created_at: float
    updated_at: float
    ended_at: float | None
    #: the process that created the session and drives it (its kernel carries out the
    #: controls other processes ask for); None for a session from before migration 5
    owner_pid: int | None = None

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES


@lru_cache(maxsize=256)
def _contract(text: str) -> TaskContract:
    """Parsed once per distinct contract: rows are read on every action. Shared between rows,
    so treat ``SessionRow.contract`` as read-only."""
    return TaskContract.model_validate_json(text)


def _row(r: sqlite3.Row) -> SessionRow:
    target = loads(r["target_json"])
    return SessionRow(
        id=r["id"],
        agent_session_id=r["agent_session_id"],
        mode=r["mode"],
        state=SessionState(r["state"]),
        contract=_contract(r["contract_json"]),
        target=TargetSpec.model_validate(target) if target is not None else None,
        cancel_reason=r["cancel_reason"],
        taken_over_by=r["taken_over_by"],
        paused_by=r["paused_by"],
        steps=int(r["steps"]),
        consecutive_noops=int(r["consecutive_noops"]),
        created_at=float(r["created_at"]),
        updated_at=float(r["updated_at"]),
        ended_at=None if r["ended_at"] is None else float(r["ended_at"]),
        owner_pid=None if r["owner_pid"] is None else int(r["owner_pid"]),
    )


_ACTIVE_SQL = ",".join(f"'{s.value}'" for s in SessionState if s not in TERMINAL_STATES)


class SessionRepository(Repository):
    def insert(
        self,
        session_id: str,
        agent_session_id: str,
        mode: SessionMode,
        contract: TaskContract,
        target: TargetSpec | None,
        *,
        state: SessionState = SessionState.PREFLIGHTING,
        conn: sqlite3.Connection | None = None,
    ) -> None:
        now = time.time()
        with self._tx(conn) as c:
            c.execute(
                "INSERT INTO sessions(id, agent_session_id, mode, state, contract_json, "
                "target_json, created_at, updated_at, owner_pid) VALUES (?,?,?,?,?,?,?,?,?)",
                (
                    session_id,
                    agent_session_id,
                    mode,
                    state.value,
                    contract.model_dump_json(by_alias=True),
                    None if target is None else dumps(target.wire()),
                    now,
                    now,
                    os.getpid(),
                ),
            )

    def get(self, session_id: str) -> SessionRow | None:
        r = self.db.query_one("SELECT * FROM sessions WHERE id = ?", (session_id,))
        return None if r is None else _row(r)

    def list_active(self, agent_session_id: str | None = None) -> list[SessionRow]:
        sql = f"SELECT * FROM sessions WHERE state IN ({_ACTIVE_SQL})"
        params: tuple[str, ...] = ()
        if agent_session_id is not None:
            sql += " AND agent_session_id = ?"
            params = (agent_session_id,)
        return [_row(r) for r in self.db.query(sql + " ORDER BY created_at", params)]

    def list_recent(self, limit: int = 50) -> list[SessionRow]:
        rows = self.db.query("SELECT * FROM sessions ORDER BY created_at DESC LIMIT ?", (limit,))
        return [_row(r) for r in rows]

    def set_state(
        self,
        session_id: str,
        state: SessionState,
        *,
        expect: SessionState | None = None,
        cancel_reason: str | None = None,
        paused_by: str | None = None,
        taken_over_by: str | None = None,
        conn: sqlite3.Connection | None = None,
    ) -> bool:
        """Write the new state; with ``expect``, only if the row is still in that state."""
        now = time.time()
        ended = now if state in TERMINAL_STATES else None
        sql = (
            "UPDATE sessions SET state = ?, updated_at = ?, ended_at = COALESCE(?, ended_at), "
            "cancel_reason = COALESCE(?, cancel_reason), paused_by = ?, "
            "taken_over_by = COALESCE(?, taken_over_by) WHERE id = ?"
        )
        params: list[object] = [
            state.value,
            now,
            ended,
            cancel_reason,
            paused_by,
            taken_over_by,
            session_id,
        ]
        if expect is not None:
            sql += " AND state = ?"
            params.append(expect.value)
        with self._tx(conn) as c:
            return c.execute(sql, params).rowcount == 1

    def set_target(
        self, session_id: str, target: TargetSpec, *, conn: sqlite3.Connection | None = None
    ) -> None:
        with self._tx(conn) as c:
            c.execute(
                "UPDATE sessions SET target_json = ?, updated_at = ? WHERE id = ?",
                (dumps(target.wire()), time.time(), session_id),
            )

    def count_step(
        self, session_id: str, *, noop: bool, conn: sqlite3.Connection | None = None
    ) -> None:
        with self._tx(conn) as c:
            c.execute(
                "UPDATE sessions SET steps = steps + 1, consecutive_noops = "
                "CASE WHEN ? THEN consecutive_noops + 1 ELSE 0 END, updated_at = ? WHERE id = ?",
                (1 if noop else 0, time.time(), session_id),
            )
