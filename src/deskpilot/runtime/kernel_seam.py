"""The single seam between the runtime and the execution kernel.

Every observation and action the runtime makes goes through a ``KernelPort``; sessions are
opened, paused, resumed, stopped and re-bound only here. ``kernel_port()`` returns
``deskpilot.kernel.service.Kernel`` (broker: freshness, policy, ledger, confirmations,
coordinator, halt) when it is installed, and otherwise ``DirectKernel``: a minimal session
state machine that refuses actions while paused or stopped and calls the backend directly,
without policy or ledger. ``status`` and ``diagnose_native_host`` say which one is in use.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from typing import Protocol

from deskpilot.hostclient.api import DesktopBackend, ObservedState
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import (
    EXECUTABLE_STATES,
    TERMINAL_STATES,
    CancelReason,
    SessionState,
    TaskContract,
)
from deskpilot.protocol.wire import Action, ActionResult, TargetSpec

log = logging.getLogger(__name__)


class GateOutcome(Protocol):
    @property
    def result(self) -> ActionResult: ...

    @property
    def approval_ms(self) -> float:
        """Time spent waiting for a person's approval inside the kernel (a subset)."""
        ...


class HaltView(Protocol):
    @property
    def halted(self) -> bool: ...

    @property
    def cause(self) -> str | None: ...

    @property
    def since_epoch_ms(self) -> int | None: ...


@dataclass(frozen=True)
class GateResult:
    result: ActionResult
    approval_ms: float = 0.0


@dataclass(frozen=True)
class HaltState:
    halted: bool
    cause: str | None = None
    since_epoch_ms: int | None = None


class KernelPort(Protocol):
    name: str

    async def open_session(self, agent_session: str, contract: TaskContract) -> str: ...

    async def observe(
        self, session_id: str, target: TargetSpec | None = None, *, include_screenshot: bool = True
    ) -> ObservedState: ...

    async def execute(
        self,
        session_id: str,
        frame_id: str,
        tree_version: str,
        action: Action,
        *,
        action_id: str | None = None,
        expected_app: str | None = None,
    ) -> GateOutcome: ...

    async def pause(self, session_id: str, *, takeover: bool = False) -> SessionState: ...

    async def resume(self, session_id: str) -> SessionState: ...

    async def stop(self, session_id: str, reason: CancelReason) -> SessionState: ...

    async def bind_target(self, session_id: str, target: TargetSpec) -> None: ...

    def session_state(self, session_id: str) -> SessionState | None: ...

    def client_session_began(self, agent_session_id: str) -> None: ...

    def halt_state(self, agent_session_id: str | None = None) -> HaltView: ...

    def check_halt(self, agent_session_id: str | None = None) -> None: ...

    async def close(self) -> None: ...


class DirectKernel:
    """Stand-in used when ``deskpilot.kernel`` is absent: sessions and refusal only."""

    name = "direct"

    def __init__(self, backend: DesktopBackend) -> None:
        self.backend = backend
        self._states: dict[str, SessionState] = {}
        self._created: dict[str, float] = {}

    async def open_session(self, agent_session: str, contract: TaskContract) -> str:
        session_id = f"atomic-{uuid.uuid4().hex[:12]}"
        self._states[session_id] = SessionState.OBSERVING
        self._created[session_id] = time.time()
        return session_id

    def _require(self, session_id: str) -> SessionState:
        state = self._states.get(session_id)
        if state is None:
            raise DeskpilotError(ErrorCode.SESSION_NOT_FOUND, "no such session")
        return state

    async def observe(
        self, session_id: str, target: TargetSpec | None = None, *, include_screenshot: bool = True
    ) -> ObservedState:
        return await self.backend.observe(session_id, target, include_screenshot=include_screenshot)

    async def execute(
        self,
        session_id: str,
        frame_id: str,
        tree_version: str,
        action: Action,
        *,
        action_id: str | None = None,
        expected_app: str | None = None,
    ) -> GateOutcome:
        state = self._require(session_id)
        if state not in EXECUTABLE_STATES:
            raise DeskpilotError(ErrorCode.SESSION_NOT_EXECUTABLE, f"session is {state.value}")
        self._states[session_id] = SessionState.ACTING
        try:
            result = await self.backend.execute(session_id, frame_id, tree_version, action)
        finally:
            if self._states.get(session_id) is SessionState.ACTING:
                self._states[session_id] = SessionState.OBSERVING
        return GateResult(result=result)

    async def pause(self, session_id: str, *, takeover: bool = False) -> SessionState:
        state = self._require(session_id)
        if state in TERMINAL_STATES:
            raise DeskpilotError(ErrorCode.INVALID_STATE_TRANSITION, "session has ended")
        self._states[session_id] = SessionState.PAUSED
        self.backend.clear_observations(session_id)
        # interrupt what is in flight without ending the session (cancel_session is final)
        abort = getattr(self.backend, "abort_session", None)
        if abort is not None:
            await abort(session_id, "paused")
        return SessionState.PAUSED

    async def resume(self, session_id: str) -> SessionState:
        state = self._require(session_id)
        if state is not SessionState.PAUSED:
            raise DeskpilotError(ErrorCode.INVALID_STATE_TRANSITION, "session is not paused")
        self._states[session_id] = SessionState.OBSERVING
        return SessionState.OBSERVING

    async def stop(self, session_id: str, reason: CancelReason) -> SessionState:
        state = self._states.get(session_id)
        if state is None or state in TERMINAL_STATES:
            return state or SessionState.CANCELED
        self._states[session_id] = SessionState.CANCELED
        self.backend.clear_observations(session_id)
        await self.backend.cancel_session(session_id)
        return SessionState.CANCELED

    async def bind_target(self, session_id: str, target: TargetSpec) -> None:
        state = self._require(session_id)
        if state is not SessionState.PAUSED:
            raise DeskpilotError(
                ErrorCode.INVALID_STATE_TRANSITION,
                "Pause the computer session before changing its bound target window.",
            )
        await self.backend.bind_target(session_id, target)

    def session_state(self, session_id: str) -> SessionState | None:
        return self._states.get(session_id)

    def client_session_began(self, agent_session_id: str) -> None:
        return None

    def halt_state(self, agent_session_id: str | None = None) -> HaltView:
        return HaltState(halted=False)

    def check_halt(self, agent_session_id: str | None = None) -> None:
        return None

    async def close(self) -> None:
        return None


def kernel_port(backend: DesktopBackend, *, direct: bool = False) -> KernelPort:
    """The kernel (broker, policy, ledger, halt) when installed, else the direct stand-in."""
    if not direct:
        try:
            from deskpilot.kernel.service import Kernel
        except ImportError:
            log.warning("deskpilot.kernel is not installed: actions go to the backend directly")
        else:
            return Kernel(backend)
    return DirectKernel(backend)
