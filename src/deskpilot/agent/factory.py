"""Assemble deskpilot's agent: the decision model, the desktop the runtime serves, its own tools.

The decision model comes from the same factory the delegated operator uses
(agent/decision_model.py): ``deskpilot provider configure`` is the only set-up a person needs.
The agent's provider gets a transport that times its requests (agent/timing.py) so each step
can say how much of it was the model's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from deskpilot.agent.bash import BashTool
from deskpilot.agent.decision_model import load_decision_config
from deskpilot.agent.events import AgentEvent, EventSink
from deskpilot.agent.files import ReadTool
from deskpilot.agent.loop import Agent
from deskpilot.agent.timing import TimedChatClient
from deskpilot.agent.tools import DesktopTools, LocalTool
from deskpilot.agent.vision_read import vision_tool
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.provider import DebugLog, NullTelemetry, Provider

#: tools per request: the pinned core (7 desktop + read, bash, vision_read) and up to four
#: more that the user's words rank (docs/agent.md, "Prompt size")
AGENT_MAX_TOOLS = 14
#: the provider's own bound on tools per request (provider/config/profiles.py, MAX_TOOLS)
MAX_TOOLS_LIMIT = 128


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
    tools: Sequence[str] | None = None,
    max_tools: int | None = None,
) -> Agent:
    """An agent ready for its first user task, or ``decision_model_error`` naming the fix.

    ``tools`` is the person's own list of what the model may be offered (``--tools``; an
    empty list offers none), checked against what exists (``invalid_request`` naming the
    known tools); ``max_tools`` how many one request shows (default ``AGENT_MAX_TOOLS``)."""
    mine = local_tools(env)
    if tools is not None:
        known = [t.name for t in desktop.specs()] + [t.spec.name for t in mine]
        unknown = [name for name in tools if name not in known]
        if unknown:
            raise DeskpilotError(
                ErrorCode.INVALID_REQUEST,
                f"unknown tool(s) {', '.join(unknown)}; the agent's tools are: "
                + ", ".join(sorted(known)),
                details={"unknown": unknown},
            )
    if max_tools is not None and not 1 <= max_tools <= MAX_TOOLS_LIMIT:
        raise DeskpilotError(
            ErrorCode.INVALID_REQUEST, f"max tools must be 1..{MAX_TOOLS_LIMIT}, not {max_tools}"
        )
    config = load_decision_config(env, max_tools=max_tools or AGENT_MAX_TOOLS)
    # one debug log for the turn's decisions and its transport's requests (smoke reads both)
    telemetry = DebugLog(config.debug_path) if config.debug_path else NullTelemetry()
    model = Provider(
        config, telemetry=telemetry, client=TimedChatClient(config, telemetry=telemetry)
    )
    agent = Agent(model, desktop, cwd=cwd, sink=sink, local_tools=mine, offered=tools)
    sink(
        AgentEvent(
            "session_start",
            {
                "model": config.model,
                "profile": config.profile,
                "tools": len(agent.tools()),
                "toolNames": [t.name for t in agent.tools()],
                "toolsPerRequest": config.limits.max_tools,
                "budget": "bounded" if bounded else "unbounded",
                "cwd": str(cwd),
            },
        )
    )
    return agent
