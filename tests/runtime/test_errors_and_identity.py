"""Errors from below are never echoed; each legacy MCP connection is its own client session."""

from __future__ import annotations

import json

from deskpilot.hostclient.failures import host_exit_error
from deskpilot.mcp.server import build_server
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.runtime.refusals import refusal, safe_error
from deskpilot.runtime.runtime import Runtime
from deskpilot.runtime.wiring import default_kernel
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


def test_a_host_that_ended_says_its_exit_status_and_nothing_else() -> None:
    """The exit status of a host that died is a number, safe to show, and the one fact that
    tells a signal (negative: killed, crashed) from an exit of its own."""
    died = host_exit_error(-9, "during the handshake")
    code, message, retryable, details = safe_error(died)
    assert code is ErrorCode.NATIVE_HOST_UNAVAILABLE and retryable is False
    assert details == {"exitCode": -9}
    assert "handshake" not in message  # the text from below is still not echoed
    assert safe_error(DeskpilotError(ErrorCode.NATIVE_HOST_UNAVAILABLE, "x"))[3] == {}


async def test_a_server_is_one_client_session_whatever_the_protocol_era() -> None:
    """Every call of one connection is one agent session (a handshake-era client once got a
    new session per call); each server object is its own client session."""
    runtime = Runtime(default_kernel())
    try:
        turns = []
        for mode in ("legacy", "legacy", "2026-07-28"):
            server = build_server(runtime)
            async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
                seen = set()
                for _ in range(3):
                    result = await client.call_tool("status", {})
                    text = result.content[0].text  # type: ignore[union-attr]
                    seen.add(json.loads(text.split("\n\n")[0])["turn"]["id"])
                assert seen == {f"session:{server.stdio_session}"}, (mode, seen)
                turns.append(seen.pop())
        assert len(set(turns)) == 3
    finally:
        await runtime.close()
