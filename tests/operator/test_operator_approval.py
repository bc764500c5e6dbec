"""A delegated task whose action needs the person's one-time confirmation: the session shows
``waiting_approval`` while it waits, ``wait_for_completion`` returns at once in that state,
and once the person approves (through the store, as ``deskpilot confirm approve`` does) the
same run goes on to a verified end."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from scripted_model import Calculator, ScriptedModel

from deskpilot.desktop.apps import App
from deskpilot.protocol.session import EventType
from deskpilot.store.settings import Settings

pytestmark = pytest.mark.desktop


def _json(outcome: Any) -> dict[str, Any]:
    assert not outcome.is_error, (outcome.diagnostic.code, outcome.diagnostic.message)
    return dict(json.loads(outcome.text.split("\n\ndeskpilot diagnostic:")[0]))


async def test_a_task_waits_for_the_persons_confirmation_then_completes(
    runtime: Any, calculator: App, decision_model: ScriptedModel
) -> None:
    decision_model.set_policy(Calculator("7*6"))
    kernel = runtime.ctx.kernel
    db = kernel.db
    Settings.update(db, require_confirmation_above="L0")  # every L1 action asks the person
    try:
        started = _json(
            await runtime.call(
                "start_task",
                {
                    "goal": "Compute 7 times 6.",
                    "app": calculator.pid,
                    "success_criteria": [
                        {"kind": "visual", "assertion": "text_present", "text": "42"}
                    ],
                },
                agent_session="approver",
            )
        )
        task_id = started["taskId"]
        waiting = _json(
            await runtime.call(
                "wait_for_completion",
                {"task_id": task_id, "timeout_ms": 30_000},
                agent_session="approver",
            )
        )
        assert waiting["state"] == "waiting_approval", waiting
        assert waiting["timedOut"] is False and "deskpilot confirm" in waiting["hint"], waiting
        assert waiting["operator"] == "running", waiting
        approved = 0
        while True:  # approve each action as it asks, as a person at `deskpilot confirm` would
            row = kernel.session(task_id)
            if row is not None and row.terminal:
                break
            for pending in kernel.confirmations.pending():
                if pending.session_id == task_id:
                    kernel.confirmations.resolve(pending.id, True, "person")
                    approved += 1
            # in-process, wait_for_completion in waiting_approval answers without yielding:
            # give the kernel's confirmation poll its turn before asking again
            await asyncio.sleep(0.3)
            done = _json(
                await runtime.call(
                    "wait_for_completion",
                    {"task_id": task_id, "timeout_ms": 30_000},
                    agent_session="approver",
                )
            )
            if done["state"] != "waiting_approval":
                break
    finally:
        Settings.update(db, require_confirmation_above="off")
    assert done["state"] == "completed", done
    assert done["endReason"] == "verification_passed", done
    assert approved >= 1
    kinds = [e.type for e in kernel.timeline(task_id)]
    assert kinds.count(EventType.APPROVAL_REQUESTED) == approved, kinds
    assert kinds.count(EventType.APPROVAL_RESOLVED) == approved, kinds
