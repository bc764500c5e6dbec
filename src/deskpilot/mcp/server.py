"""The MCP server: the official SDK's ``MCPServer`` over the runtime's 28 tools.

The SDK generates schemas and validates arguments from Python signatures; deskpilot validates
every call itself instead (unknown fields refused, JSON-string values accepted, messages that
never echo values), so this server publishes the runtime's schemas in ``list_tools`` and hands
the raw arguments to the runtime in ``call_tool``. The transport, JSON-RPC, sessions and
protocol versions are all the SDK's.

Identity: the agent session is the Streamable HTTP session id when there is one, else the SDK
session object of a handshake-era connection, else the one client of this process (stdio).
The turn is ``turn_id`` (or ``turnId``) in the request's ``_meta`` when sent.
"""

from __future__ import annotations

import base64
import itertools
import weakref
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
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from deskpilot import __version__
from deskpilot.mcp.instructions import INSTRUCTIONS
from deskpilot.runtime.bridge import TOOLS, Runtime
from deskpilot.runtime.core import ToolOutcome
from deskpilot.runtime.tool_args import input_schema

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
        self._session_ids: weakref.WeakKeyDictionary[object, str] = weakref.WeakKeyDictionary()
        self._counter = itertools.count(1)

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
            return "default", None
        try:
            rc = context.request_context
        except ValueError:
            return "default", None
        meta: Mapping[str, Any] = rc.meta if isinstance(rc.meta, Mapping) else {}
        raw_turn = meta.get("turn_id", meta.get("turnId"))
        turn_id = str(raw_turn) if isinstance(raw_turn, str | int) and str(raw_turn) else None
        headers = context.headers
        http_session = headers.get("mcp-session-id") if headers is not None else None
        if http_session:
            return f"http:{http_session}", turn_id
        if rc.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            session = rc.session
            sid = self._session_ids.get(session)
            if sid is None:
                sid = f"conn:{next(self._counter)}"
                self._session_ids[session] = sid
            return sid, turn_id
        return "default", turn_id


def build_server(runtime: Runtime) -> DeskpilotMCPServer:
    return DeskpilotMCPServer(runtime)
