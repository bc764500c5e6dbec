"""The agent end to end on the private desktop: a real calculator, a real runtime and kernel,
the scripted decision model as a real HTTP server answering from what it is sent."""

from __future__ import annotations

import re

import pytest
from agent_policies import DesktopCalculator
from agent_rig import AgentRig
from scripted_model import ScriptedModel, _display_norm

from deskpilot.desktop.apps import App

pytestmark = pytest.mark.desktop


async def display_value(rig: AgentRig, app: App) -> str:
    """The calculator's display as the runtime reads it now (not through the agent)."""
    outcome = await rig.runtime.call("get_app_state", {"app": app.pid}, agent_session="check")
    assert not outcome.is_error, outcome.text
    fields = re.findall(r'- textField(?: "[^"]*")? = "([^"]*)"(?![^\n]*readonly)', outcome.text)
    assert fields, outcome.text[:2000]
    return fields[0]


async def test_computes_on_the_calculator_and_reports_what_the_display_shows(
    desktop_rig: AgentRig, scripted_model: ScriptedModel, calculator: App
) -> None:
    scripted_model.set_policy(DesktopCalculator("12*7"))
    report = await desktop_rig.agent.run_turn(
        "Compute 12×7 on the calculator and tell me the result."
    )
    assert report.status == "answered", (report.code, report.message)
    shown = await display_value(desktop_rig, calculator)
    assert _display_norm(shown) == "84"
    assert report.text is not None and shown in report.text
    # it really acted through the runtime: clicks were rated and recorded
    results = desktop_rig.events.of("tool_result")
    clicks = [e.body for e in results if e.body["name"] == "click"]
    assert len(clicks) >= 4 and all(c["ok"] for c in clicks)
    assert all(c["risk"] in ("L0", "L1") for c in clicks)
    assert report.actions == len(clicks)
    # every step after the first state used the state the previous result carried
    assert desktop_rig.events.of("state")
    # the agent's own time per step is small beside the tool's
    own = sorted(t.own_ms for t in report.timings)
    assert own[len(own) // 2] < 50, own
