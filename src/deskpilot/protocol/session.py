"""Session states, timeline events, risk vocabulary and the task contract.

These are shared by the kernel (which enforces them), the store (which persists them) and the
entry points (which show them). The task contract's fields are *read* by the policy: a field
declared here and never enforced is a bug, not a feature.
"""

from __future__ import annotations

import enum

from pydantic import Field

from deskpilot.protocol.verification import VerificationSpec
from deskpilot.protocol.wire import WireModel


class SessionState(enum.StrEnum):
    PREFLIGHTING = "preflighting"
    OBSERVING = "observing"
    PLANNING = "planning"
    WAITING_APPROVAL = "waiting_approval"
    ACTING = "acting"
    VERIFYING = "verifying"
    PAUSED = "paused"
    HANDOFF_REQUIRED = "handoff_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELED = "canceled"


#: States in which the backend accepts an action.
EXECUTABLE_STATES = frozenset(
    {
        SessionState.OBSERVING,
        SessionState.PLANNING,
        SessionState.WAITING_APPROVAL,
        SessionState.ACTING,
    }
)
#: Phases the operator may move an active session between.
PHASES = frozenset(
    {
        SessionState.PREFLIGHTING,
        SessionState.OBSERVING,
        SessionState.PLANNING,
        SessionState.WAITING_APPROVAL,
        SessionState.ACTING,
        SessionState.VERIFYING,
        SessionState.HANDOFF_REQUIRED,
    }
)
TERMINAL_STATES = frozenset({SessionState.COMPLETED, SessionState.FAILED, SessionState.CANCELED})

_ACTIVE = PHASES
#: Legal transitions. Terminal states go nowhere; a canceled session never resumes.
TRANSITIONS: dict[SessionState, frozenset[SessionState]] = {
    **{s: frozenset((PHASES - {s}) | {SessionState.PAUSED} | TERMINAL_STATES) for s in _ACTIVE},
    SessionState.PAUSED: frozenset(
        {SessionState.OBSERVING, SessionState.CANCELED, SessionState.FAILED}
    ),
    SessionState.COMPLETED: frozenset(),
    SessionState.FAILED: frozenset(),
    SessionState.CANCELED: frozenset(),
}


def can_transition(src: SessionState, dst: SessionState) -> bool:
    return dst in TRANSITIONS[src]


class OperatorState(enum.StrEnum):
    """What the agent sees of a delegated task's operator loop."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    HANDOFF_REQUIRED = "handoff_required"
    NOT_RUNNING = "not_running"


def operator_state(state: SessionState, running: bool) -> OperatorState:
    """What the agent sees of a delegated task, from the session state and whether an
    operator loop is currently attached (one rule for the kernel and the runtime)."""
    if state == SessionState.COMPLETED:
        return OperatorState.COMPLETED
    if state == SessionState.FAILED:
        return OperatorState.FAILED
    if state == SessionState.HANDOFF_REQUIRED:
        return OperatorState.HANDOFF_REQUIRED
    if running and state not in TERMINAL_STATES and state != SessionState.PAUSED:
        return OperatorState.RUNNING
    return OperatorState.NOT_RUNNING


class EventType(enum.StrEnum):
    SESSION_STARTED = "session_started"
    OBSERVATION_CREATED = "observation_created"
    ACTION_REQUESTED = "action_requested"
    ACTION_BLOCKED = "action_blocked"
    ACTION_EXECUTED = "action_executed"
    ACTION_FAILED = "action_failed"
    APPROVAL_REQUESTED = "approval_requested"
    APPROVAL_RESOLVED = "approval_resolved"
    VERIFICATION_STARTED = "verification_started"
    VERIFICATION_COMPLETED = "verification_completed"
    HANDOFF_REQUIRED = "handoff_required"
    SESSION_PAUSED = "session_paused"
    SESSION_RESUMED = "session_resumed"
    TARGET_BOUND = "target_bound"
    SESSION_COMPLETED = "session_completed"
    SESSION_FAILED = "session_failed"
    SESSION_CANCELED = "session_canceled"
    #: an action refused at admission (paused, taken over, halted, computer or environment
    #: disabled): kernel/broker/admission.py ``RefusalLog``, collapsed per session and code
    ACTION_REFUSED = "action_refused"


#: the details key (and its value) that mark a refusal by a session's state (nothing was
#: dispatched): see kernel/session_manager.py, ``require_executable``
REFUSED_BY = "refusedBy"
SESSION_STATE = "session_state"


class CancelReason(enum.StrEnum):
    """Why a session was canceled; a kill-switch stop is told apart from a user stop."""

    USER_STOP = "user_stop"
    KILL_SWITCH = "kill_switch"
    DESKTOP_CLAIMED = "desktop_claimed"
    IDLE_RELEASE = "idle_release"
    BUDGET_EXPIRED = "budget_expired"
    SHUTDOWN = "shutdown"


class RiskLevel(enum.IntEnum):
    L0 = 0
    L1 = 1
    L2 = 2
    L3 = 3
    L4 = 4

    @property
    def label(self) -> str:
        return f"L{int(self)}"


class EffectClass(enum.StrEnum):
    READ_ONLY = "read_only"
    REVERSIBLE_LOCAL = "reversible_local"
    EXTERNAL_WRITE = "external_write"
    HIGH_IMPACT = "high_impact"
    RESTRICTED = "restricted"


class TargetKind(enum.StrEnum):
    ELEMENT = "element"
    WINDOW = "window"
    COORDINATES = "coordinates"
    UNKNOWN = "unknown"


class DataClass(enum.StrEnum):
    PUBLIC = "public"
    INTERNAL = "internal"
    PERSONAL = "personal"
    FINANCIAL = "financial"
    HEALTH = "health"
    CREDENTIAL = "credential"


class Decision(enum.StrEnum):
    ALLOW = "allow"
    DENY = "deny"
    REQUIRE_APPROVAL = "require_approval"
    REQUIRE_HANDOFF = "require_handoff"


class UserPresence(enum.StrEnum):
    NOT_REQUIRED = "not_required"  # unattended runs allowed
    REQUIRED = "required"  # a person must be at the desktop: L2+ needs confirmation
    SUPERVISED = "supervised"  # every non-read action needs confirmation


class TaskContract(WireModel):
    """What a session may do. Every field below is read by the policy or the operator."""

    objective: str = ""
    success_criteria: list[VerificationSpec] = Field(default_factory=list)
    max_steps: int = Field(default=100, ge=1, le=100_000)
    max_runtime_ms: int = Field(default=20 * 60_000, ge=1_000, le=24 * 3_600_000)
    max_consecutive_noops: int = Field(default=8, ge=1, le=1_000)
    #: empty = any app; otherwise app identities (name, executable, WM_CLASS, desktop id)
    allowed_apps: list[str] = Field(default_factory=list)
    #: empty = any domain; otherwise host names, "*.example.com" wildcards allowed
    allowed_domains: list[str] = Field(default_factory=list)
    allowed_data_classes: list[DataClass] = Field(
        default_factory=lambda: [DataClass.PUBLIC, DataClass.INTERNAL, DataClass.PERSONAL]
    )
    #: action kinds (click, type_text, …) or effect classes that are refused outright
    forbidden_actions: list[str] = Field(default_factory=list)
    user_presence: UserPresence = UserPresence.NOT_REQUIRED


ATOMIC_CONTRACT_LIMITS = {
    "max_steps": 2_000,
    "max_runtime_ms": 12 * 3_600_000,
    "max_consecutive_noops": 20,
}
DELEGATED_CONTRACT_LIMITS = {
    "max_steps": 100,
    "max_runtime_ms": 20 * 60_000,
    "max_consecutive_noops": 8,
}
