"""What every tool handler works with: the kernel's port and the runtime's own books.

``ToolContext`` holds no behaviour of its own. The kernel (``KernelPort``) is the one way to
the desktop; the implicit sessions, stateIds and turns are the runtime's records of what each
agent session may act on; the snapshot port stores encrypted snapshots when the vault opened.
"""

from __future__ import annotations

from dataclasses import dataclass

from deskpilot.kernel.port import KernelPort
from deskpilot.runtime.implicit_sessions import ImplicitSessions
from deskpilot.runtime.snapshots import SnapshotPort
from deskpilot.runtime.state_ids import StateIdRegistry
from deskpilot.runtime.turns import TurnTracker


@dataclass
class ToolContext:
    kernel: KernelPort
    sessions: ImplicitSessions
    states: StateIdRegistry
    turns: TurnTracker
    snapshots: SnapshotPort | None
