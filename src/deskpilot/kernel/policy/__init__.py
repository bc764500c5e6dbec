"""The policy: rate risk from real signals and enforce the task contract."""

from deskpilot.kernel.policy.context import PolicyContext, policy_context_for
from deskpilot.kernel.policy.engine import PolicyDecision, Reason, evaluate, focus_mismatch
from deskpilot.kernel.policy.risk import rate

__all__ = [
    "PolicyContext",
    "PolicyDecision",
    "Reason",
    "evaluate",
    "focus_mismatch",
    "policy_context_for",
    "rate",
]
