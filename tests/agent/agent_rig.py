"""An agent over a real runtime, assembled the way ``deskpilot agent`` assembles it.

A module of its own (not conftest.py) so tests and the benchmark can import it by a name no
other test directory shares.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deskpilot.agent.events import EventLog

API_KEY = "sk-test-agent-0123456789abcdef"


@dataclass
class AgentRig:
    """An agent over a real runtime, as ``deskpilot agent`` assembles it, with its events."""

    agent: Any
    runtime: Any
    events: EventLog
    cwd: Path


async def make_rig(env: dict[str, str], cwd: Path, *, bounded: bool = True) -> AgentRig:
    from deskpilot.agent.factory import build_agent
    from deskpilot.runtime.agent_desktop import RuntimeDesktop
    from deskpilot.runtime.budget import BudgetMode
    from deskpilot.runtime.runtime import RuntimeConfig
    from deskpilot.runtime.wiring import build_runtime

    mode = BudgetMode.BOUNDED if bounded else BudgetMode.UNBOUNDED
    runtime = build_runtime(RuntimeConfig(budget_mode=mode))
    events = EventLog()
    agent = build_agent(
        RuntimeDesktop(runtime), cwd=cwd, sink=events, env={**os.environ, **env}, bounded=bounded
    )
    return AgentRig(agent, runtime, events, cwd)
