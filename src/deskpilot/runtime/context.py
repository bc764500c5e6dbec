"""What every tool handler works with: the kernel's port and the runtime's own books.

``ToolContext`` holds no behaviour of its own. The kernel (``KernelPort``) is the one way to
the desktop; the implicit sessions, stateIds and turns are the runtime's records of what each
agent session may act on; the snapshot port stores encrypted snapshots when the vault opened.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from deskpilot.agent.decision_model import open_decision_model
from deskpilot.kernel.port import KernelPort
from deskpilot.provider import Provider
from deskpilot.runtime.implicit_sessions import ImplicitSessions
from deskpilot.runtime.snapshots import SnapshotPort
from deskpilot.runtime.state_ids import StateIdRegistry
from deskpilot.runtime.task_registry import TaskRegistry
from deskpilot.runtime.turns import TurnTracker


@dataclass
class ToolContext:
    kernel: KernelPort
    sessions: ImplicitSessions
    states: StateIdRegistry
    turns: TurnTracker
    snapshots: SnapshotPort | None
    #: the delegated tasks this process runs (runtime/delegated/)
    tasks: TaskRegistry = field(default_factory=TaskRegistry)
    #: opens the configured decision model (or raises decision_model_error); resolved again
    #: at every start_task and resume, so a fixed configuration takes effect
    decision_model: Callable[[], Provider] = open_decision_model
