"""What the ledger and the timeline hold of an action: its row, its event payloads, and the
error a denial becomes. Identity, rating and how it ran — never typed text (the parameters
are a keyed hash, idempotency.py), the post-action tree or pixels (docs/kernel.md, "Broker").
"""

from __future__ import annotations

from typing import Any

from deskpilot.kernel.policy import PolicyDecision, Reason
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import Action, ActionResult, ObservationBody, Point
from deskpilot.store.ledger import ActionRow


def ledger_row(
    aid: str,
    session_id: str,
    kind: str,
    params_hash: str,
    decision: PolicyDecision,
    *,
    frame_id: str | None = None,
    tree_version: str | None = None,
) -> ActionRow:
    """A new ledger row for a rated request: what was asked, how it was rated and why."""
    return ActionRow(
        id=aid,
        session_id=session_id,
        kind=kind,
        params_hash=params_hash,
        frame_id=frame_id,
        tree_version=tree_version,
        risk_level=decision.risk,
        decision=decision.decision,
        reason=decision.reason,
        status="requested",
        effect_class=decision.context.effect.value,
        target_kind=decision.context.target_kind.value,
        data_classes=sorted(c.value for c in decision.context.data_classes),
    )


def event_payload(decision: PolicyDecision) -> dict[str, Any]:
    """The action_requested payload: the rating and what it was made of, never the text."""
    ctx = decision.context
    return {
        "kind": ctx.kind,
        "risk": decision.risk.label,
        "decision": decision.decision.value,
        "reason": decision.reason,
        "effect": ctx.effect.value,
        "targetKind": ctx.target_kind.value,
        "dataClasses": sorted(c.value for c in ctx.data_classes),
        "signals": list(ctx.signals),
    }


def dispatched(action: Action) -> dict[str, Any]:
    """What goes to the host in place of the requested action (kernel/visual_tree.py: an
    element of an OCR outline as a point of the image), for the action_requested payload, so
    the timeline says where the pointer went: its kind and point, never text."""
    out: dict[str, Any] = {"kind": action.kind}
    point = getattr(action, "point", None)
    if isinstance(point, Point):
        out["point"] = {"x": point.x, "y": point.y}
    return out


def blocked_error(decision: PolicyDecision) -> DeskpilotError:
    """A denial as the caller sees it; a focus mismatch keeps its own, retryable code."""
    if decision.reason == Reason.FOCUS_MISMATCH:
        return DeskpilotError(
            ErrorCode.FOCUS_MISMATCH,
            "the observation is not of the session's bound window/app; observe again",
            retryable=True,
            details={"reason": decision.reason, **decision.details},
        )
    return DeskpilotError(
        ErrorCode.ACTION_BLOCKED,
        f"the policy refused this {decision.risk.label} action: {decision.reason}",
        retryable=False,
        details={"reason": decision.reason, "risk": decision.risk.label, **decision.details},
    )


def outcome(result: ActionResult) -> dict[str, Any]:
    """What the ledger keeps of a result: how it ran, never the post-action tree or image,
    nor the text a ``select_text`` selected (its range only)."""
    out = result.model_dump(
        mode="json",
        exclude={"observation": True, "id": True, "type": True, "selected": {"text"}},
        exclude_none=True,
    )
    return out


def executed(kind: str, result: ActionResult, risk: str) -> dict[str, Any]:
    """The ``action_executed`` payload: the kind, how it ran, its level, and what ended the
    host's wait for the UI to settle (``waitBound``, when there was a wait) — so a person
    reading the timeline sees whether an action that changed nothing waited for its
    toolkit, for events, or ran out of budget."""
    out: dict[str, Any] = {"kind": kind, "method": result.method, "risk": risk}
    if result.wait_bound is not None:
        out["waitBound"] = result.wait_bound
    return out


def observed(obs: ObservationBody) -> dict[str, Any]:
    """The timeline payload of an observation: identity and size, never its text or pixels."""
    return {
        "frameId": obs.frame_id,
        "treeVersion": obs.tree_version,
        "app": obs.app.executable or obs.app.name,
        "windowId": obs.window.window_id,
        "elementCount": obs.element_count,
    }
