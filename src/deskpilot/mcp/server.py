"""The MCP server: the official SDK's ``MCPServer`` over the runtime's 28 tools.

The SDK generates schemas and validates arguments from Python signatures; deskpilot validates
every call itself instead (unknown fields refused, JSON-string values accepted, messages that
never echo values), so this server publishes the runtime's schemas in ``list_tools`` and hands
the raw arguments to the runtime in ``call_tool``. The transport, JSON-RPC, sessions and
protocol versions are all the SDK's.

Identity (docs/mcp.md, "Sessions and turns"): a request that came without HTTP headers came
over stdio (or in memory), and a stdio server process has exactly one client connection, so
every such request is the one agent session ``default`` — whatever protocol version was
negotiated and whatever per-request objects the SDK builds. Over Streamable HTTP the agent
session is ``http:<mcp-session-id>``; requests that carry no session id (the stateless
2026-07-28 protocol, or a client that never sends one) all share the one agent session
``http:sessionless`` of this server. The turn is ``turn_id`` (or ``turnId``) in the request's
``_meta`` when sent.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import (
    CallToolResult,
    ImageContent,
    InputRequiredResult,
    TextContent,
    ToolAnnotations,
)
from mcp_types import Tool as MCPTool

from deskpilot import __version__
from deskpilot.mcp.instructions import INSTRUCTIONS
from deskpilot.runtime.bridge import TOOLS, Runtime
from deskpilot.runtime.core import ToolOutcome
from deskpilot.runtime.tool_args import input_schema

DIAGNOSTIC_META_KEY = "deskpilot/diagnostic"
#: the agent session of this process's one stdio (or in-memory) connection
STDIO_SESSION = "default"
#: the agent session shared by HTTP requests that carry no ``mcp-session-id``
SESSIONLESS_HTTP_SESSION = "http:sessionless"


def _tool_list() -> list[MCPTool]:
    tools: list[MCPTool] = []
    for spec in TOOLS.values():
        annotations = ToolAnnotations(
            title=spec.name.replace("_", " "),
            read_only_hint=spec.read_only,
            destructive_hint=spec.kind == "act",
            open_world_hint=False,
        )
        tools.append(
            MCPTool(
                name=spec.name,
                description=spec.description,
                input_schema=input_schema(spec.args),
                annotations=annotations,
                _meta={"deskpilot/group": spec.group},
            )
        )
    return tools


def to_call_result(outcome: ToolOutcome) -> CallToolResult:
    content: list[TextContent | ImageContent] = [TextContent(type="text", text=outcome.text)]
    if outcome.image is not None and not outcome.is_error:
        content.append(
            ImageContent(
                type="image",
                data=base64.b64encode(outcome.image.jpeg).decode("ascii"),
                mime_type="image/jpeg",
            )
        )
    return CallToolResult(
        content=list(content),
        is_error=outcome.is_error,
        _meta={DIAGNOSTIC_META_KEY: outcome.diagnostic.to_json()},
    )


class DeskpilotMCPServer(MCPServer[Any]):
    def __init__(self, runtime: Runtime) -> None:
        super().__init__(
            "deskpilot",
            title="deskpilot",
            description="Governed computer use for Linux desktops",
            instructions=INSTRUCTIONS,
            version=__version__,
            log_level="WARNING",
        )
        self.runtime = runtime
        self._tools = _tool_list()

    async def list_tools(self) -> list[MCPTool]:
        return list(self._tools)

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        context: Context[Any, Any] | None = None,
    ) -> CallToolResult | InputRequiredResult:
        agent_session, turn_id = self._identity(context)
        outcome = await self.runtime.call(
            name, arguments, agent_session=agent_session, turn_id=turn_id
        )
        return to_call_result(outcome)

    def _identity(self, context: Context[Any, Any] | None) -> tuple[str, str | None]:
        if context is None:
            return STDIO_SESSION, None
        try:
            rc = context.request_context
        except ValueError:
            return STDIO_SESSION, None
        return agent_session_of(context.headers), turn_id_of(rc.meta)


def agent_session_of(headers: Mapping[str, str] | None) -> str:
    """The agent session a request belongs to, from its transport (see the module docstring).

    Only the transport decides: the SDK may build a new session or context object for every
    request of one stdio connection, so nothing per-object may name the session.
    """
    if headers is None:
        return STDIO_SESSION
    http_session = headers.get("mcp-session-id")
    return f"http:{http_session}" if http_session else SESSIONLESS_HTTP_SESSION


def turn_id_of(meta: object) -> str | None:
    """``turn_id`` (or ``turnId``) from a request's ``_meta``: a non-empty string or integer."""
    if not isinstance(meta, Mapping):
        return None
    raw = meta.get("turn_id", meta.get("turnId"))
    if isinstance(raw, bool) or not isinstance(raw, str | int):
        return None
    return str(raw) or None


def build_server(runtime: Runtime) -> DeskpilotMCPServer:
    return DeskpilotMCPServer(runtime)
