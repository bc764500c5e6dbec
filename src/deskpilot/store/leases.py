"""The ``leases`` table: who holds a shared resource (the desktop lane) right now.

The desktop coordinator decides in process; the row mirrors its decision so other processes
(CLI, dashboard) can see who drives the desktop, and so a second kernel process on the same
data dir can tell that the lane is taken.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass

from deskpilot.store.repo import Repository


def desktop_lane(display: str | None) -> str:
    """The resource name of one display's desktop lane. Per display: two servers on one data
    dir driving two displays (a person's and a private one) are two desktops, and a claim on
    one must not stop the other's agents (``desktop_claimed``; a trial saw just that)."""
    return f"desktop@{display}" if display else "desktop"


@dataclass(frozen=True, slots=True)
class LeaseRow:
    resource: str
    session_id: str
    agent_session_id: str
    acquired_at: float


class LeaseRepository(Repository):
    def put(
        self,
        resource: str,
        session_id: str,
        agent_session_id: str,
        *,
        conn: sqlite3.Connection | None = None,
    ) -> LeaseRow:
        now = time.time()
        with self._tx(conn) as c:
            c.execute(
                "INSERT INTO leases(resource, session_id, agent_session_id, acquired_at) "
                "VALUES (?,?,?,?) ON CONFLICT(resource) DO UPDATE SET "
                "session_id=excluded.session_id, agent_session_id=excluded.agent_session_id, "
                "acquired_at=excluded.acquired_at",
                (resource, session_id, agent_session_id, now),
            )
        return LeaseRow(resource, session_id, agent_session_id, now)

    def get(self, resource: str) -> LeaseRow | None:
        r = self.db.query_one("SELECT * FROM leases WHERE resource = ?", (resource,))
        if r is None:
            return None
        return LeaseRow(
            r["resource"], r["session_id"], r["agent_session_id"], float(r["acquired_at"])
        )

    def release_lanes(self, session_id: str) -> int:
        """Every desktop lane ``session_id`` holds let go (a stopped session's, whichever
        display it drove)."""
        with self._tx(None) as c:
            cur = c.execute(
                "DELETE FROM leases WHERE session_id = ? AND "
                "(resource = 'desktop' OR resource LIKE 'desktop@%')",
                (session_id,),
            )
            return cur.rowcount

    def release(
        self, resource: str, session_id: str, *, conn: sqlite3.Connection | None = None
    ) -> bool:
        """Release only if ``session_id`` still holds it (a late release never drops a
        newer holder's lease)."""
        with self._tx(conn) as c:
            cur = c.execute(
                "DELETE FROM leases WHERE resource = ? AND session_id = ?", (resource, session_id)
            )
            return cur.rowcount == 1
