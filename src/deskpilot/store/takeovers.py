"""The ``takeovers`` table: the desktop-wide hold a person's takeover leaves.

A row is live (``ended_at IS NULL``) while the person holds the desktop for that session; at
most one live row per session (a partial unique index). While any row is live every agent
action of every session on this data dir is refused (kernel/takeover.py). Kept in the
database so the dashboard, the CLI and every kernel process see the same hold.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass

from deskpilot.store.repo import Repository


@dataclass(frozen=True, slots=True)
class TakeoverRow:
    id: int
    session_id: str
    held_by: str
    started_at: float
    ended_at: float | None
    ended_by: str | None

    @property
    def live(self) -> bool:
        return self.ended_at is None


def _row(r: sqlite3.Row) -> TakeoverRow:
    return TakeoverRow(
        id=int(r["id"]),
        session_id=r["session_id"],
        held_by=r["held_by"],
        started_at=float(r["started_at"]),
        ended_at=None if r["ended_at"] is None else float(r["ended_at"]),
        ended_by=r["ended_by"],
    )


class TakeoverRepository(Repository):
    def engage(
        self, session_id: str, held_by: str, *, conn: sqlite3.Connection | None = None
    ) -> TakeoverRow:
        """Start the session's hold, or return the one it already has (a second takeover of
        the same session keeps the first one's start and holder)."""
        with self._tx(conn) as c:
            r = c.execute(
                "SELECT * FROM takeovers WHERE session_id = ? AND ended_at IS NULL",
                (session_id,),
            ).fetchone()
            if r is not None:
                return _row(r)
            now = time.time()
            cur = c.execute(
                "INSERT INTO takeovers(session_id, held_by, started_at) VALUES (?, ?, ?)",
                (session_id, held_by, now),
            )
            return TakeoverRow(int(cur.lastrowid or 0), session_id, held_by, now, None, None)

    def end(
        self, session_id: str, ended_by: str, *, conn: sqlite3.Connection | None = None
    ) -> TakeoverRow | None:
        """End the session's live hold; the ended row, or None when it held none."""
        with self._tx(conn) as c:
            r = c.execute(
                "SELECT * FROM takeovers WHERE session_id = ? AND ended_at IS NULL",
                (session_id,),
            ).fetchone()
            if r is None:
                return None
            now = time.time()
            c.execute(
                "UPDATE takeovers SET ended_at = ?, ended_by = ? WHERE id = ?",
                (now, ended_by, int(r["id"])),
            )
            row = _row(r)
            return TakeoverRow(row.id, row.session_id, row.held_by, row.started_at, now, ended_by)

    def live(self) -> list[TakeoverRow]:
        """Every live hold, the newest first (one indexed read: the live rows are few)."""
        rows = self.db.query("SELECT * FROM takeovers WHERE ended_at IS NULL ORDER BY id DESC")
        return [_row(r) for r in rows]

    def of_session(self, session_id: str) -> TakeoverRow | None:
        r = self.db.query_one(
            "SELECT * FROM takeovers WHERE session_id = ? AND ended_at IS NULL", (session_id,)
        )
        return None if r is None else _row(r)

    def history(self, session_id: str | None = None, limit: int = 20) -> list[TakeoverRow]:
        if session_id is None:
            rows = self.db.query("SELECT * FROM takeovers ORDER BY id DESC LIMIT ?", (limit,))
        else:
            rows = self.db.query(
                "SELECT * FROM takeovers WHERE session_id = ? ORDER BY id DESC LIMIT ?",
                (session_id, limit),
            )
        return [_row(r) for r in rows]
