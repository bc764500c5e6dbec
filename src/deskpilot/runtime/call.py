"""One tool call in flight (``Call``) and what a tool answers (``ToolOutcome``).

A ``Call`` carries the diagnostic every answer ends with, the stopwatch that times its stages
(``initializeMs``, ``discoveryMs``, ``rpcMs``, ``formatMs``, docs/diagnostics.md), the agent's
turn and session, and whether any wire action reached the kernel (so a cancelled call can say
``unknown`` instead of guessing).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from deskpilot.protocol.observed import ObservedState
from deskpilot.runtime.diagnostics import Diagnostic, Stopwatch
from deskpilot.runtime.turns import Turn


@dataclass
class ModelFrame:
    """The image the model is shown with a state (JPEG, its pixel size)."""

    jpeg: bytes
    width: int
    height: int


@dataclass
class Call:
    tool: str
    agent_session: str
    turn: Turn
    diag: Diagnostic
    watch: Stopwatch
    started: float = field(default_factory=time.perf_counter)
    #: set once any wire action reached the kernel (for "unknown" on cancellation)
    dispatched: bool = False
    session_id: str | None = None


@dataclass
class ToolOutcome:
    """What a tool answers: text (always), an optional image, and its diagnostic."""

    text: str
    diagnostic: Diagnostic
    image: ModelFrame | None = None
    data: dict[str, Any] | None = None
    #: the state the text shows, by value (observation tools, and an action's state after):
    #: what an operator or an ``expect`` check reads instead of observing again
    observed: ObservedState | None = None
    #: the stateId issued with it, when one was (the next action may use it)
    state_id: str | None = None

    @property
    def is_error(self) -> bool:
        return self.diagnostic.is_error
