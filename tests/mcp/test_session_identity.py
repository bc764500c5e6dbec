"""Which agent session a request belongs to: decided by the transport, never per request object.

The bug this pins: handshake-era stdio clients (the TypeScript SDK, the Python SDK's
``ClientSession``) were given a new agent session on every call, so the state_id a result
returned was "from another turn" on the very next call. The real-client chains are in
tests/mcp/test_real_clients.py; these checks pin the rule itself, without a desktop.
"""

from __future__ import annotations

from deskpilot.mcp.server import build_server, turn_id_of
from deskpilot.runtime.wiring import build_runtime


async def test_stdio_is_one_session_per_server_and_http_follows_the_session_header() -> None:
    runtime = build_runtime()
    try:
        one, two = build_server(runtime), build_server(runtime)
        # no HTTP headers: the one connection of a stdio process, for every request
        assert one.agent_session_of(None) == one.agent_session_of(None) == one.stdio_session
        assert one.stdio_session.startswith("stdio:")
        # a restarted server is a new client session (a halt engaged before it does not
        # bind it), and two servers on one database never share a session
        assert one.stdio_session != two.stdio_session
        a = one.agent_session_of({"mcp-session-id": "abc"})
        assert a == "http:abc" == two.agent_session_of({"mcp-session-id": "abc"})
        assert one.agent_session_of({"mcp-session-id": "xyz"}) != a
        # HTTP requests without a session id share this server's one sessionless session
        assert one.agent_session_of({}) == one.agent_session_of({"host": "x"})
        assert one.agent_session_of({}) == one.sessionless_session != one.stdio_session
        assert one.sessionless_session != two.sessionless_session
    finally:
        await runtime.close()


def test_turn_id_from_meta() -> None:
    assert turn_id_of({"turn_id": "task-2"}) == "task-2"
    assert turn_id_of({"turnId": 7}) == "7"
    assert turn_id_of({"turn_id": "a", "turnId": "b"}) == "a"
    for meta in (None, {}, {"turn_id": ""}, {"turn_id": True}, {"turn_id": 1.5}, ["turn_id"]):
        assert turn_id_of(meta) is None, meta
