"""deskpilot.agent: deskpilot's own agent loop for text-only models.

The model only writes chat text; the provider owns the protocol, and this package owns the
loop: user tasks with their own budgets, the desktop tools the runtime serves in-process
(injected as ``DesktopTools``), and the agent's own ``read``, ``bash`` (a kernel action) and
``vision_read`` (OCR or a configured vision model).

    from deskpilot.agent import Agent, build_agent
"""

from deskpilot.agent.events import AgentEvent, EventLog
from deskpilot.agent.factory import build_agent, local_tools
from deskpilot.agent.loop import Agent, TurnReport
from deskpilot.agent.tools import DesktopTools, LocalTool, ModelFrame, ToolResult, TurnScope

__all__ = [
    "Agent",
    "AgentEvent",
    "DesktopTools",
    "EventLog",
    "LocalTool",
    "ModelFrame",
    "ToolResult",
    "TurnReport",
    "TurnScope",
    "build_agent",
    "local_tools",
]
