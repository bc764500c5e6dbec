"""The operator looks only at its own task's windows: when the bound dialog closes, another
app's window on the same desktop is never what the criteria are checked against."""

from __future__ import annotations

import json
import shutil
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from scripted_model import Calculator, FormFiller, Handoff, ScriptedModel, final

from deskpilot.desktop.apps import App

pytestmark = pytest.mark.desktop

DECOY = "DECOY-7f3a text of another app"


def _json(outcome: Any) -> dict[str, Any]:
    assert not outcome.is_error, (outcome.diagnostic.code, outcome.diagnostic.message)
    return dict(json.loads(outcome.text.split("\n\ndeskpilot diagnostic:")[0]))


async def test_criteria_are_not_judged_on_another_apps_window(
    runtime: Any,
    zenity_form: App,
    decision_model: ScriptedModel,
    more_apps: Callable[..., Awaitable[App]],
) -> None:
    zenity = shutil.which("zenity")
    assert zenity is not None
    decoy = await more_apps([zenity, "--info", "--title=Decoy", f"--text={DECOY}"])
    decision_model.set_policy(FormFiller({"Name": "Ada", "City": "Paris"}))
    started = _json(
        await runtime.call(
            "start_task",
            {
                "goal": "Fill in the contact form and press OK.",
                "app": zenity_form.pid,
                # true of the decoy's window only: it must not pass on that window
                "success_criteria": [
                    {"kind": "visual", "assertion": "text_present", "text": DECOY}
                ],
            },
            agent_session="target-check",
        )
    )
    done = _json(
        await runtime.call(
            "wait_for_completion",
            {"task_id": started["taskId"], "timeout_ms": 60_000},
            agent_session="target-check",
        )
    )
    assert zenity_form.proc.wait(timeout=10) == 0  # the form was submitted and closed
    assert decoy.proc.poll() is None  # the decoy is still on screen
    assert done["state"] == "failed" and done["endReason"] == "verification_failed", done
    verdicts = done["lastVerification"]["verdicts"]
    assert [v["passed"] for v in verdicts] == [None], verdicts  # undecidable, not passed
    rows = runtime.ctx.kernel.verifications(started["taskId"])
    assert rows and all(r.passed is not True for r in rows), [r.to_json() for r in rows]


async def test_prose_is_no_claim_of_success(
    runtime: Any, zenity_form: App, decision_model: ScriptedModel
) -> None:
    """A model that only talks ("I will click OK") completes nothing, whatever the derived
    criteria would say about the window: after three prose replies the task fails."""
    decision_model.set_policy(lambda request: final("I will click the OK button now."))
    started = _json(
        await runtime.call(
            "start_task",
            {"goal": "Press OK in the form.", "app": zenity_form.pid},  # derived: frontmost
            agent_session="prose",
        )
    )
    done = _json(
        await runtime.call(
            "wait_for_completion",
            {"task_id": started["taskId"], "timeout_ms": 60_000},
            agent_session="prose",
        )
    )
    assert done["state"] == "failed" and done["endReason"] == "model_no_decision", done
    assert done["verificationIds"] == [] and done["steps"] == 0, done
    assert decision_model.calls >= 3
    # the model was told, in our own words, that prose does nothing
    assert "Your last reply was prose" in json.dumps(decision_model.requests[-1])


async def test_a_handoff_is_handed_back_with_resume(
    runtime: Any, calculator: App, decision_model: ScriptedModel
) -> None:
    """The model asks for the person; once they have done their part, resume restarts the
    operator on the same session (``runs`` 2) and the task can still complete."""
    decision_model.set_policy(Handoff("a person must confirm the currency"))
    who = "handback"
    started = _json(
        await runtime.call(
            "start_task",
            {
                "goal": "Compute 7 times 6.",
                "app": calculator.pid,
                "success_criteria": [{"kind": "visual", "assertion": "text_present", "text": "42"}],
            },
            agent_session=who,
        )
    )
    task_id = started["taskId"]
    wait = {"task_id": task_id, "timeout_ms": 60_000}
    first = _json(await runtime.call("wait_for_completion", wait, agent_session=who))
    assert first["state"] == "handoff_required", first
    assert first["endReason"] == "model_handoff" and first["operator"] == "handoff_required"
    assert "currency" in first["endMessage"], first
    decision_model.set_policy(Calculator("7*6"))
    resumed = _json(await runtime.call("resume", {"task_id": task_id}, agent_session=who))
    assert resumed["runs"] == 2 and resumed["state"] != "handoff_required", resumed
    done = _json(await runtime.call("wait_for_completion", wait, agent_session=who))
    assert done["state"] == "completed" and done["endReason"] == "verification_passed", done


async def test_one_live_task_per_agent_session(
    runtime: Any, calculator: App, decision_model: ScriptedModel
) -> None:
    decision_model.set_policy(Calculator("7*6"))
    decision_model.delay = 2.0  # the first task is still running when the second is asked
    who = "one-at-a-time"
    args = {"goal": "Compute 7 times 6.", "app": calculator.pid}
    first = _json(await runtime.call("start_task", args, agent_session=who))
    second = await runtime.call("start_task", args, agent_session=who)
    assert second.is_error and second.diagnostic.code == "invalid_request"
    assert first["taskId"] in (second.diagnostic.message or ""), second.diagnostic.message
    assert runtime.ctx.tasks.latest(who).task_id == first["taskId"]  # nothing was started
    stopped = _json(await runtime.call("stop", {"task_id": first["taskId"]}, agent_session=who))
    assert stopped["state"] == "canceled", stopped
    again = await runtime.call("start_task", args, agent_session=who)  # now it may
    assert not again.is_error, (again.diagnostic.code, again.diagnostic.message)
    await runtime.call("stop", {}, agent_session=who)
