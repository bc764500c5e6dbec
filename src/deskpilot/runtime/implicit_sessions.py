"""One implicit computer session per agent session, released after 5 minutes idle.

Reasoning models often think for minutes between tool calls; a short idle timer would make the
session vanish and reappear mid-task. The timer is cleared on entry to every observe and
dispatch and re-armed in ``finally``, so it can never fire in the middle of an action (which
would fake a ``session_canceled``). It is an event-loop timer, so it never keeps the process
alive. A released session is rebuilt transparently on the next call. A session the person
has taken over is not released while they hold the desktop (the release would stop it and
end their takeover); the timer is armed again instead.

The kernel can also end the session under its agent: another agent session's action claims
the desktop and stops it (``desktop_claimed``, the coordinator's last-claim rule), the kill
switch stops every session, or another process on the data dir does either. Left in place, a
dead session would refuse every later call of its agent, reads included, until the idle
release. So every call first *surveys* it (``survey``: one read of its row): an ended session
is retired, its stateIds are voided with the kernel's reason, and the next observe opens a
fresh one. A displaced agent (``desktop_claimed``) is told so on its next action in that turn
(``check_displaced``: ``session_canceled``, nothing dispatched), because its plan was made on
a desktop another agent has since changed; observing again (or a new turn) ends the notice,
and acting then takes the desktop back. The stricter rules stay where they are: a user's
``stop`` refuses actions for the rest of the turn (``Turn.stopped``), the kill switch until
unhalt or a new client session (the kernel's halt).

Contract of the atomic path: 2,000 steps, 12 hours, 20 consecutive no-op actions.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from deskpilot.kernel.port import KernelPort
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import (
    ATOMIC_CONTRACT_LIMITS,
    REFUSED_BY,
    SESSION_STATE,
    CancelReason,
    TaskContract,
)
from deskpilot.runtime.refusals import refusal

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
    #: the person holds the desktop for this session (a takeover from any path)
    taken_over: bool = False
    #: that takeover came from this agent's own ``takeover`` tool, so its ``resume`` may
    #: hand back; one from outside (the dashboard, the CLI) is the person's to end
    takeover_by_tool: bool = False
    #: the host was told to cancel it (a bounded budget ran out mid-call): it is replaced on
    #: its next use, since the host refuses a cancelled session for good
    host_cancelled: bool = False
    #: the contract's limits: the atomic ones, or a delegated task's (``adopt``)
    max_steps: int = ATOMIC_MAX_STEPS
    max_runtime_ms: int = ATOMIC_MAX_RUNTIME_MS
    max_noops: int = ATOMIC_MAX_NOOPS
    #: a delegated task's session, adopted under its operator's key; never idle-released
    delegated: bool = False

    def check_contract(self) -> None:
        what = "task" if self.delegated else "agent session"
        if self.steps >= self.max_steps:
            raise refusal(
                ErrorCode.TASK_STEP_LIMIT_EXCEEDED,
                f"This {what} reached its step limit ({self.max_steps}).",
            )
        if (time.monotonic() - self.created_at) * 1000 >= self.max_runtime_ms:
            raise refusal(
                ErrorCode.TASK_RUNTIME_EXCEEDED,
                f"This {what} reached its runtime limit ({self.max_runtime_ms // 1000} s).",
            )
        if self.consecutive_noops >= self.max_noops:
            raise refusal(
                ErrorCode.TASK_NOOP_LIMIT_EXCEEDED,
                f"{self.max_noops} consecutive actions changed nothing. Observe the app and "
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
                "maxSteps": self.max_steps,
                "maxRuntimeMs": self.max_runtime_ms,
                "maxConsecutiveNoops": self.max_noops,
            },
            "ageMs": round((time.monotonic() - self.created_at) * 1000),
            "busy": self.busy > 0,
            "idleReleaseInMs": None if idle_in is None else round(idle_in * 1000),
            "boundTarget": self.bound_target,
            "takenOver": self.taken_over,
        }


@dataclass(frozen=True)
class EndedSession:
    """An implicit session the kernel ended under its agent (not released by this runtime)."""

    agent_session: str
    session_id: str
    #: the kernel's cancel reason (``desktop_claimed``, ``kill_switch``, …)
    reason: str
    #: the agent's turn when the end was found; a displacement notice holds only in it
    turn: str | None


def displaced_error() -> DeskpilotError:
    """The refusal of a displaced agent's action: the same error the kernel raises for an
    action of its canceled session (``session_canceled``, reason ``desktop_claimed``, marked
    as a refusal by the session's state, so nothing was dispatched), so its words come from
    one place, ``REASON_ADVICE`` in runtime/refusals.py."""
    return DeskpilotError(
        ErrorCode.SESSION_CANCELED,
        "another agent session took the desktop",
        details={"reason": CancelReason.DESKTOP_CLAIMED.value, REFUSED_BY: SESSION_STATE},
    )


class ImplicitSessions:
    def __init__(
        self,
        kernel: KernelPort,
        *,
        idle_release_s: float = IDLE_RELEASE_S,
        on_release: Callable[[ImplicitSession], None] | None = None,
        on_ended: Callable[[EndedSession], None] | None = None,
    ) -> None:
        self.kernel = kernel
        self.idle_release_s = idle_release_s
        self._on_release = on_release
        self._on_ended = on_ended
        self._sessions: dict[str, ImplicitSession] = {}
        #: agent session → the displacement it has not been told about by an action yet
        self._displaced: dict[str, EndedSession] = {}
        self._lock = asyncio.Lock()
        self.released = 0
        self.ended = 0

    def get(self, agent_session: str) -> ImplicitSession | None:
        return self._sessions.get(agent_session)

    def by_session_id(self, session_id: str) -> ImplicitSession | None:
        """The books that hold this kernel session (an agent's, or a task's adopted one)."""
        return next((s for s in self._sessions.values() if s.session_id == session_id), None)

    def adopt(self, key: str, session_id: str, contract: TaskContract) -> ImplicitSession:
        """Hold a delegated task's session under its operator's key, with the task's limits,
        so the operator acts through the same tool path as any agent (``using(key)``). It is
        not idle-released; the task ends it (``forget``)."""
        sess = ImplicitSession(
            agent_session=key,
            session_id=session_id,
            max_steps=contract.max_steps,
            max_runtime_ms=contract.max_runtime_ms,
            max_noops=contract.max_consecutive_noops,
            delegated=True,
        )
        self._sessions[key] = sess
        return sess

    def forget(self, key: str) -> None:
        """Drop an adopted session without stopping it (its task ends it in the kernel)."""
        sess = self._sessions.pop(key, None)
        if sess is not None and sess.idle_handle is not None:
            sess.idle_handle.cancel()

    def displaced(self, agent_session: str) -> EndedSession | None:
        return self._displaced.get(agent_session)

    def survey(self, agent_session: str, turn: str | None) -> EndedSession | None:
        """Retire the agent's session if the kernel has ended it (module docstring); the
        caller passes the agent's turn *before* this call's ``turn_id`` is applied, so a
        displacement found on the first call of a new turn does not hold in that turn."""
        sess = self._sessions.get(agent_session)
        if sess is None:
            return None
        reason = self.kernel.session_ended(sess.session_id)
        if reason is None:
            return None
        del self._sessions[agent_session]
        if sess.idle_handle is not None:
            sess.idle_handle.cancel()
            sess.idle_handle = None
        ended = EndedSession(agent_session, sess.session_id, reason, turn)
        self.ended += 1
        if reason == CancelReason.DESKTOP_CLAIMED:
            self._displaced[agent_session] = ended
        if self._on_ended is not None:
            self._on_ended(ended)
        return ended

    def check_displaced(self, agent_session: str, turn: str) -> None:
        """Before an action: refuse it (nothing dispatched) when another agent session took
        the desktop from this one in this turn and it has not observed since."""
        notice = self._displaced.get(agent_session)
        if notice is None:
            return
        if notice.turn != turn:  # a new turn starts afresh
            del self._displaced[agent_session]
            return
        raise displaced_error()

    async def _ensure(self, agent_session: str) -> ImplicitSession:
        sess = self._sessions.get(agent_session)
        if sess is not None and sess.host_cancelled and not sess.busy:
            await self.release(agent_session, CancelReason.BUDGET_EXPIRED)
            sess = None
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
        """Hold the session for one observe or dispatch: idle timer off inside, on after.

        Using the session again (an observation, a control; an action only gets here past
        ``check_displaced``) ends a displacement notice: what the agent does next is based on
        what it reads now."""
        self._displaced.pop(agent_session, None)
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
        if sess.delegated:
            return
        loop = asyncio.get_running_loop()
        if sess.idle_handle is not None:
            sess.idle_handle.cancel()
        sess.idle_handle = loop.call_later(self.idle_release_s, self._idle_fired, sess)

    def _idle_fired(self, sess: ImplicitSession) -> None:
        sess.idle_handle = None
        if sess.busy or self._sessions.get(sess.agent_session) is not sess:
            return
        if self.kernel.takeover_state(sess.session_id).get("held"):
            # the person holds the desktop for it: releasing would end their takeover
            self._arm(sess)
            return
        task = asyncio.get_running_loop().create_task(
            self.release(sess.agent_session, CancelReason.IDLE_RELEASE)
        )
        task.add_done_callback(_log_failure)

    async def release(self, agent_session: str, reason: CancelReason) -> None:
        self._displaced.pop(agent_session, None)
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
