"""A resume that does not come through this runtime's tools (another process on the same data
directory, the dashboard) still restarts the operator, in the process that runs the task."""

from __future__ import annotations

import json
from typing import Any

import pytest
from scripted_model import Calculator, ScriptedModel

from deskpilot.desktop.apps import App

pytestmark = pytest.mark.desktop


def _json(outcome: Any) -> dict[str, Any]:
    assert not outcome.is_error, outcome.text
    return dict(json.loads(outcome.text.split("\n\ndeskpilot diagnostic:")[0]))


async def test_a_resume_from_outside_restarts_the_operator(
    runtime: Any, calculator: App, decision_model: ScriptedModel
) -> None:
    decision_model.set_policy(Calculator("7*6"))
    decision_model.delay = 0.4  # slow enough to pause before the batch (or before the
    # operator's first step: a run cancelled before it ran settles too)
    started = _json(
        await runtime.call(
            "start_task",
            {
                "goal": "compute 7*6",
                "app": calculator.pid,
                "success_criteria": [{"kind": "visual", "assertion": "text_present", "text": "42"}],
            },
            agent_session="owner",
        )
    )
    task_id = started["taskId"]
    kernel = runtime.ctx.kernel
    task = runtime.ctx.tasks.get(task_id)
    paused = _json(await runtime.call("pause", {"task_id": task_id}, agent_session="owner"))
    assert paused["state"] == "paused" and paused["operator"] == "not_running", paused
    assert task.watcher is not None and not task.running
    # not the resume tool: the kernel's own resume, as another process would do it
    await kernel.resume(task_id)
    done = _json(
        await runtime.call(
            "wait_for_completion", {"task_id": task_id, "timeout_ms": 60_000}, agent_session="owner"
        )
    )
    assert done["state"] == "completed", done
    assert done["runs"] == 2 and done["endReason"] == "verification_passed", done
    types = [e.type.value for e in kernel.timeline(task_id)]
    assert "session_paused" in types and "session_resumed" in types, types
    assert types.index("session_resumed") < types.index("session_completed"), types
