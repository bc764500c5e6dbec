"""How an error met by the operator ends a task — or does not.

Most refusals are the model's to handle (a stale element, a policy denial, a confirmation the
person declined, text aimed at a button): it is told and decides again. A few end the run:

* a spent budget (steps, runtime, no-ops) fails the task with that code;
* the policy or the person's Escape needs the person: ``handoff_required`` — but not the
  person's takeover of *another* session (reason ``taken_over``): the operator waits for
  the hand back and goes on (runtime/delegated/operator.py);
* a pause, takeover, stop or kill (the session is no longer executable or was canceled):
  the run just stops — the kernel already holds the session's new state and its reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from deskpilot.protocol.errors import DeskpilotError, ErrorCode

#: the reason of a refusal while the person holds the desktop (kernel/takeover.py)
TAKEN_OVER = "taken_over"


class EndKind(Enum):
    COMPLETED = "completed"
    FAILED = "failed"
    HANDOFF = "handoff_required"
    LET_GO = "let_go"  # paused / canceled from outside: nothing to write


@dataclass(frozen=True)
class End:
    kind: EndKind
    reason: str
    message: str
    verification_ids: tuple[str, ...] = ()


_BUDGETS = frozenset(
    {
        ErrorCode.TASK_STEP_LIMIT_EXCEEDED,
        ErrorCode.TASK_RUNTIME_EXCEEDED,
        ErrorCode.TASK_NOOP_LIMIT_EXCEEDED,
    }
)
_LET_GO = frozenset(
    {ErrorCode.SESSION_NOT_EXECUTABLE, ErrorCode.SESSION_CANCELED, ErrorCode.KILL_SWITCH_ENGAGED}
)
#: the desktop went away under the task: retrying decisions will not bring it back
_FATAL = frozenset(
    {
        ErrorCode.ENVIRONMENT_UNAVAILABLE,
        ErrorCode.NATIVE_HOST_MISSING,
        ErrorCode.NATIVE_HOST_UNTRUSTED,
        ErrorCode.NATIVE_HOST_INCOMPATIBLE,
        ErrorCode.COMPUTER_DISABLED,
        ErrorCode.SCREEN_PERMISSION_DENIED,
        ErrorCode.ACCESSIBILITY_PERMISSION_DENIED,
        ErrorCode.INPUT_PERMISSION_DENIED,
    }
)


def ending(exc: DeskpilotError) -> End | None:
    """The end this error means for the task, or None when the model should decide again."""
    if exc.code in _BUDGETS:
        return End(EndKind.FAILED, exc.code.value, exc.message)
    if exc.code is ErrorCode.HANDOFF_REQUIRED:
        reason = str(exc.details.get("reason") or "policy_handoff")
        if reason == TAKEN_OVER:
            return None  # the person holds the desktop for a while: the operator waits
        return End(EndKind.HANDOFF, reason, exc.message)
    if exc.code in _LET_GO:
        return End(EndKind.LET_GO, exc.code.value, exc.message)
    if exc.code in _FATAL:
        return End(EndKind.FAILED, exc.code.value, exc.message)
    return None
