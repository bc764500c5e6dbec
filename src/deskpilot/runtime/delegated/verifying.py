"""Checking a task's success criteria on the window as it is now, and keeping every verdict.

Each check becomes a row in the store (with its ``verification_*`` timeline events) before
the task's fate is decided on it, so ``get_status`` and ``deskpilot verification show ID``
can say later why a task passed or failed. The model's own word counts only where the
engine allows it (``model_visual_assertion``: the model said it is ready and the window has
no tree at all), and is recorded as such.
"""

from __future__ import annotations

from dataclasses import dataclass

from deskpilot.protocol.observed import ObservedState
from deskpilot.runtime.context import ToolContext
from deskpilot.runtime.task_registry import DelegatedTask
from deskpilot.runtime.verification import Evidence, Verdict, overall, verify


@dataclass(frozen=True)
class Checked:
    passed: bool
    verdicts: list[Verdict]
    ids: list[str]

    def report(self) -> str:
        lines = ["Verification " + ("passed." if self.passed else "did not pass:")]
        for v, vid in zip(self.verdicts, self.ids, strict=True):
            mark = {True: "passed", False: "failed", None: "undecidable"}[v.passed]
            lines.append(f"- {vid} {v.spec.get('kind')}: {mark} ({v.reason.value})")
        return "\n".join(lines)


async def check(
    ctx: ToolContext, task: DelegatedTask, observed: ObservedState | None, *, model_ready: bool
) -> Checked:
    carried = observed.windows if observed is not None else None
    windows = list(carried) if carried is not None else await ctx.kernel.windows()
    evidence = Evidence(
        state=observed,
        windows=windows,
        task_started_at=task.started_at,
        model_ready=model_ready,
    )
    allow = ctx.kernel.settings().allow_external_readback
    verdicts = await verify(task.criteria, evidence, allow_external_readback=allow)
    ids = [
        ctx.kernel.record_verification(task.task_id, v.to_json(), source="task") for v in verdicts
    ]
    passed = overall(verdicts)
    task.verification_ids += ids
    task.last_verification = {
        "passed": passed,
        "ids": ids,
        "verdicts": [
            {"id": vid, "kind": v.spec.get("kind"), "passed": v.passed, "reason": v.reason.value}
            for v, vid in zip(verdicts, ids, strict=True)
        ],
    }
    return Checked(passed, verdicts, ids)
