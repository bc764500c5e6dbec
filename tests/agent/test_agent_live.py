"""The agent against a real endpoint, when one is configured for it; skipped, saying so, when
not. The suite never calls a paid endpoint on its own: the live run needs its own three
variables (``DESKPILOT_LIVE_BASE_URL``, ``DESKPILOT_LIVE_MODEL``, ``DESKPILOT_LIVE_API_KEY``),
which map onto the provider's usual ones for this test only."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from agent_rig import AgentRig, make_rig

LIVE = {
    "DESKPILOT_LIVE_BASE_URL": "DESKPILOT_PROVIDER_BASE_URL",
    "DESKPILOT_LIVE_MODEL": "DESKPILOT_PROVIDER_MODEL",
    "DESKPILOT_LIVE_API_KEY": "DESKPILOT_PROVIDER_API_KEY",
}


def live_env() -> dict[str, str]:
    missing = [name for name in LIVE if not os.environ.get(name)]
    if missing:
        pytest.skip(
            "no live endpoint configured for the agent's live test: set "
            + ", ".join(LIVE)
            + f" (missing: {', '.join(missing)})"
        )
    return {target: os.environ[source] for source, target in LIVE.items()}


@pytest.fixture
async def live_rig(tmp_path: Path) -> AsyncIterator[AgentRig]:
    env = live_env()
    rig = await make_rig(env, tmp_path)
    try:
        yield rig
    finally:
        await rig.agent.model.aclose()
        await rig.runtime.close()


async def test_live_read_and_bash(live_rig: AgentRig) -> None:
    (live_rig.cwd / "codeword.txt").write_text("The codeword is TANGERINE-42.\n")
    report = await live_rig.agent.run_turn(
        "Read codeword.txt with the read tool, then run `pwd` with bash, and tell me the "
        "codeword and the directory."
    )
    assert report.status == "answered", (report.code, report.message)
    names = [e.body["name"] for e in live_rig.events.of("tool_call")]
    assert "read" in names and "bash" in names, names
    assert report.text is not None and "TANGERINE-42" in report.text
    assert str(live_rig.cwd) in report.text


@pytest.mark.desktop
async def test_live_calculator(live_rig: AgentRig, dp_desktop: Any, calculator: Any) -> None:
    report = await live_rig.agent.run_turn(
        "On the calculator that is open, compute 12 times 7 and tell me what the display shows."
    )
    assert report.status == "answered", (report.code, report.message)
    assert report.text is not None and "84" in report.text
