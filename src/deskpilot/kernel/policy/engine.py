"""The policy's one entry point: rate an action and decide allow / deny / require_approval.

Order of checks (the first that fires decides):

1. focus_mismatch — the observation is not of the session's bound window/app (or of the app
   the caller named): a hard deny.
2. kill_switch_chord — a press_key that would send the kill-switch chord: the agent neither
   triggers nor imitates the person's emergency stop.
3. the task contract (forbiddenActions, allowedApps — the contract's and the settings' —,
   allowedDomains, allowedDataClasses) — deny with its reason code.
4. confirmation — userPresence ``supervised`` (every action above L0), ``required`` (L2 and
   above), or the ``requireConfirmationAbove`` setting: require_approval; the broker turns that
   into a one-time confirmation the person gives with ``deskpilot confirm``.
5. allow — ``read_only_action`` at L0, else ``within_task_scope``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from deskpilot.kernel.policy import signals as sig
from deskpilot.kernel.policy.context import PolicyContext, policy_context_for
from deskpilot.kernel.policy.contract import contract_reason
from deskpilot.kernel.policy.risk import rate
from deskpilot.protocol.privacy import identity_candidates
from deskpilot.protocol.session import Decision, RiskLevel, TaskContract, UserPresence
from deskpilot.protocol.wire import Action, Observation, PressKeyAction, TargetSpec
from deskpilot.store.settings import SettingsModel


class Reason(enum.StrEnum):
    READ_ONLY_ACTION = "read_only_action"
    WITHIN_TASK_SCOPE = "within_task_scope"
    FOCUS_MISMATCH = "focus_mismatch"
    KILL_SWITCH_CHORD = "kill_switch_chord"
    FORBIDDEN_ACTION = "forbidden_action"
    APP_NOT_ALLOWED = "app_not_allowed"
    DOMAIN_NOT_ALLOWED = "domain_not_allowed"
    DOMAIN_UNKNOWN = "domain_unknown"
    DATA_CLASS_NOT_ALLOWED = "data_class_not_allowed"
    USER_PRESENCE_REQUIRED = "user_presence_required"
    USER_PRESENCE_SUPERVISED = "user_presence_supervised"
    CONFIRMATION_REQUIRED = "confirmation_required"
    # set by the broker when a required confirmation does not come
    CONFIRMATION_DENIED = "confirmation_denied"
    CONFIRMATION_EXPIRED = "confirmation_expired"


@dataclass(frozen=True, slots=True)
class PolicyDecision:
    risk: RiskLevel
    decision: Decision
    reason: str
    requires_user_presence: bool
    context: PolicyContext
    details: dict[str, str] = field(default_factory=dict)


def focus_mismatch(
    obs: Observation, bound: TargetSpec | None, expected_app: str | None
) -> dict[str, str] | None:
    if bound is not None:
        if bound.window_id and obs.window.window_id.lower() != bound.window_id.lower():
            return {"expectedWindow": bound.window_id, "observedWindow": obs.window.window_id}
        if bound.pid is not None and obs.app.pid is not None and obs.app.pid != bound.pid:
            return {"expectedPid": str(bound.pid), "observedPid": str(obs.app.pid)}
        if bound.app and bound.app.strip().lower() not in identity_candidates(obs.app):
            return {"expectedApp": bound.app}
    if expected_app and expected_app.strip().lower() not in identity_candidates(obs.app):
        return {"expectedApp": expected_app}
    return None


def confirmation_threshold(setting: str) -> RiskLevel | None:
    """``requireConfirmationAbove`` as a level (``off``: None), for every kind of action."""
    return None if setting == "off" else RiskLevel(int(setting[1:]))


def decided(
    risk: RiskLevel,
    decision: Decision,
    reason: Reason | str,
    ctx: PolicyContext,
    details: dict[str, str] | None = None,
) -> PolicyDecision:
    """A decision, with ``user_presence`` derived from its reason the one way all rules do."""
    code = str(reason)
    presence = decision == Decision.REQUIRE_APPROVAL and code.startswith("user_presence")
    return PolicyDecision(risk, decision, code, presence, ctx, details or {})


def evaluate(
    action: Action,
    obs: Observation,
    contract: TaskContract,
    settings: SettingsModel,
    *,
    bound: TargetSpec | None = None,
    expected_app: str | None = None,
) -> PolicyDecision:
    ctx = policy_context_for(action, obs)
    risk = rate(ctx)

    def out(
        decision: Decision, reason: Reason | str, details: dict[str, str] | None = None
    ) -> PolicyDecision:
        return decided(risk, decision, reason, ctx, details)

    mismatch = focus_mismatch(obs, bound, expected_app)
    if mismatch is not None:
        return out(Decision.DENY, Reason.FOCUS_MISMATCH, mismatch)

    if isinstance(action, PressKeyAction) and settings.kill_switch:
        chord = sig.chord_parts(settings.kill_switch)
        if any(sig.chord_parts(k) == chord for k in action.keys):
            return out(Decision.DENY, Reason.KILL_SWITCH_CHORD)

    denied = contract_reason(action, ctx, contract, settings.allowed_apps)
    if denied is not None:
        return out(Decision.DENY, denied[0], denied[1])

    if contract.user_presence == UserPresence.SUPERVISED and risk > RiskLevel.L0:
        return out(Decision.REQUIRE_APPROVAL, Reason.USER_PRESENCE_SUPERVISED)
    if contract.user_presence == UserPresence.REQUIRED and risk >= RiskLevel.L2:
        return out(Decision.REQUIRE_APPROVAL, Reason.USER_PRESENCE_REQUIRED)
    threshold = confirmation_threshold(settings.require_confirmation_above)
    if threshold is not None and risk > threshold:
        return out(Decision.REQUIRE_APPROVAL, Reason.CONFIRMATION_REQUIRED)

    if risk == RiskLevel.L0:
        return out(Decision.ALLOW, Reason.READ_ONLY_ACTION)
    return out(Decision.ALLOW, Reason.WITHIN_TASK_SCOPE)
