"""The single seam between the runtime and the execution kernel.

Every observation and action the runtime makes goes through a ``KernelPort``; sessions are
opened, paused, resumed, stopped and re-bound only here. ``kernel_port()`` returns
``deskpilot.kernel.service.Kernel`` (broker: freshness, policy, ledger, confirmations,
coordinator, halt); the protocol keeps the runtime's view of it in one place.
"""

from __future__ import annotations

import logging
from typing import Protocol

from deskpilot.hostclient.api import DesktopBackend, ObservedState
from deskpilot.kernel.launches import LaunchResult, Spawn, Watch
from deskpilot.kernel.policy.launch import LaunchRequest
from deskpilot.kernel.service import Kernel
from deskpilot.protocol.session import (
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

    @property
    def post(self) -> ObservedState | None:
        """The settled window after the action, when asked for and observable."""
        ...


class HaltView(Protocol):
    @property
    def halted(self) -> bool: ...

    @property
    def cause(self) -> str | None: ...

    @property
    def since_epoch_ms(self) -> int | None: ...


class KernelPort(Protocol):
    name: str

    async def open_session(self, agent_session: str, contract: TaskContract) -> str: ...

    async def observe(
        self, session_id: str, target: TargetSpec | None = None, *, include_screenshot: bool = True
    ) -> ObservedState: ...

    async def launch(
        self, session_id: str, request: LaunchRequest, spawn: Spawn, watch: Watch
    ) -> LaunchResult:
        """Start a program as a governed action (see kernel/launches.py)."""
        ...

    async def execute(
        self,
        session_id: str,
        frame_id: str,
        tree_version: str,
        action: Action,
        *,
        action_id: str | None = None,
        expected_app: str | None = None,
        observe_after: bool = False,
    ) -> GateOutcome: ...

    async def pause(self, session_id: str, *, takeover: bool = False) -> SessionState: ...

    async def resume(self, session_id: str) -> SessionState: ...

    async def stop(self, session_id: str, reason: CancelReason) -> SessionState: ...

    async def bind_target(self, session_id: str, target: TargetSpec) -> None: ...

    def session_state(self, session_id: str) -> SessionState | None: ...

    def session_ended(self, session_id: str) -> str | None:
        """None while the session lives; else why it ended (its cancel reason)."""
        ...

    def client_session_began(self, agent_session_id: str) -> None: ...

    def halt_state(self, agent_session_id: str | None = None) -> HaltView: ...

    def check_halt(self, agent_session_id: str | None = None) -> None: ...

    async def close(self) -> None: ...


def kernel_port(backend: DesktopBackend) -> KernelPort:
    """The execution kernel: every action passes its broker (freshness, policy, ledger,
    confirmations, coordinator, halt). There is deliberately no ungoverned fallback."""
    return Kernel(backend)
