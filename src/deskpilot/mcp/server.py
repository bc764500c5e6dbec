"""The MCP server: the official SDK's ``MCPServer`` over the runtime's 28 tools.

The SDK generates schemas and validates arguments from Python signatures; deskpilot validates
every call itself instead (unknown fields refused, JSON-string values accepted, messages that
never echo values), so this server publishes the runtime's schemas in ``list_tools`` and hands
the raw arguments to the runtime in ``call_tool``. The transport, JSON-RPC, sessions and
protocol versions are all the SDK's.

Identity (docs/mcp.md, "Sessions and turns"): a request that came without HTTP headers came
over stdio (or in memory), and a stdio server process has exactly one client connection, so
every such request is the one agent session ``stdio:<server id>`` — whatever protocol version
was negotiated and whatever per-request objects the SDK builds. Over Streamable HTTP the agent
session is ``http:<mcp-session-id>``; requests that carry no session id (the stateless
2026-07-28 protocol, or a client that never sends one) all share the one agent session
``http-sessionless:<server id>`` of this server. The server id is random per server object, so
a restarted server is a new client session for the kernel (a kill-switch halt engaged before
it does not bind it) and two servers on one database never share a session. The turn is
``turn_id`` (or ``turnId``) in the request's ``_meta`` when sent.
"""

from __future__ import annotations

import base64
import secrets
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
from deskpilot.runtime.call import ToolOutcome
from deskpilot.runtime.runtime import Runtime
from deskpilot.runtime.tool_args import input_schema
from deskpilot.runtime.tools import TOOLS

DIAGNOSTIC_META_KEY = "deskpilot/diagnostic"


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
        server_id = secrets.token_hex(6)
        #: the agent session of this server's one stdio (or in-memory) connection
        self.stdio_session = f"stdio:{server_id}"
        #: the agent session shared by HTTP requests that carry no ``mcp-session-id``
        self.sessionless_session = f"http-sessionless:{server_id}"

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
            return self.stdio_session, None
        try:
            rc = context.request_context
        except ValueError:
            return self.stdio_session, None
        return self.agent_session_of(context.headers), turn_id_of(rc.meta)

    def agent_session_of(self, headers: Mapping[str, str] | None) -> str:
        """The agent session a request belongs to, from its transport (module docstring).

        Only the transport decides: the SDK may build a new session or context object for
        every request of one stdio connection, so nothing per-object may name the session.
        """
        if headers is None:
            return self.stdio_session
        http_session = headers.get("mcp-session-id")
        return f"http:{http_session}" if http_session else self.sessionless_session


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
