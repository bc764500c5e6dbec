"""One implicit computer session per agent session, released after 5 minutes idle.

Reasoning models often think for minutes between tool calls; a short idle timer would make the
session vanish and reappear mid-task. The timer is cleared on entry to every observe and
dispatch and re-armed in ``finally``, so it can never fire in the middle of an action (which
would fake a ``session_canceled``). It is an event-loop timer, so it never keeps the process
alive. A released session is rebuilt transparently on the next call.

Contract of the atomic path: 2,000 steps, 12 hours, 20 consecutive no-op actions.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from deskpilot.protocol.errors import ErrorCode
from deskpilot.protocol.session import ATOMIC_CONTRACT_LIMITS, CancelReason, TaskContract
from deskpilot.runtime.errors import refusal
from deskpilot.runtime.kernel_seam import KernelPort

log = logging.getLogger(__name__)

IDLE_RELEASE_S = 300.0
ATOMIC_MAX_STEPS = ATOMIC_CONTRACT_LIMITS["max_steps"]
ATOMIC_MAX_RUNTIME_MS = ATOMIC_CONTRACT_LIMITS["max_runtime_ms"]
ATOMIC_MAX_NOOPS = ATOMIC_CONTRACT_LIMITS["max_consecutive_noops"]


def atomic_contract() -> TaskContract:
    return TaskContract(
        objective="atomic actions from an agent session",
        max_steps=ATOMIC_MAX_STEPS,
        max_runtime_ms=ATOMIC_MAX_RUNTIME_MS,
        max_consecutive_noops=ATOMIC_MAX_NOOPS,
    )


@dataclass
class ImplicitSession:
    agent_session: str
    session_id: str
    created_at: float = field(default_factory=time.monotonic)
    steps: int = 0
    consecutive_noops: int = 0
    busy: int = 0
    idle_handle: asyncio.TimerHandle | None = None
    last_used: float = field(default_factory=time.monotonic)
    bound_target: dict[str, object] | None = None
    taken_over: bool = False

    def check_contract(self) -> None:
        if self.steps >= ATOMIC_MAX_STEPS:
            raise refusal(
                ErrorCode.TASK_STEP_LIMIT_EXCEEDED,
                f"This agent session reached the atomic step limit ({ATOMIC_MAX_STEPS}).",
            )
        if (time.monotonic() - self.created_at) * 1000 >= ATOMIC_MAX_RUNTIME_MS:
            raise refusal(
                ErrorCode.TASK_RUNTIME_EXCEEDED,
                "This agent session reached the atomic runtime limit (12 h).",
            )
        if self.consecutive_noops >= ATOMIC_MAX_NOOPS:
            raise refusal(
                ErrorCode.TASK_NOOP_LIMIT_EXCEEDED,
                f"{ATOMIC_MAX_NOOPS} consecutive actions changed nothing. Observe the app and "
                "change approach, or ask the user.",
            )

    def to_json(self, state: str | None) -> dict[str, object]:
        idle_in: float | None = None
        if self.idle_handle is not None:
            idle_in = max(0.0, self.idle_handle.when() - asyncio.get_running_loop().time())
        return {
            "sessionId": self.session_id,
            "state": state,
            "steps": self.steps,
            "consecutiveNoops": self.consecutive_noops,
            "contract": {
                "maxSteps": ATOMIC_MAX_STEPS,
                "maxRuntimeMs": ATOMIC_MAX_RUNTIME_MS,
                "maxConsecutiveNoops": ATOMIC_MAX_NOOPS,
            },
            "ageMs": round((time.monotonic() - self.created_at) * 1000),
            "busy": self.busy > 0,
            "idleReleaseInMs": None if idle_in is None else round(idle_in * 1000),
            "boundTarget": self.bound_target,
            "takenOver": self.taken_over,
        }


class ImplicitSessions:
    def __init__(
        self,
        kernel: KernelPort,
        *,
        idle_release_s: float = IDLE_RELEASE_S,
        on_release: Callable[[ImplicitSession], None] | None = None,
    ) -> None:
        self.kernel = kernel
        self.idle_release_s = idle_release_s
        self._on_release = on_release
        self._sessions: dict[str, ImplicitSession] = {}
        self._lock = asyncio.Lock()
        self.released = 0

    def get(self, agent_session: str) -> ImplicitSession | None:
        return self._sessions.get(agent_session)

    async def _ensure(self, agent_session: str) -> ImplicitSession:
        sess = self._sessions.get(agent_session)
        if sess is not None:
            return sess
        async with self._lock:
            sess = self._sessions.get(agent_session)
            if sess is None:
                session_id = await self.kernel.open_session(agent_session, atomic_contract())
                sess = ImplicitSession(agent_session=agent_session, session_id=session_id)
                self._sessions[agent_session] = sess
        return sess

    @contextlib.asynccontextmanager
    async def using(self, agent_session: str) -> AsyncIterator[ImplicitSession]:
        """Hold the session for one observe or dispatch: idle timer off inside, on after."""
        sess = await self._ensure(agent_session)
        if sess.idle_handle is not None:
            sess.idle_handle.cancel()
            sess.idle_handle = None
        sess.busy += 1
        try:
            yield sess
        finally:
            sess.busy -= 1
            sess.last_used = time.monotonic()
            if sess.busy == 0 and self._sessions.get(agent_session) is sess:
                self._arm(sess)

    def _arm(self, sess: ImplicitSession) -> None:
        loop = asyncio.get_running_loop()
        if sess.idle_handle is not None:
            sess.idle_handle.cancel()
        sess.idle_handle = loop.call_later(self.idle_release_s, self._idle_fired, sess)

    def _idle_fired(self, sess: ImplicitSession) -> None:
        sess.idle_handle = None
        if sess.busy or self._sessions.get(sess.agent_session) is not sess:
            return
        task = asyncio.get_running_loop().create_task(
            self.release(sess.agent_session, CancelReason.IDLE_RELEASE)
        )
        task.add_done_callback(_log_failure)

    async def release(self, agent_session: str, reason: CancelReason) -> None:
        sess = self._sessions.pop(agent_session, None)
        if sess is None:
            return
        if sess.idle_handle is not None:
            sess.idle_handle.cancel()
            sess.idle_handle = None
        self.released += 1
        if self._on_release is not None:
            self._on_release(sess)
        try:
            await self.kernel.stop(sess.session_id, reason)
        except Exception:  # the session is gone either way; never crash the loop for it
            log.warning("stopping implicit session %s failed", sess.session_id, exc_info=True)

    async def close_all(self, reason: CancelReason = CancelReason.SHUTDOWN) -> None:
        for agent_session in list(self._sessions):
            await self.release(agent_session, reason)


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("idle release failed", exc_info=task.exception())
