"""One session drives the desktop at a time.

The rule is asymmetric, as in the seed (§6.2): a claim from the same agent session only
transfers the lane (an agent's delegated task and its own atomic clicks coexist); a claim from a
different agent session stops the previous holder and every sibling session of that agent,
with the cancel reason ``desktop_claimed``. Claims are serialised by a lock, so two agents
racing end with exactly one holder. The holder is mirrored in the ``leases`` table (resource
``desktop``), which is also what a second kernel process on the same data dir sees.

Actions themselves are serialised by :attr:`action_lock`: even two sessions of one agent never
interleave input on the desktop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from deskpilot.protocol.session import CancelReason
from deskpilot.store.db import Database
from deskpilot.store.leases import LeaseRepository, LeaseRow
from deskpilot.store.sessions import SessionRepository

DESKTOP = "desktop"

#: stops a session with a reason; the broker's stop, so claims use the same path as a stop
Stopper = Callable[[str, CancelReason], Awaitable[object]]


@dataclass(frozen=True, slots=True)
class ClaimResult:
    session_id: str
    agent_session_id: str
    transferred_from: str | None
    stopped: tuple[str, ...]


class DesktopCoordinator:
    def __init__(self, db: Database, stopper: Stopper) -> None:
        self._leases = LeaseRepository(db)
        self._sessions = SessionRepository(db)
        self._stop = stopper
        self._claim_lock = asyncio.Lock()
        self.action_lock = asyncio.Lock()

    def holder(self) -> LeaseRow | None:
        lease = self._leases.get(DESKTOP)
        if lease is None:
            return None
        row = self._sessions.get(lease.session_id)
        if row is None or row.terminal:
            self._leases.release(DESKTOP, lease.session_id)
            return None
        return lease

    def holds(self, session_id: str) -> bool:
        lease = self._leases.get(DESKTOP)
        return lease is not None and lease.session_id == session_id

    async def claim(self, session_id: str, agent_session_id: str) -> ClaimResult:
        async with self._claim_lock:
            current = self.holder()
            if current is None or current.session_id == session_id:
                self._leases.put(DESKTOP, session_id, agent_session_id)
                return ClaimResult(session_id, agent_session_id, None, ())
            if current.agent_session_id == agent_session_id:
                self._leases.put(DESKTOP, session_id, agent_session_id)
                return ClaimResult(session_id, agent_session_id, current.session_id, ())
            # a different agent: stop the holder and all its siblings, then take the lane
            victims = [current.session_id] + [
                s.id
                for s in self._sessions.list_active(current.agent_session_id)
                if s.id != current.session_id
            ]
            stopped: list[str] = []
            for victim in victims:
                row = self._sessions.get(victim)
                if row is None or row.terminal:
                    continue
                await self._stop(victim, CancelReason.DESKTOP_CLAIMED)
                stopped.append(victim)
            self._leases.put(DESKTOP, session_id, agent_session_id)
            return ClaimResult(session_id, agent_session_id, current.session_id, tuple(stopped))

    def release(self, session_id: str) -> bool:
        return self._leases.release(DESKTOP, session_id)
