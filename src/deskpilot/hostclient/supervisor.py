"""Keeps one host connection usable, within a restart budget (docs/hostclient.md, "The supervisor").

Two ways a host is found dead, handled differently:

- The heartbeat (a fresh get_capabilities every 5 s while the lane is idle) fails 3 times in a
  row: the host is marked unhealthy and replaced at once. One failure is not enough; a single
  slow answer must not cost a restart. A busy host is not probed: its calls have their own
  timeouts, which stop it if it hangs. A probe's own timeout does not kill the host.
- An operation meets a hard error (the host died, broke the protocol, timed out, or answered
  with an error that drops the connection): the client records a terminal failure and nothing
  reconnects synchronously. The next ``acquire()`` decides.

``acquire(session)`` restarts a dead host only while that session's restart budget (1) lasts;
after that it fails fast with ``native_host_unavailable`` (diagnostic
``native_host_restart_budget_exhausted``) until the session is cancelled, which resets its
budget. The first start is free. Calls without a session share one budget, which every
session cancellation also resets, so an old crash cannot lock the desktop for good.

On every reconnect the ``on_reconnect`` callbacks run (the kernel drops the frames it knows:
the new host has none of them; target bindings are kept).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from deskpilot.hostclient.client import HostClient
from deskpilot.hostclient.config import HostConfig
from deskpilot.hostclient.failures import setting_refused
from deskpilot.protocol.errors import DeskpilotError, ErrorCode

log = logging.getLogger(__name__)

SupervisorState = Literal[
    "idle", "starting", "ready", "unhealthy", "disconnected", "failed", "closed"
]
NO_SESSION = ""
RESTART_BUDGET_EXHAUSTED = "native_host_restart_budget_exhausted"


@dataclass(slots=True)
class SupervisorStatus:
    state: SupervisorState
    pid: int | None
    generation: int
    restarts_total: int
    restart_budget: int
    restarts_by_session: dict[str, int]
    budget_exhausted_sessions: list[str]
    heartbeat_failures: int
    heartbeat_reconnects: int
    heartbeat_threshold: int
    heartbeat_interval_s: float
    last_heartbeat_ok_at: float | None
    last_failure: dict[str, Any] | None
    lane_in_flight: int
    lane_queued: int
    artifact: dict[str, object] | None = field(default=None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "pid": self.pid,
            "generation": self.generation,
            "restartsTotal": self.restarts_total,
            "restartBudgetPerSession": self.restart_budget,
            "restartsBySession": dict(self.restarts_by_session),
            "budgetExhaustedSessions": list(self.budget_exhausted_sessions),
            "heartbeat": {
                "consecutiveFailures": self.heartbeat_failures,
                "reconnects": self.heartbeat_reconnects,
                "unhealthyAfter": self.heartbeat_threshold,
                "intervalS": self.heartbeat_interval_s,
                "lastOkAgoS": (
                    None
                    if self.last_heartbeat_ok_at is None
                    else round(time.monotonic() - self.last_heartbeat_ok_at, 3)
                ),
            },
            "lastFailure": self.last_failure,
            "lane": {"inFlight": self.lane_in_flight, "queued": self.lane_queued},
            "artifact": self.artifact,
        }


class HostSupervisor:
    def __init__(self, config: HostConfig | None = None, *, heartbeat: bool = True) -> None:
        self.config = config or HostConfig()
        self.state: SupervisorState = "idle"
        self.client: HostClient | None = None
        self.generation = 0  # successful starts
        self.restarts_total = 0
        self.heartbeat_failures = 0
        self.heartbeat_reconnects = 0
        self.last_heartbeat_ok_at: float | None = None
        self.last_failure: DeskpilotError | None = None
        self._attempts = 0  # start attempts, successful or not
        self._restarts: dict[str, int] = {}
        self._exhausted: set[str] = set()
        self._lock = asyncio.Lock()
        self._heartbeat_enabled = heartbeat
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._on_reconnect: list[Callable[[], None]] = []

    @property
    def start_attempts(self) -> int:
        return self._attempts

    def on_reconnect(self, callback: Callable[[], None]) -> None:
        self._on_reconnect.append(callback)

    # ------------------------------------------------------------------ acquiring

    async def acquire(self, session_id: str | None = None) -> HostClient:
        key = session_id or NO_SESSION
        client = self.client
        if client is not None and client.alive:
            return client
        if self.state == "closed":
            raise DeskpilotError(
                ErrorCode.NATIVE_HOST_UNAVAILABLE, "the host supervisor is closed", retryable=False
            )
        async with self._lock:
            client = self.client
            if client is not None and client.alive:
                return client
            if client is not None and client.failure is not None:
                self.last_failure = client.failure
            if setting_refused(self.last_failure):
                # started with the same environment, the host would refuse the same way
                assert self.last_failure is not None
                raise self.last_failure
            charged = self._attempts > 0
            if charged:
                used = self._restarts.get(key, 0)
                if used >= self.config.restart_budget:
                    self._exhausted.add(key)
                    self.state = "failed"
                    raise self._budget_error(key)
                self._restarts[key] = used + 1
                self.restarts_total += 1
            await self._replace(reason="acquire")
            assert self.client is not None
            return self.client

    def _budget_error(self, key: str) -> DeskpilotError:
        cause = self.last_failure.message if self.last_failure else "the host stopped"
        who = f"session {key!r}" if key else "calls without a session"
        return DeskpilotError(
            ErrorCode.NATIVE_HOST_UNAVAILABLE,
            f"the host restart budget ({self.config.restart_budget}) for {who} is spent "
            f"({cause}); cancel the session to reset it",
            retryable=False,
            details={
                "diagnosticCode": RESTART_BUDGET_EXHAUSTED,
                "session": key or None,
                "restartBudget": self.config.restart_budget,
            },
        )

    async def _replace(self, *, reason: str) -> None:
        """Stop the current host (if any) and start a new one. Caller holds the lock."""
        old = self.client
        if old is not None:
            await old.close()
        reconnect = self.generation > 0
        self.state = "starting"
        self._attempts += 1
        client = HostClient(self.config)
        self.client = client
        try:
            await client.start()
        except DeskpilotError as exc:
            self.last_failure = exc
            self.state = "disconnected"
            log.warning("host start failed (%s): %s", reason, exc.code.value)
            if setting_refused(exc):  # names and values of settings: no secrets
                log.warning("%s", exc.message)
            raise
        self.generation += 1
        self.heartbeat_failures = 0
        self.last_heartbeat_ok_at = time.monotonic()
        self.state = "ready"
        if reconnect:
            for callback in self._on_reconnect:
                try:
                    callback()
                except Exception:  # a listener's bug must not block the reconnect
                    log.exception("on_reconnect callback failed")
        self._ensure_heartbeat()

    def reset_budget(self, session_id: str | None) -> None:
        """A cancelled session gets its budget back (so does the session-less pool)."""
        for key in {session_id or NO_SESSION, NO_SESSION}:
            self._restarts.pop(key, None)
            self._exhausted.discard(key)
        if self.state == "failed" and not self._exhausted:
            self.state = "disconnected" if not (self.client and self.client.alive) else "ready"

    def session_budget_left(self, session_id: str | None) -> int:
        used = self._restarts.get(session_id or NO_SESSION, 0)
        return max(0, self.config.restart_budget - used)

    # ------------------------------------------------------------------ heartbeat

    def _ensure_heartbeat(self) -> None:
        if not self._heartbeat_enabled:
            return
        if self._heartbeat_task is None or self._heartbeat_task.done():
            self._heartbeat_task = asyncio.create_task(
                self._heartbeat_loop(), name="deskpilot-host-heartbeat"
            )

    async def _heartbeat_loop(self) -> None:
        while self.state != "closed":
            await asyncio.sleep(self.config.heartbeat_interval_s)
            with contextlib.suppress(Exception):
                await self.heartbeat_once()

    async def heartbeat_once(self) -> bool | None:
        """One probe. True = healthy, False = a failure, None = not probed (busy/dead)."""
        client = self.client
        if client is None or client.failure is not None or client.state != "ready":
            return None  # a recorded terminal failure waits for the next acquire
        if not client.lane.idle:
            return None
        try:
            await client.probe(self.config.heartbeat_timeout_s)
        except DeskpilotError as exc:
            if client is not self.client:
                return None
            self.heartbeat_failures += 1
            log.info(
                "host heartbeat failed (%d/%d): %s",
                self.heartbeat_failures,
                self.config.heartbeat_failure_threshold,
                exc.code.value,
            )
            if self.heartbeat_failures >= self.config.heartbeat_failure_threshold:
                self.state = "unhealthy"
                self.last_failure = DeskpilotError(
                    ErrorCode.NATIVE_HOST_UNAVAILABLE,
                    f"{self.heartbeat_failures} consecutive heartbeats failed ({exc.message})",
                    retryable=False,
                )
                await self._reconnect_unhealthy()
            return False
        self.heartbeat_failures = 0
        self.last_heartbeat_ok_at = time.monotonic()
        if self.state in ("unhealthy", "disconnected"):
            self.state = "ready"
        return True

    async def _reconnect_unhealthy(self) -> None:
        async with self._lock:
            if self.state != "unhealthy":
                return
            self.restarts_total += 1
            self.heartbeat_reconnects += 1
            # on failure the state is "disconnected"; the next acquire decides
            with contextlib.suppress(DeskpilotError):
                await self._replace(reason="heartbeat")

    # ------------------------------------------------------------------ status / close

    def status(self) -> SupervisorStatus:
        client = self.client
        state = self.state
        if state == "ready" and (client is None or not client.alive):
            state = "disconnected"
        return SupervisorStatus(
            state=state,
            pid=client.pid if client is not None and client.alive else None,
            generation=self.generation,
            restarts_total=self.restarts_total,
            restart_budget=self.config.restart_budget,
            restarts_by_session={k or "(no session)": v for k, v in self._restarts.items()},
            budget_exhausted_sessions=sorted(k or "(no session)" for k in self._exhausted),
            heartbeat_failures=self.heartbeat_failures,
            heartbeat_reconnects=self.heartbeat_reconnects,
            heartbeat_threshold=self.config.heartbeat_failure_threshold,
            heartbeat_interval_s=self.config.heartbeat_interval_s,
            last_heartbeat_ok_at=self.last_heartbeat_ok_at,
            last_failure=self.last_failure.to_dict() if self.last_failure else None,
            lane_in_flight=client.lane.in_flight if client else 0,
            lane_queued=client.lane.queued if client else 0,
            artifact=client.artifact.to_dict() if client and client.artifact else None,
        )

    async def close(self) -> None:
        self.state = "closed"
        task = self._heartbeat_task
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        if self.client is not None:
            await self.client.close()
