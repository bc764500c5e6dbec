"""The ``halts`` and ``agent_sessions`` tables: the kill switch's halt on the agent side.

A halt is engaged when the person presses the kill switch and lifted by ``deskpilot unhalt``
(or the dashboard). It binds every agent session that began before it; an agent (MCP client)
session that begins after it is not bound, which is how "a new MCP client session" lifts it for
that client. Kept in the database so a halt set by the server is visible to the CLI and the
other way round.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass

from deskpilot.store.repo import Repository


@dataclass(frozen=True, slots=True)
class HaltRow:
    id: int
    reason: str
    engaged_at: float
    lifted_at: float | None
    lifted_by: str | None


def _row(r: sqlite3.Row) -> HaltRow:
    return HaltRow(
        id=int(r["id"]),
        reason=r["reason"],
        engaged_at=float(r["engaged_at"]),
        lifted_at=None if r["lifted_at"] is None else float(r["lifted_at"]),
        lifted_by=r["lifted_by"],
    )


class HaltRepository(Repository):
    def engage(self, reason: str, *, conn: sqlite3.Connection | None = None) -> HaltRow:
        """Engage a halt, or return the one already engaged (repeated presses coalesce)."""
        with self._tx(conn) as c:
            r = c.execute(
                "SELECT * FROM halts WHERE lifted_at IS NULL ORDER BY id DESC LIMIT 1"
            ).fetchone()
            if r is not None:
                return _row(r)
            now = time.time()
            cur = c.execute("INSERT INTO halts(reason, engaged_at) VALUES (?, ?)", (reason, now))
            return HaltRow(int(cur.lastrowid or 0), reason, now, None, None)

    def active(self) -> HaltRow | None:
        r = self.db.query_one(
            "SELECT * FROM halts WHERE lifted_at IS NULL ORDER BY id DESC LIMIT 1"
        )
        return None if r is None else _row(r)

    def lift(self, by: str, *, conn: sqlite3.Connection | None = None) -> int:
        with self._tx(conn) as c:
            cur = c.execute(
                "UPDATE halts SET lifted_at = ?, lifted_by = ? WHERE lifted_at IS NULL",
                (time.time(), by),
            )
            return cur.rowcount

    def history(self, limit: int = 20) -> list[HaltRow]:
        rows = self.db.query("SELECT * FROM halts ORDER BY id DESC LIMIT ?", (limit,))
        return [_row(r) for r in rows]

    def agent_session_began(
        self, agent_session_id: str, *, conn: sqlite3.Connection | None = None
    ) -> float:
        """Record when an agent session began (first call wins); returns that time."""
        with self._tx(conn) as c:
            c.execute(
                "INSERT OR IGNORE INTO agent_sessions(id, began_at) VALUES (?, ?)",
                (agent_session_id, time.time()),
            )
            r = c.execute(
                "SELECT began_at FROM agent_sessions WHERE id = ?", (agent_session_id,)
            ).fetchone()
            return float(r[0])

    def agent_began_at(self, agent_session_id: str) -> float | None:
        r = self.db.query_one(
            "SELECT began_at FROM agent_sessions WHERE id = ?", (agent_session_id,)
        )
        return None if r is None else float(r["began_at"])
