"""What the agent loop calls: the desktop (served by the runtime, injected) and its own tools.

The agent sits below the runtime (docs/architecture.md), so it never imports it: the entry
point hands the loop a ``DesktopTools`` — the runtime's in-process adapter
(runtime/agent_desktop.py) — and the loop sees only this protocol. Observation, actions,
controls and ``start_task`` therefore run through the same runtime, kernel, policy and ledger
the MCP server uses, with no MCP round trip inside one process.

``read``, ``bash`` and ``vision_read`` are the agent's own tools (``LocalTool``); ``bash`` is
still a kernel action (agent/bash.py). Every tool answers a ``ToolResult`` by value.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from deskpilot.kernel.port import KernelPort
from deskpilot.provider import ToolSpec as ModelTool

#: read (observes), act (changes something: counts against the bounded budget), control,
#: status — the runtime's kinds, which the agent's own tools use too
READ, ACT = "read", "act"


@dataclass(frozen=True)
class ModelFrame:
    """The image the model's state was taken with (JPEG), for ``vision_read {state_id}``."""

    jpeg: bytes
    width: int
    height: int


@dataclass(frozen=True)
class ToolResult:
    """One tool's answer. ``text`` goes to the model as an untrusted tool result (the
    provider neutralises protocol markers in it); the rest is for the person's view and
    the loop's bookkeeping, and never holds typed text."""

    text: str
    is_error: bool = False
    code: str | None = None
    kind: str = READ
    #: the kernel's rating of what ran (L0–L4), when something was rated
    risk: str | None = None
    state_id: str | None = None
    #: the state's header lines (App=, Window=, state_id, image size)
    state_header: str | None = None
    frame: ModelFrame | None = None
    #: the tool's own time (model time is never in it)
    elapsed_ms: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)


class TurnBudget(Protocol):
    """The user task's bounded budget (runtime/budget.py): the desktop tools and ``bash``
    spend the same one, so 30 action attempts means 30 of any kind."""

    @property
    def bounded(self) -> bool: ...
    def start(self) -> None: ...
    def check_read(self) -> None: ...
    def admit_action(self) -> None: ...
    def remaining_ms(self) -> float | None: ...
    def to_json(self) -> dict[str, Any]: ...


class DesktopTools(Protocol):
    """The desktop as the agent sees it; implemented by the runtime (injected by the CLI)."""

    #: the kernel the runtime holds (``bash`` is a kernel action too)
    kernel: KernelPort

    def specs(self) -> list[ModelTool]:
        """The desktop tools the model may be shown, with the schemas the runtime checks."""
        ...

    def kind_of(self, name: str) -> str | None: ...

    def core(self) -> frozenset[str]:
        """The tools every request shows (observe and act); the rest are ranked by the
        provider's selection against the user's words."""
        ...

    async def call(self, name: str, arguments: Mapping[str, Any], *, turn_id: str) -> ToolResult:
        """Run one desktop tool in the user task ``turn_id``; never raises for a tool error."""
        ...

    def budget(self, turn_id: str) -> TurnBudget: ...

    def kernel_session(self, turn_id: str) -> AbstractAsyncContextManager[str]:
        """Hold the kernel session this agent's actions run in (opened on first use) for one
        action that is not a desktop tool (a shell command); yields its id."""
        ...

    def current_session(self) -> str | None:
        """The kernel session the agent's actions run in now (None before the first)."""
        ...

    def end_turn(self, turn_id: str) -> None:
        """The user task is over: its stateIds die, its budget is done."""
        ...


@dataclass
class TurnScope:
    """What one user task's local tools may see: its id, the working directory, the frames
    of the states the model was shown in this task (by value, from the results)."""

    turn_id: str
    cwd: Path
    desktop: DesktopTools
    frames: dict[str, ModelFrame] = field(default_factory=dict)

    @property
    def budget(self) -> TurnBudget:
        return self.desktop.budget(self.turn_id)


class LocalTool(Protocol):
    spec: ModelTool
    kind: str

    async def run(self, arguments: Mapping[str, Any], scope: TurnScope) -> ToolResult: ...
