"""``expect`` on an atomic action: what the agent meant the action to do, checked on the state
the action left, before its result returns.

An agent that clicks "Save" wants to know whether the file was saved, not to read a
screenshot. With ``expect`` (the same verification specs a delegated task's success
criteria use, docs/verification.md) the result says passed / failed / undecidable per spec
in the same call: the tree checks read the post-action state the result carries; ``file``
and ``application_state`` read the system. A failed expectation is not an error of the
action (the action ran) and is reported as such; every check is stored as a verification
row of the session, linked to the action's ledger row (``source: expect``).

The specs are checked for decidability *before* the action runs (``check_specs``), so an
expectation the engine could never decide costs nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from deskpilot.protocol.errors import DeskpilotError
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.verification import VerificationSpec
from deskpilot.runtime.call import Call, ToolOutcome
from deskpilot.runtime.context import ToolContext
from deskpilot.runtime.refusals import refusal_from
from deskpilot.runtime.verification import Evidence, check_specs, verify

_MARK = {True: "passed", False: "FAILED", None: "undecidable"}


def admit(ctx: ToolContext, specs: Sequence[VerificationSpec] | None) -> None:
    """Refuse, before anything runs, an expectation the engine cannot decide."""
    if specs:
        allow = ctx.kernel.settings().allow_external_readback
        try:
            check_specs(specs, allow_external_readback=allow)
        except DeskpilotError as exc:
            raise refusal_from(exc) from None


async def check(
    ctx: ToolContext, call: Call, specs: Sequence[VerificationSpec], outcome: ToolOutcome
) -> ToolOutcome:
    """Add the expectations' verdicts to the action's result (text and diagnostic)."""
    observed: ObservedState | None = outcome.observed
    windows = observed.windows if observed is not None else None
    evidence = Evidence(
        state=observed,
        windows=list(windows) if windows is not None else await ctx.kernel.windows(),
        task_started_at=call.turn.started_at,
    )
    allow = ctx.kernel.settings().allow_external_readback
    verdicts = await verify(specs, evidence, allow_external_readback=allow)
    action_id = next((s.action_id for s in reversed(call.diag.steps) if s.action_id), None)
    report: list[dict[str, Any]] = []
    lines = []
    for i, verdict in enumerate(verdicts, 1):
        vid = None
        if call.session_id is not None:
            vid = ctx.kernel.record_verification(
                call.session_id, verdict.to_json(), action_id=action_id, source="expect"
            )
        report.append(
            {
                "id": vid,
                "kind": verdict.spec.get("kind"),
                "passed": verdict.passed,
                "reason": verdict.reason.value,
            }
        )
        lines.append(
            f"{i}. {verdict.spec.get('kind')}: {_MARK[verdict.passed]} ({verdict.reason.value})"
        )
    if all(v.passed is True for v in verdicts):
        summary = "passed"
    elif any(v.passed is False for v in verdicts):
        summary = "failed"
    else:
        summary = "undecidable"
    call.diag.extra["expect"] = {"outcome": summary, "checks": report}
    head = {
        "passed": "Expectations: all passed.",
        "failed": "Expectations: NOT met (the action ran; it did not do what was expected).",
        "undecidable": "Expectations: could not be decided from what is observable.",
    }[summary]
    outcome.text = f"{head}\n" + "\n".join(lines) + "\n\n" + outcome.text
    return outcome
