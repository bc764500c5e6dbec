"""One session drives the desktop at a time.

The rule is asymmetric (docs/kernel.md, "Desktop coordinator"): a claim from the same agent
session only transfers the lane (an agent's delegated task and its own atomic clicks coexist); a
claim from a different agent session stops the previous holder and every sibling session of that
agent, with the cancel reason ``desktop_claimed``. Claims are serialised by a lock, so two
agents racing end with exactly one holder. The holder is mirrored in the ``leases`` table
(resource ``desktop@DISPLAY``: one lane per display, store/leases.py ``desktop_lane``), which
is also what a second kernel process on the same data dir sees; a process driving another
display has a lane of its own and stops no one here.

Actions themselves are serialised by :attr:`action_lock`: even two sessions of one agent never
interleave input on the desktop.

Across processes (a second ``deskpilot serve`` on the same X display) the rule is different:
the first process keeps the desktop and the second is refused, fast, with
``actuator_lease_conflict`` naming the holder's pid, before anything reaches the desktop (see
``kernel.lease``). A claim takes the display lease *before* it may stop anyone, so one process
never cancels another's sessions while that one is driving. The lease is held from a
session's first action while that session keeps acting, and let go ``LEASE_LINGER_SECONDS``
after its last action ends (or at once when the lane is released: pause, takeover, stop, kill,
close; and by the OS when the process dies). The linger is the point: an agent works in
observe → think → act steps seconds apart, and a second agent acting in those gaps would move
the pointer and the keyboard focus under the first one's plan (its next keystrokes land where
the other left the focus). An agent that has gone quiet for longer gives the desktop up, so a
forgotten session does not lock other agents out for the 5 minutes its implicit session lives.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from deskpilot.kernel.lease import DisplayLease
from deskpilot.protocol.session import CancelReason
from deskpilot.store.db import Database
from deskpilot.store.leases import LeaseRepository, LeaseRow, desktop_lane
from deskpilot.store.session_rows import SessionRepository

#: how long a process keeps the display lease after its last action ended
LEASE_LINGER_SECONDS = 30.0

#: stops a session with a reason; the broker's stop, so claims use the same path as a stop
Stopper = Callable[[str, CancelReason], Awaitable[object]]


@dataclass(frozen=True, slots=True)
class ClaimResult:
    session_id: str
    agent_session_id: str
    transferred_from: str | None
    stopped: tuple[str, ...]


class _ActionLane:
    """``async with coordinator.action_lock``: the in-process lock, then the display lease
    (refused at once when another process holds it), marked acting until the action ends."""

    def __init__(self, coordinator: DesktopCoordinator) -> None:
        self._coordinator = coordinator
        self._lock = asyncio.Lock()

    def locked(self) -> bool:
        return self._lock.locked()

    async def __aenter__(self) -> None:
        await self._lock.acquire()
        try:
            self._coordinator._take_lease(acting=True)
        except BaseException:
            self._lock.release()
            raise

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self._coordinator._action_ended()
        finally:
            self._lock.release()


class DesktopCoordinator:
    def __init__(
        self,
        db: Database,
        stopper: Stopper,
        *,
        lease: DisplayLease | None = None,
    ) -> None:
        self._leases = LeaseRepository(db)
        self._sessions = SessionRepository(db)
        self._stop = stopper
        self._claim_lock = asyncio.Lock()
        self.action_lock = _ActionLane(self)
        self.lease = lease or DisplayLease(linger_s=LEASE_LINGER_SECONDS)
        #: this process's display's lane in the ``leases`` table (its display as it was when
        #: the kernel started: the one its host drives)
        self.lane = desktop_lane(self.lease.display)
        self._lease_for: tuple[str, str] | None = None
        self._linger: asyncio.TimerHandle | None = None
        self._acting = 0

    # ------------------------------------------------------------------ the display lease
    def _take_lease(self, *, acting: bool = False) -> None:
        who = self._lease_for
        if who is None:
            row = self._leases.get(self.lane)
            who = (row.session_id, row.agent_session_id) if row else ("unknown", "unknown")
        self.lease.acquire(*who)  # raises actuator_lease_conflict, naming the holder
        if acting:
            self._acting += 1
            self._cancel_linger()
            self.lease.mark(acting=True)

    def _action_ended(self) -> None:
        self._acting = max(0, self._acting - 1)
        if self._acting or not self.lease.held:
            return
        if self._lease_for is None:  # the lane was released while the action ran
            self._cancel_linger()
            self.lease.release()
            return
        self.lease.mark(acting=False)
        self._cancel_linger()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._linger = loop.call_later(self.lease.linger_s, self._linger_expired)

    def _linger_expired(self) -> None:
        self._linger = None
        if not self._acting:
            self.lease.release()

    def _cancel_linger(self) -> None:
        if self._linger is not None:
            self._linger.cancel()
            self._linger = None

    def lease_status(self) -> dict[str, Any]:
        return self.lease.status()

    def close(self) -> None:
        """Let the display go (the OS also does when the process ends)."""
        self._cancel_linger()
        self.lease.release()

    def holder(self) -> LeaseRow | None:
        lease = self._leases.get(self.lane)
        if lease is None:
            return None
        row = self._sessions.get(lease.session_id)
        if row is None or row.terminal:
            self._leases.release(self.lane, lease.session_id)
            return None
        return lease

    def holds(self, session_id: str) -> bool:
        lease = self._leases.get(self.lane)
        return lease is not None and lease.session_id == session_id

    async def claim(self, session_id: str, agent_session_id: str) -> ClaimResult:
        async with self._claim_lock:
            # another process driving this display refuses the claim before anyone is stopped
            self.lease.acquire(session_id, agent_session_id)
            self._lease_for = (session_id, agent_session_id)
            if not self._acting:  # a claim that is never followed by an action lets go too
                self._action_ended_later()
            current = self.holder()
            if current is None or current.session_id == session_id:
                self._leases.put(self.lane, session_id, agent_session_id)
                return ClaimResult(session_id, agent_session_id, None, ())
            if current.agent_session_id == agent_session_id:
                self._leases.put(self.lane, session_id, agent_session_id)
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
            self._leases.put(self.lane, session_id, agent_session_id)
            return ClaimResult(session_id, agent_session_id, current.session_id, tuple(stopped))

    def _action_ended_later(self) -> None:
        self._acting += 1
        self._action_ended()

    def release(self, session_id: str) -> bool:
        released = self._leases.release(self.lane, session_id)
        if self._lease_for is not None and self._lease_for[0] == session_id:
            self._lease_for = None
            if not self._acting:
                self._cancel_linger()
                self.lease.release()
        return released
