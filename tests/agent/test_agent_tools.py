"""``read`` and ``bash`` in the agent's turn: one turn using both, a command that waits for the
person's confirmation (approved, and denied, through the real ``deskpilot confirm`` CLI), the
provider's shell guard, and the bounded budget shared with the desktop tools."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from agent_policies import Steps, exit_code, last_text
from agent_rig import AgentRig, make_rig
from scripted_model import Request, ScriptedModel, call, final

from deskpilot.protocol.session import EventType

DESKPILOT = [sys.executable, "-m", "deskpilot.cli.main"]


def _first_line_read(request: Request) -> str:
    for result in request.results():
        if result.name == "read" and not result.is_error:
            return result.text.splitlines()[1].split("\t", 1)[1]
    return "(nothing read)"


async def test_read_and_bash_in_one_turn(rig: AgentRig, scripted_model: ScriptedModel) -> None:
    (rig.cwd / "notes.txt").write_text("alpha beta\ngamma\n")
    policy = Steps(
        [
            call("read", path="notes.txt"),
            call("bash", command="wc -l < notes.txt && pwd"),
            lambda r: final(
                f"first line: {_first_line_read(r)}; bash said: {last_text(r).splitlines()[2]}"
                f" (exit {exit_code(last_text(r))})"
            ),
        ]
    )
    scripted_model.set_policy(policy)
    report = await rig.agent.run_turn("Read notes.txt, then count its lines with bash.")
    assert report.status == "answered", (report.code, report.message)
    assert report.text == "first line: alpha beta; bash said: 2 (exit 0)"
    # bash ran in the working directory, and its output reached the model as a tool result
    bash_result = policy.seen[-1].last_result()
    assert bash_result is not None and bash_result.name == "bash"
    assert str(rig.cwd) in bash_result.text
    # one action attempt (bash), the read is not one
    assert report.actions == 1
    calls = [e.body["name"] for e in rig.events.of("tool_call")]
    assert calls == ["read", "bash"]
    risks = {e.body["name"]: e.body["risk"] for e in rig.events.of("tool_result")}
    assert risks["bash"] in ("L1", "L2")


async def test_a_repeated_identical_read_is_not_run_twice(
    rig: AgentRig, scripted_model: ScriptedModel
) -> None:
    scripted_model.set_policy(
        Steps(
            [
                call("read", path="missing.txt"),
                call("read", path="missing.txt"),
                lambda r: final(
                    "the file does not exist"
                    if "not run again" in r.user_texts[-1]
                    or "already made this exact call" in r.user_texts[-1]
                    else "repeat was not caught"
                ),
            ]
        )
    )
    report = await rig.agent.run_turn("Read missing.txt.")
    assert report.text == "the file does not exist"
    assert [e.body["name"] for e in rig.events.of("tool_call")] == ["read"]
    assert any(e.body["code"] == "repeated_tool_call" for e in rig.events.of("recovery"))


async def test_powershell_for_bash_is_repaired_before_anything_runs(
    rig: AgentRig, scripted_model: ScriptedModel
) -> None:
    scripted_model.set_policy(
        Steps(
            [
                call("bash", command="Get-ChildItem -Path ."),
                call("bash", command="ls"),
                final("listed"),
            ]
        )
    )
    report = await rig.agent.run_turn("List the files here with bash.")
    assert report.status == "answered"
    assert [e.body["summary"] for e in rig.events.of("tool_call")] == ["command=ls"]
    assert "POSIX" in scripted_model.request(1).user_texts[-1]


def _pending(session_filter: str | None = None) -> list[dict[str, object]]:
    out = subprocess.run(
        [*DESKPILOT, "confirm", "list", "--json"], capture_output=True, text=True, check=True
    )
    return list(json.loads(out.stdout))


async def _answer_when_asked(verb: str) -> str:
    """Wait for the agent's command to ask, then answer it with `deskpilot confirm <verb>`."""
    for _ in range(200):
        pending = await asyncio.to_thread(_pending)
        if pending:
            cid = str(pending[0]["id"])
            summary = str(pending[0]["summary"])
            await asyncio.to_thread(
                subprocess.run, [*DESKPILOT, "confirm", verb, cid], check=True, capture_output=True
            )
            return summary
        await asyncio.sleep(0.1)
    raise AssertionError("the command never asked for confirmation")


@pytest.mark.parametrize("verb", ["approve", "deny"])
async def test_a_destructive_command_waits_for_the_person(
    rig: AgentRig, scripted_model: ScriptedModel, verb: str
) -> None:
    scratch = rig.cwd / "scratch"
    (scratch / "deep").mkdir(parents=True)
    (scratch / "deep" / "file.txt").write_text("x")
    scripted_model.set_policy(
        Steps(
            [
                call("bash", command="rm -rf scratch"),
                lambda r: final(f"result: {last_text(r).splitlines()[0]}"),
            ]
        )
    )
    turn = asyncio.ensure_future(rig.agent.run_turn("Delete the scratch directory."))
    summary = await _answer_when_asked(verb)
    report = await turn
    assert "rm -rf scratch" in summary and "L3" in summary
    # the person was told at once, with the id and the command that answers it
    asked = [e.body for e in rig.events.of("confirmation")]
    assert asked[0]["state"] == "waiting" and asked[0]["risk"] == "L3"
    assert asked[0]["approve"] == f"deskpilot confirm approve {asked[0]['confirmationId']}"
    assert asked[-1]["state"] == ("approved" if verb == "approve" else "denied")
    kinds = [e.kind for e in rig.events.events]
    assert kinds.index("confirmation") < kinds.index("tool_result")
    result = rig.events.of("tool_result")[-1].body
    if verb == "approve":
        assert not scratch.exists()
        assert result["ok"] is True and result["risk"] == "L3"
    else:
        assert scratch.exists() and (scratch / "deep" / "file.txt").exists()
        assert result["ok"] is False and result["code"] == "approval_denied"
    assert report.status == "answered"
    # the ledger has the action; the timeline never holds the command text
    kernel = rig.runtime.ctx.kernel
    sess = rig.runtime.ctx.sessions.get("deskpilot-agent")
    assert sess is not None
    rows = kernel.timeline(sess.session_id)
    kinds = [r.type for r in rows]
    assert EventType.APPROVAL_REQUESTED in kinds and EventType.APPROVAL_RESOLVED in kinds
    assert all(
        "rm -rf" not in json.dumps(r.payload)
        for r in rows
        if r.type != EventType.APPROVAL_REQUESTED
    )


async def test_spent_actions_refuse_bash_but_reads_still_work(
    model_env: dict[str, str], scripted_model: ScriptedModel, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("still readable\n")
    rig = await make_rig(model_env, tmp_path)
    rig.runtime.config.bounded_max_actions = 1
    try:
        scripted_model.set_policy(
            Steps(
                [
                    call("bash", command="true"),
                    call("bash", command="echo again"),
                    call("read", path="a.txt"),
                    lambda r: final(last_text(r).splitlines()[-1].split("\t")[-1]),
                ]
            )
        )
        report = await rig.agent.run_turn("Run two commands, then read a.txt.")
    finally:
        await rig.agent.model.aclose()
        await rig.runtime.close()
    results = [e.body for e in rig.events.of("tool_result")]
    assert [r["ok"] for r in results] == [True, False, True]
    assert results[1]["code"] == "budget_exhausted"
    assert report.text == "still readable"
    assert os.environ.get("DESKPILOT_PROVIDER_API_KEY", "") not in json.dumps(
        [e.to_json() for e in rig.events.events]
    ) or not os.environ.get("DESKPILOT_PROVIDER_API_KEY")


async def test_a_model_that_keeps_acting_on_a_spent_budget_ends_the_task(
    model_env: dict[str, str], scripted_model: ScriptedModel, tmp_path: Path
) -> None:
    rig = await make_rig(model_env, tmp_path)
    rig.runtime.config.bounded_max_actions = 2
    try:
        scripted_model.set_policy(lambda r: call("bash", command=f"echo step {len(r.results())}"))
        report = await rig.agent.run_turn("Echo numbers forever.")
    finally:
        await rig.agent.model.aclose()
        await rig.runtime.close()
    assert report.status == "budget_exhausted" and report.code == "budget_exhausted"
    results = [e.body for e in rig.events.of("tool_result")]
    assert [r["ok"] for r in results] == [True, True, False, False, False]
    assert report.steps == 5
