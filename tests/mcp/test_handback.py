"""Take over and hand back through MCP (the official SDK's client, a real host, gnome-calculator):
while the person holds the desktop every action is refused with handoff_required; the hand
back gives the agent a fresh state and a note of what the person changed — from the agent's
own ``resume``, and, once, on its next result when the person hands back from another process
(the dashboard, ``deskpilot session resume``)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import diag_of, element_id, has_image, memory_client, state_id_of, text_of

from deskpilot.desktop.apps import App
from deskpilot.runtime.runtime import RuntimeConfig
from person_input import person_types

pytestmark = pytest.mark.desktop

ROOT = Path(__file__).resolve().parents[2]

#: another process on the same data dir, as the dashboard is
OTHER = r"""
import asyncio, json, sys
from deskpilot.kernel.control_requests import ControlClient
from deskpilot.protocol.errors import DeskpilotError
from deskpilot.store.db import Database

async def main() -> None:
    try:
        row = await ControlClient(Database()).send(sys.argv[1], sys.argv[2], by="dashboard")
        print(json.dumps({"state": row.state.value}))
    except DeskpilotError as exc:
        print(json.dumps({"code": exc.code.value}))

asyncio.run(main())
"""


async def dashboard(session_id: str, verb: str) -> dict[str, Any]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        OTHER,
        session_id,
        verb,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=str(ROOT),
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    answer: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return answer


def _refused_taken_over(result: Any) -> dict[str, Any]:
    d = diag_of(result)
    assert result.is_error and d["code"] == "handoff_required", text_of(result)
    assert d["actionOutcome"] == "not_dispatched"
    assert d["details"]["reason"] == "taken_over", d
    assert "wait for the person to hand the desktop" in d["message"], d
    return d


async def test_takeover_refuses_actions_and_resume_answers_a_fresh_state_with_a_note(
    calculator: App,
) -> None:
    async with memory_client() as client:
        s = await client.call_tool("get_app_state", {"app": "gnome-calculator"})
        taken = await client.call_tool("takeover", {})
        assert '"takenOver": true' in text_of(taken)
        # the old state and a fresh one alike: refused, nothing sent
        r = await client.call_tool(
            "click", {"state_id": state_id_of(s), "element_id": element_id(s, '"1 1"')}
        )
        d = _refused_taken_over(r)
        # the agent's own takeover: recorded as by the agent (it handed the desktop over)
        assert d["details"]["takenOverBy"] == "agent" and isinstance(d["details"]["since"], int)
        assert "The agent handed the desktop to the person at" in d["message"]
        assert "The user must take over this step" not in d["message"]
        s2 = await client.call_tool("get_app_state", {"app": "gnome-calculator"})  # reads work
        assert not s2.is_error, text_of(s2)
        r = await client.call_tool(
            "click", {"state_id": state_id_of(s2), "element_id": element_id(s2, '"1 1"')}
        )
        _refused_taken_over(r)
        status = json.loads(text_of(await client.call_tool("status", {})).split("\n\n")[0])
        assert status["takeover"]["held"] is True and status["session"]["takenOver"] is True

        await asyncio.to_thread(person_types, os.environ["DISPLAY"], ["Escape", "5"])
        await asyncio.sleep(0.3)
        resumed = await client.call_tool("resume", {})
        assert not resumed.is_error, text_of(resumed)
        text = text_of(resumed)
        head = json.loads(text.split("\n\n")[0])
        assert head["state"] == "observing"
        hb = head["handBack"]
        assert hb["by"] == "agent" and hb["heldForSeconds"] > 0  # its own takeover
        assert hb["treeVersionChanged"] is True and hb["windowChanged"] is False
        assert any(line.startswith("+ ") and '"5"' in line for line in hb["changed"]), hb
        assert "the agent handed it over" in hb["note"] and "The person had" not in hb["note"]
        # the fresh state itself: the same header, tree, image and stateId as get_app_state
        assert f"pid={calculator.pid}" in text and has_image(resumed)
        assert diag_of(resumed)["stateIdIssued"] is True
        r = await client.call_tool(
            "click",
            {"state_id": state_id_of(resumed), "element_id": element_id(resumed, '"1 1"')},
        )
        assert not r.is_error, text_of(r)
        assert "handBack" not in text_of(r)  # told once
        status = json.loads(text_of(await client.call_tool("status", {})).split("\n\n")[0])
        assert status["takeover"]["held"] is False and status["session"]["takenOver"] is False


async def test_a_hand_back_from_another_process_reaches_the_agent_once(calculator: App) -> None:
    async with memory_client() as client:
        runtime = client.runtime  # type: ignore[attr-defined]
        await runtime.ctx.kernel.start_control_inbox()
        s = await client.call_tool("get_app_state", {"app": "gnome-calculator"})
        sess = runtime.ctx.sessions.get(client.agent_session)  # type: ignore[attr-defined]
        assert (await dashboard(sess.session_id, "takeover"))["state"] == "paused"
        r = await client.call_tool(
            "click", {"state_id": state_id_of(s), "element_id": element_id(s, '"1 1"')}
        )
        _refused_taken_over(r)
        # the pause hook marked the session taken over (and voided its stateIds: below)
        status = json.loads(text_of(await client.call_tool("status", {})).split("\n\n")[0])
        assert status["session"]["takenOver"] is True
        # the agent cannot hand back what the person took from outside
        r = await client.call_tool("resume", {})
        assert r.is_error and diag_of(r)["code"] == "handoff_required"
        assert "only they can hand it back" in diag_of(r)["message"]

        await asyncio.to_thread(person_types, os.environ["DISPLAY"], ["Escape", "7"])
        await asyncio.sleep(0.3)
        assert (await dashboard(sess.session_id, "resume"))["state"] == "observing"
        told = text_of(await client.call_tool("status", {}))
        line = next(x for x in told.splitlines() if x.startswith("handBack: "))
        hb = json.loads(line[len("handBack: ") :])
        assert hb["by"] == "dashboard" and "handed it back" in hb["note"]
        assert any(x.startswith("+ ") and '"7"' in x for x in hb["changed"]), hb
        assert "handBack" not in text_of(await client.call_tool("status", {}))  # once
        status = json.loads(told.split("\n\n")[0])
        assert status["session"]["takenOver"] is False and status["takeover"]["held"] is False
        r = await client.call_tool(
            "click", {"state_id": state_id_of(s), "element_id": element_id(s, '"1 1"')}
        )
        assert r.is_error and diag_of(r)["code"] == "state_id_invalid"  # voided at the takeover
        s3 = await client.call_tool("get_app_state", {"app": "gnome-calculator"})
        r = await client.call_tool(
            "click", {"state_id": state_id_of(s3), "element_id": element_id(s3, '"1 1"')}
        )
        assert not r.is_error, text_of(r)


async def test_a_taken_over_session_is_not_idle_released(calculator: App) -> None:
    """The implicit session's idle release would stop it and so end the person's takeover."""
    async with memory_client(RuntimeConfig(idle_release_s=0.3)) as client:
        await client.call_tool("get_app_state", {"app": "gnome-calculator"})
        await client.call_tool("takeover", {})
        await asyncio.sleep(1.0)
        status = json.loads(text_of(await client.call_tool("status", {})).split("\n\n")[0])
        assert status["takeover"]["held"] is True, status
        assert status["session"]["state"] == "paused" and status["session"]["takenOver"]
        resumed = await client.call_tool("resume", {})
        assert "handBack" in text_of(resumed)


def test_the_hand_back_note_does_not_double_the_person() -> None:
    from deskpilot.kernel.handback import HandBackStart, build

    for by, words in (("person", "The person had"), ("dashboard", "The person (dashboard) had")):
        start = HandBackStart("cs_x", by, 1.0, 3.0, None)
        note = build(start, None).note
        assert note.startswith(words) and "(person)" not in note
