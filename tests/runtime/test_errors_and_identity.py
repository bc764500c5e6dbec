"""Errors from below are never echoed; each legacy MCP connection is its own client session."""

from __future__ import annotations

import json

from deskpilot.mcp.server import build_server
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.runtime.bridge import Runtime
from deskpilot.runtime.errors import refusal, safe_error
from deskpilot.runtime.wiring import default_backend
from mcp import Client


def test_backend_error_bodies_are_replaced_by_our_own_messages() -> None:
    below = DeskpilotError(
        ErrorCode.ACTION_FAILED,
        "org.a11y.atspi.Error: GtkEntry 'my password is hunter2' refused",
        details={"raw": "hunter2", "reason": "element_gone", "note": "free text here"},
    )
    code, message, retryable, details = safe_error(below)
    assert retryable is False
    assert code is ErrorCode.ACTION_FAILED
    assert "hunter2" not in message and "GtkEntry" not in message
    assert details == {"reason": "element_gone"}
    ours = refusal(ErrorCode.INVALID_REQUEST, "Invalid arguments for click: x: bad", field="x")
    assert safe_error(ours)[1] == "Invalid arguments for click: x: bad"
    code, message, _, details = safe_error(ValueError("traceback text /etc/secret"))
    assert code is ErrorCode.INTERNAL_ERROR and "secret" not in message and details == {}


async def test_each_legacy_connection_is_its_own_client_session() -> None:
    runtime = Runtime(default_backend())
    server = build_server(runtime)
    try:
        turns = []
        for _ in range(2):
            async with Client(server, mode="legacy") as client:
                result = await client.call_tool("status", {})
                text = result.content[0].text  # type: ignore[union-attr]
                turns.append(json.loads(text.split("\n\n")[0])["turn"]["id"])
        assert turns[0] != turns[1] and all(t.startswith("session:conn:") for t in turns)
    finally:
        await runtime.close()
