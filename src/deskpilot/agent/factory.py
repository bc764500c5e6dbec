"""Assemble deskpilot's agent: the decision model, the desktop the runtime serves, its own tools.

The decision model comes from the same factory the delegated operator uses
(agent/decision_model.py): ``deskpilot provider configure`` is the only set-up a person needs.
The agent's provider gets a transport that times its requests (agent/timing.py) so each step
can say how much of it was the model's.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from deskpilot.agent.bash import BashTool
from deskpilot.agent.decision_model import load_decision_config
from deskpilot.agent.events import AgentEvent, EventSink
from deskpilot.agent.files import ReadTool
from deskpilot.agent.loop import Agent
from deskpilot.agent.timing import TimedChatClient
from deskpilot.agent.tools import DesktopTools, LocalTool
from deskpilot.agent.vision_read import vision_tool
from deskpilot.provider import Provider

#: tools per request: the pinned core (7 desktop + read, bash, vision_read) and up to four
#: more that the user's words rank (docs/agent.md, "Prompt size")
AGENT_MAX_TOOLS = 14


def local_tools(env: Mapping[str, str] | None = None) -> list[LocalTool]:
    """read and bash always; vision_read when OCR or a vision model is ready (without it an
    image request gets the provider's readiness answer instead of a tool that cannot work)."""
    tools: list[LocalTool] = [ReadTool(), BashTool()]
    vision = vision_tool(env)
    if vision is not None:
        tools.append(vision)
    return tools


def build_agent(
    desktop: DesktopTools,
    *,
    cwd: Path,
    sink: EventSink,
    env: Mapping[str, str] | None = None,
    bounded: bool = True,
) -> Agent:
    """An agent ready for its first user task, or ``decision_model_error`` naming the fix."""
    config = load_decision_config(env, max_tools=AGENT_MAX_TOOLS)
    model = Provider(config, client=TimedChatClient(config))
    agent = Agent(model, desktop, cwd=cwd, sink=sink, local_tools=local_tools(env))
    sink(
        AgentEvent(
            "session_start",
            {
                "model": config.model,
                "profile": config.profile,
                "tools": len(agent.tools()),
                "toolsPerRequest": config.limits.max_tools,
                "budget": "bounded" if bounded else "unbounded",
                "cwd": str(cwd),
            },
        )
    )
    return agent
