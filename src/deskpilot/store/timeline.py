"""The ``timeline_events`` table: the append-only story of each session.

Payloads hold codes, ids, levels and names the person needs to follow what happened; never
typed text, UI text values or image data.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from typing import Any

from deskpilot.protocol.session import EventType
from deskpilot.store.repo import Repository, dumps, loads


@dataclass(frozen=True, slots=True)
class TimelineEventRow:
    seq: int
    session_id: str
    type: EventType
    action_id: str | None
    payload: dict[str, Any]
    created_at: float


def _row(r: sqlite3.Row) -> TimelineEventRow:
    return TimelineEventRow(
        seq=int(r["seq"]),
        session_id=r["session_id"],
        type=EventType(r["type"]),
        action_id=r["action_id"],
        payload=loads(r["payload_json"]) or {},
        created_at=float(r["created_at"]),
    )


class TimelineRepository(Repository):
    def append(
        self,
        session_id: str,
        type_: EventType,
        *,
        action_id: str | None = None,
        payload: dict[str, Any] | None = None,
        conn: sqlite3.Connection | None = None,
    ) -> TimelineEventRow:
        now = time.time()
        body = payload or {}
        with self._tx(conn) as c:
            cur = c.execute(
                "INSERT INTO timeline_events(session_id, type, action_id, payload_json, "
                "created_at) VALUES (?,?,?,?,?)",
                (session_id, type_.value, action_id, dumps(body), now),
            )
            seq = int(cur.lastrowid or 0)
        return TimelineEventRow(seq, session_id, type_, action_id, body, now)

    def list(
        self, session_id: str, *, after_seq: int = 0, limit: int = 1_000
    ) -> list[TimelineEventRow]:
        rows = self.db.query(
            "SELECT * FROM timeline_events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (session_id, after_seq, limit),
        )
        return [_row(r) for r in rows]

    def last(self, session_id: str) -> TimelineEventRow | None:
        r = self.db.query_one(
            "SELECT * FROM timeline_events WHERE session_id = ? ORDER BY seq DESC LIMIT 1",
            (session_id,),
        )
        return None if r is None else _row(r)
