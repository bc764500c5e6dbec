"""What the kernel hands back by value: an action's recorded outcome, the halt's state."""

from __future__ import annotations

from dataclasses import dataclass

from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.session import Decision, RiskLevel
from deskpilot.protocol.wire import ActionResult


@dataclass(frozen=True, slots=True)
class ExecutedAction:
    """One action's outcome as the kernel recorded it."""

    result: ActionResult
    action_id: str
    risk: RiskLevel
    decision: Decision
    reason: str
    #: time spent waiting for the person's confirmation (a subset of the call)
    approval_ms: float = 0.0
    replayed: bool = False
    signals: tuple[str, ...] = ()
    #: the settled window after the action, when it was asked for and the host could see it;
    #: it is already the session's current observation (an action may be taken on it)
    post: ObservedState | None = None


@dataclass(frozen=True, slots=True)
class HaltInfo:
    halted: bool
    cause: str | None = None
    since_epoch_ms: int | None = None
