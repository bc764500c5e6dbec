"""One error-code vocabulary for the whole project.

Every layer raises :class:`DeskpilotError` with a code from :class:`ErrorCode`; the MCP entry
point renders it as a ``deskpilot diagnostic: {...}`` text, the host sends it in an ``error``
response. ``retryable`` says whether the *same* call may succeed if repeated after a fresh
observation or a short wait; callers that retry transparently still decide per operation.
"""

from __future__ import annotations

import enum
from typing import Any


class ErrorCode(enum.StrEnum):
    # environment, permissions and capabilities
    ENVIRONMENT_UNAVAILABLE = "environment_unavailable"
    COMPUTER_DISABLED = "computer_disabled"
    SCREEN_PERMISSION_DENIED = "screen_permission_denied"
    ACCESSIBILITY_PERMISSION_DENIED = "accessibility_permission_denied"
    INPUT_PERMISSION_DENIED = "input_permission_denied"
    SCREEN_LOCKED = "screen_locked"
    UNSUPPORTED_PLATFORM = "unsupported_platform"
    # the native host and its wire
    NATIVE_HOST_MISSING = "native_host_missing"
    NATIVE_HOST_UNTRUSTED = "native_host_untrusted"
    NATIVE_HOST_INCOMPATIBLE = "native_host_incompatible"
    NATIVE_HOST_UNAVAILABLE = "native_host_unavailable"
    NATIVE_HOST_REQUEST_CAPACITY_REACHED = "native_host_request_capacity_reached"
    NATIVE_HOST_OPERATION_CAPACITY_REACHED = "native_host_operation_capacity_reached"
    HOST_HANDSHAKE_FAILED = "host_handshake_failed"
    PROTOCOL_ERROR = "protocol_error"
    INVALID_REQUEST = "invalid_request"
    UNSUPPORTED_ACTION = "unsupported_action"
    # observation freshness and targets
    STALE_FRAME = "stale_frame"
    STALE_TREE = "stale_tree"
    TREE_PARTIAL = "tree_partial"
    FOCUS_MISMATCH = "focus_mismatch"
    TARGET_NOT_FOUND = "target_not_found"
    TARGET_AMBIGUOUS = "target_ambiguous"
    NO_WINDOWS_AVAILABLE = "no_windows_available"
    CAPTURE_FAILED = "capture_failed"
    STATE_CHANGED = "state_changed"
    STATE_ID_INVALID = "state_id_invalid"
    # actions
    ACTION_FAILED = "action_failed"
    ACTION_TIMEOUT = "action_timeout"
    ACTION_NOOP = "action_noop"
    #: not an error: the action was sent, but its effect could not be seen (yet); the result
    #: says why. Never repeat such an action blindly
    ACTION_UNCONFIRMED = "action_unconfirmed"
    ACTION_BLOCKED = "action_blocked"
    APPROVAL_REQUIRED = "approval_required"
    APPROVAL_DENIED = "approval_denied"
    APPROVAL_MISMATCH = "approval_mismatch"
    HANDOFF_REQUIRED = "handoff_required"
    SENSITIVE_INPUT_BLOCKED = "sensitive_input_blocked"
    # sessions, tasks and budgets
    SESSION_CANCELED = "session_canceled"
    SESSION_NOT_FOUND = "session_not_found"
    SESSION_NOT_EXECUTABLE = "session_not_executable"
    INVALID_STATE_TRANSITION = "invalid_state_transition"
    ACTUATOR_LEASE_CONFLICT = "actuator_lease_conflict"
    KILL_SWITCH_ENGAGED = "kill_switch_engaged"
    TASK_STEP_LIMIT_EXCEEDED = "task_step_limit_exceeded"
    TASK_RUNTIME_EXCEEDED = "task_runtime_exceeded"
    TASK_NOOP_LIMIT_EXCEEDED = "task_noop_limit_exceeded"
    BUDGET_EXHAUSTED = "budget_exhausted"
    DECISION_MODEL_ERROR = "decision_model_error"
    VERIFICATION_FAILED = "verification_failed"
    NOT_AVAILABLE_YET = "not_available_yet"
    # snapshots and the vault
    SNAPSHOT_NOT_FOUND = "snapshot_not_found"
    SNAPSHOT_TOO_LARGE = "snapshot_too_large"
    VAULT_INTEGRITY_ERROR = "vault_integrity_error"
    VAULT_KEY_INVALID = "vault_key_invalid"
    # reading a screenshot (deskpilot.vision: the OCR engine or the multimodal endpoint)
    VISION_UNAVAILABLE = "vision_unavailable"
    # anything else
    INTERNAL_ERROR = "internal_error"

    @property
    def retryable(self) -> bool:
        return self in _RETRYABLE

    @property
    def drops_connection(self) -> bool:
        """Only these end the host connection (docs/hostclient.md, "Which errors drop the
        connection")."""
        return self in _DROPS_CONNECTION


_RETRYABLE = frozenset(
    {
        ErrorCode.ENVIRONMENT_UNAVAILABLE,
        ErrorCode.SCREEN_PERMISSION_DENIED,
        ErrorCode.NATIVE_HOST_REQUEST_CAPACITY_REACHED,
        ErrorCode.NATIVE_HOST_OPERATION_CAPACITY_REACHED,
        ErrorCode.STALE_FRAME,
        ErrorCode.STALE_TREE,
        ErrorCode.CAPTURE_FAILED,
        ErrorCode.STATE_CHANGED,
        ErrorCode.NO_WINDOWS_AVAILABLE,
    }
)

_DROPS_CONNECTION = frozenset(
    {
        ErrorCode.NATIVE_HOST_MISSING,
        ErrorCode.NATIVE_HOST_UNTRUSTED,
        ErrorCode.NATIVE_HOST_INCOMPATIBLE,
        ErrorCode.ACTION_TIMEOUT,
        ErrorCode.SESSION_CANCELED,
    }
)


class DeskpilotError(Exception):
    """A typed failure. ``details`` must never hold typed text, UI text or image data."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        retryable: bool | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retryable = code.retryable if retryable is None else retryable
        self.details = dict(details or {})

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code.value,
            "message": self.message,
            "retryable": self.retryable,
        }
        if self.details:
            out["details"] = self.details
        return out

    def __repr__(self) -> str:
        return f"DeskpilotError({self.code.value!r}, {self.message!r})"
