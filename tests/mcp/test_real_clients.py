"""Real MCP clients against a real ``deskpilot serve`` and gnome-calculator.

Every client does what an agent does: one observation, then four actions, each on the
state_id and element ids of the result before it (get_app_state → click 7 → × → 6 → =):
exactly five tool calls, every action a success with a new state_id, and the display reads
42. Then ``status`` must show the four clicks counted in one turn of the expected agent
session. This is the matrix that catches a server that treats every request of a
handshake-era connection as a new agent session (``state_id_invalid`` "belongs to another
turn" on the second call): the official TypeScript SDK, and the Python SDK's low-level
``ClientSession`` at every protocol version it can negotiate and its high-level ``Client``,
over stdio and Streamable HTTP.

The identity rules pinned last are the ones ``deskpilot.mcp.server`` documents: a stdio
connection is the one agent session ``stdio:<server id>`` and its turn lasts until a new
``_meta.turn_id`` (or the connection ends: a new server is a new agent session); over HTTP
each ``mcp-session-id`` is its own agent session ``http:<id>``, and requests without one
share the server's ``http-sessionless:<server id>``.

Each test starts a fresh calculator (cleared display) and its own server; nothing is skipped
when node or the npm clients are missing: ``scripts/test`` installs them.
"""

from __future__ import annotations

import os
import re
from typing import Any

import pytest
from mcp_helpers import diag_of, element_id, state_id_of, text_of
from mcp_types.version import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    KNOWN_PROTOCOL_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    LATEST_MODERN_VERSION,
    MODERN_PROTOCOL_VERSIONS,
)
from real_clients import (
    CHAIN_LABELS,
    CHAIN_TOOLS,
    SESSIONLESS_SESSION_RE,
    STDIO_SESSION_RE,
    Chain,
    Opened,
    assert_chain,
    assert_one_turn,
    display_of,
    open_python,
    run_chain,
    run_ts_chain,
    status_json,
    stdio_config,
    ts_sdk_version,
)

from deskpilot.desktop.apps import App
from serve_kit import HttpServer, http_server

pytestmark = pytest.mark.desktop

CALC = {"app": "gnome-calculator"}


def expected_session(opened: Opened, transport: str) -> str:
    """The agent session (a regex) the server must have put this client's calls in."""
    if transport == "stdio":
        assert opened.sent_session_ids == []
        return STDIO_SESSION_RE
    # the chain's five calls and the status after it
    assert len(opened.sent_session_ids) == len(CHAIN_TOOLS) + 1, opened.sent_session_ids
    if opened.protocol_version in MODERN_PROTOCOL_VERSIONS:
        assert set(opened.sent_session_ids) == {None}, "the modern protocol has no session id"
        return SESSIONLESS_SESSION_RE
    (sid,) = set(opened.sent_session_ids)
    assert sid, "a handshake-era HTTP client sends the session id the server gave it"
    return re.escape(f"http:{sid}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def check(opened: Opened, chain: Chain, transport: str) -> None:
    assert opened.server_name == "deskpilot"
    assert_chain(chain, expected_session(opened, transport))


# ---------------------------------------------------------------------- the TypeScript SDK


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_typescript_sdk_chain(calculator: App, dp_desktop: Any, transport: str) -> None:
    """@modelcontextprotocol/sdk (pinned in tests/clients/package.json), system node."""
    if transport == "stdio":
        report = await run_ts_chain(stdio_config())
    else:
        with http_server() as srv:
            report = await run_ts_chain({"transport": "http", "url": srv.url}, token=srv.token)
    steps = report["steps"]
    assert report["calls"] == CHAIN_TOOLS, report
    assert [s["tool"] for s in steps] == CHAIN_TOOLS
    assert report["server"]["name"] == "deskpilot", report
    assert report["sdk"] == ts_sdk_version(), report
    # the TS SDK 1.x offers its newest version, a handshake-era one, and the server takes it
    assert report["offeredProtocolVersion"] in HANDSHAKE_PROTOCOL_VERSIONS, report
    assert report["protocolVersion"] == report["offeredProtocolVersion"], report
    assert steps[0]["display"] in ("", "0") and not steps[0]["isError"], steps[0]
    for label, step in zip(CHAIN_LABELS, steps[1:], strict=True):
        assert not step["isError"], (label, step)
        assert step["hasImage"], (label, step)
        d = step["diagnostic"]
        assert d["actionOutcome"] == "call_returned", (label, d)
        assert d["observationOutcome"] == "available" and d["stateIdIssued"] is True, (label, d)
        assert d["timings"]["betweenCallsMs"] is not None, (label, d)
    ids = [s["stateId"] for s in steps]
    assert None not in ids and len(set(ids)) == 5, ids
    assert report["display"] == "42", steps[-1]
    # expect on the last click: one check passed, one failed; the click itself succeeded
    expect = steps[-1]["diagnostic"]["expect"]
    assert expect["outcome"] == "failed", expect
    assert [c["passed"] for c in expect["checks"]] == [True, False], expect
    assert all(c["id"] for c in expect["checks"]), expect
    if transport == "stdio":
        # closing the client ended the server it spawned (and so its desktop lease)
        assert report["serverPid"] and not _alive(report["serverPid"]), report
        agent_session = STDIO_SESSION_RE
    else:
        assert report["transportProtocolVersion"] == report["protocolVersion"], report
        assert report["sessionId"], report
        agent_session = re.escape(f"http:{report['sessionId']}")
    assert_one_turn(report["status"], agent_session)


# ---------------------------------------------------------------------- the Python SDK


@pytest.mark.parametrize("version", KNOWN_PROTOCOL_VERSIONS)
async def test_client_session_stdio_every_protocol_version(calculator: App, version: str) -> None:
    """The low-level ClientSession over stdio, once per version the SDK can negotiate."""
    async with open_python("session", "stdio", version=version) as opened:
        chain = await run_chain(opened.call)
    assert opened.protocol_version == version
    check(opened, chain, "stdio")


@pytest.mark.parametrize("version", [LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION])
async def test_client_session_http(calculator: App, server: HttpServer, version: str) -> None:
    """The low-level ClientSession over Streamable HTTP with the bearer header: the newest
    handshake version (an mcp-session-id) and the newest modern one (sessionless)."""
    async with open_python("session", "http", version=version, http=server.target) as opened:
        chain = await run_chain(opened.call)
    assert opened.protocol_version == version
    check(opened, chain, "http")


#: mcp.Client's modes and what they must negotiate with deskpilot
CLIENT_MODES = {"auto": LATEST_MODERN_VERSION, "legacy": LATEST_HANDSHAKE_VERSION}


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", sorted(CLIENT_MODES))
async def test_high_level_client(
    calculator: App, dp_desktop: Any, mode: str, transport: str
) -> None:
    """mcp.Client: "auto" (the default: discover, the modern protocol) and "legacy" (the
    initialize handshake)."""
    if transport == "stdio":
        async with open_python("client", "stdio", mode=mode) as opened:
            chain = await run_chain(opened.call)
    else:
        with http_server() as srv:
            async with open_python("client", "http", mode=mode, http=srv.target) as opened:
                chain = await run_chain(opened.call)
    assert opened.protocol_version == CLIENT_MODES[mode]
    check(opened, chain, transport)


# ---------------------------------------------------------------------- identity rules


async def _click(opened: Opened, state: Any, label: str, meta: dict[str, Any] | None = None) -> Any:
    args = {"state_id": state_id_of(state), "element_id": element_id(state, f'"{label}"')}
    return await opened.call("click", args, meta)


def _refused(result: Any, reason: str) -> dict[str, Any]:
    assert result.is_error, text_of(result)
    d = diag_of(result)
    assert d["code"] == "state_id_invalid", d
    assert d["details"]["reason"] == reason, d
    assert d["actionOutcome"] == "not_dispatched", d
    return d


@pytest.mark.parametrize("version", [LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION])
async def test_stdio_turn_lasts_until_a_new_turn_id_or_the_connection_ends(
    calculator: App, version: str
) -> None:
    """Without turn_id the calls of a stdio connection are one implicit turn; a turn_id ends
    it (and the next one ends that); a call without turn_id joins the open explicit turn."""
    async with open_python("session", "stdio", version=version) as c:
        implicit = await c.call("get_app_state", CALC, None)
        st = status_json(await c.call("status", {}, None))
        first_turn = st["turn"]["id"]
        assert re.fullmatch(f"session:{STDIO_SESSION_RE}", first_turn), st
        # a turn id ends the implicit turn: its state_id is refused
        st = status_json(await c.call("status", {}, {"turn_id": "task-1"}))
        assert st["turn"] == {"id": "turn:task-1", "explicit": True, "stopped": False}, st
        d = _refused(await _click(c, implicit, "1 1", {"turn_id": "task-1"}), "other_turn")
        assert "has ended" in d["message"], d
        # a call without turn_id belongs to the open explicit turn
        state = await c.call("get_app_state", CALC, {"turn_id": "task-1"})
        one = await _click(c, state, "1 1")
        assert not one.is_error, text_of(one)
        assert display_of(text_of(one)) == "1"
        st = status_json(await c.call("status", {}, None))
        assert st["turn"]["id"] == "turn:task-1" and st["actions"] == 2, st
        # the next turn id ends task-1: the state task-1's click returned is refused
        _refused(await _click(c, one, "2 2", {"turn_id": "task-2"}), "other_turn")
        st = status_json(await c.call("status", {}, None))
        assert st["turn"]["id"] == "turn:task-2" and st["actions"] == 1, st
        last = await c.call("get_app_state", CALC, {"turn_id": "task-2"})
        assert display_of(text_of(last)) == "1", "the refused click did nothing"
    # the connection ended: a new one (a new server process, a new agent session) does not
    # know its state_ids
    async with open_python("session", "stdio", version=version) as c2:
        st = status_json(await c2.call("status", {}, None))
        assert re.fullmatch(f"session:{STDIO_SESSION_RE}", st["turn"]["id"]), st
        assert st["turn"]["id"] != first_turn, st
        _refused(await _click(c2, last, "2 2", {"turn_id": "task-2"}), "unknown")
        fresh = await c2.call("get_app_state", CALC, {"turn_id": "task-2"})
        ok = await _click(c2, fresh, "2 2", {"turn_id": "task-2"})
        assert not ok.is_error and display_of(text_of(ok)) == "12", text_of(ok)


async def test_http_session_ids_are_agent_sessions_and_sessionless_requests_share_one(
    calculator: App, server: HttpServer
) -> None:
    """Two handshake clients (two mcp-session-ids) are two agent sessions; two modern
    clients (no session id) are one."""
    target = server.target
    async with (
        open_python("session", "http", version=LATEST_HANDSHAKE_VERSION, http=target) as a,
        open_python("session", "http", version=LATEST_HANDSHAKE_VERSION, http=target) as b,
    ):
        sa = await a.call("get_app_state", CALC, None)
        # B is another agent session: A's state_id is not B's (and B's refusal spends nothing)
        d = _refused(await _click(b, sa, "1 1"), "other_turn")
        assert "another turn" in d["message"], d
        one = await _click(a, sa, "1 1")
        assert not one.is_error and display_of(text_of(one)) == "1", text_of(one)
        sb = await b.call("get_app_state", CALC, None)
        _refused(await _click(a, sb, "2 2"), "other_turn")
        st_a = status_json(await a.call("status", {}, None))
        st_b = status_json(await b.call("status", {}, None))
        (sid_a,) = set(a.sent_session_ids)
        (sid_b,) = set(b.sent_session_ids)
        assert sid_a and sid_b and sid_a != sid_b, (sid_a, sid_b)
        assert st_a["turn"]["id"] == f"session:http:{sid_a}", st_a
        assert st_b["turn"]["id"] == f"session:http:{sid_b}", st_b
        # each its own budget: A's click and refused attempt, B's refused attempt
        assert (st_a["actions"], st_b["actions"]) == (2, 1), (st_a, st_b)
        handshake_state = one

    async with (
        open_python("session", "http", version=LATEST_MODERN_VERSION, http=target) as c,
        open_python("session", "http", version=LATEST_MODERN_VERSION, http=target) as e,
    ):
        sc = await c.call("get_app_state", CALC, None)
        # no session id: C and E are the one sessionless agent session of this server
        two = await _click(e, sc, "2 2")
        assert not two.is_error and display_of(text_of(two)) == "12", text_of(two)
        three = await _click(c, two, "3 3")
        assert not three.is_error and display_of(text_of(three)) == "123", text_of(three)
        assert set(c.sent_session_ids) == set(e.sent_session_ids) == {None}
        st_c = status_json(await c.call("status", {}, None))
        st_e = status_json(await e.call("status", {}, None))
        assert st_c["turn"]["id"] == st_e["turn"]["id"], (st_c, st_e)
        assert re.fullmatch(f"session:{SESSIONLESS_SESSION_RE}", st_c["turn"]["id"]), st_c
        assert st_c["actions"] == st_e["actions"] == 2, (st_c, st_e)
        # ... which is not a catch-all: a state of an mcp-session-id session is refused there
        _refused(await _click(c, handshake_state, "4 4"), "other_turn")
