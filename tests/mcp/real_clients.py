"""Real MCP clients for the client-matrix tests (tests/mcp/test_real_clients.py).

One chain driver for every Python client (the SDK's low-level ``ClientSession`` at any
protocol version it can negotiate, and its high-level ``Client``), over stdio or Streamable
HTTP; the TypeScript SDK runs the same chain in ``tests/clients/ts_chain.mjs``. Nothing here
skips: a missing node or npm install fails, naming ``scripts/test``, which installs them.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_helpers import (
    DESKPILOT,
    ROOT,
    diag_of,
    element_id,
    has_image,
    state_id_of,
    stdio_params,
    text_of,
)
from mcp_types import CallToolResult
from mcp_types.version import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    MODERN_PROTOCOL_VERSIONS,
)

from mcp import Client

CLIENTS_DIR = ROOT / "tests" / "clients"
TS_CHAIN = CLIENTS_DIR / "ts_chain.mjs"
TS_FROZEN = CLIENTS_DIR / "ts_frozen.mjs"
TS_CALLS = CLIENTS_DIR / "ts_calls.mjs"
TS_SDK = "@modelcontextprotocol/sdk"
INSTALL_HINT = (
    "run scripts/test (it installs the outside test clients: `npm ci` in tests/clients, "
    "see dp_install_clients in scripts/lib/setup.sh)"
)

#: the calculator buttons of the chain, as their tree lines name them: 7 × 6 =
CHAIN_LABELS = ("7 7", "× ×", "6 6", "= =")
CHAIN_TOOLS = ["get_app_state", "click", "click", "click", "click"]

#: a tool call as the chain makes it: (tool, arguments, _meta) → result
Caller = Callable[[str, dict[str, Any], dict[str, Any] | None], Awaitable[CallToolResult]]


# ---------------------------------------------------------------------- reading results


def display_of(text: str) -> str | None:
    """The calculator's display: the textField value of the tree in a result's text."""
    m = re.search(r'textField = "([^"]*)"[^\n]*\[\d+\]$', text, re.M)
    return m.group(1) if m else None


def status_json(result: CallToolResult) -> dict[str, Any]:
    """The JSON of a ``status`` result (the diagnostic line follows it)."""
    assert not result.is_error, text_of(result)
    value, _ = json.JSONDecoder().raw_decode(text_of(result))
    assert isinstance(value, dict)
    return value


# ---------------------------------------------------------------------- the chain


@dataclass
class Chain:
    """What one client saw doing get_app_state → click 7 → × → 6 → =, then ``status``."""

    calls: list[str] = field(default_factory=list)
    results: list[CallToolResult] = field(default_factory=list)
    #: the ``status`` result after the chain (not one of the counted calls)
    status: CallToolResult | None = None

    def state_ids(self) -> list[str]:
        return [state_id_of(r) for r in self.results]


async def run_chain(call: Caller) -> Chain:
    """The agent's loop: each action uses the state_id and element ids of the result before.

    Stops at the first error result (there is no state to go on with); asserts nothing, so a
    test can check the chain after its client has closed (``assert_chain``)."""
    chain = Chain()

    async def counted(tool: str, args: dict[str, Any]) -> CallToolResult:
        chain.calls.append(tool)
        result = await call(tool, args, None)
        chain.results.append(result)
        return result

    prev = await counted("get_app_state", {"app": "gnome-calculator"})
    for label in CHAIN_LABELS:
        if prev.is_error:
            break
        args = {"state_id": state_id_of(prev), "element_id": element_id(prev, f'"{label}"')}
        prev = await counted("click", args)
    chain.status = await call("status", {}, None)
    return chain


def assert_chain(chain: Chain, agent_session_re: str) -> str:
    """Exactly 5 calls; every action succeeded and carried a new state_id; the display went
    from cleared to 42; ``status`` counted the four clicks in one implicit turn of an agent
    session matching ``agent_session_re``, which is returned."""
    assert chain.calls == CHAIN_TOOLS, (chain.calls, text_of(chain.results[-1]))
    first, actions = chain.results[0], chain.results[1:]
    assert not first.is_error, text_of(first)
    assert display_of(text_of(first)) in ("", "0"), "the calculator starts cleared"
    for label, r in zip(CHAIN_LABELS, actions, strict=True):
        assert not r.is_error, (label, text_of(r))
        d = diag_of(r)
        assert d["actionOutcome"] == "call_returned", (label, d)
        assert d["observationOutcome"] == "available", (label, d)
        assert d["stateIdIssued"] is True, (label, d)
        # the server saw the call before as this client session's (None: a new session)
        assert d["timings"]["betweenCallsMs"] is not None, (label, d)
        assert has_image(r), label
    ids = chain.state_ids()
    assert len(set(ids)) == 5, f"every result carries a new state_id: {ids}"
    assert display_of(text_of(chain.results[-1])) == "42", text_of(chain.results[-1])
    assert chain.status is not None
    return assert_one_turn(status_json(chain.status), agent_session_re)


#: the agent session of a stdio connection, and of sessionless HTTP requests: random per
#: server (deskpilot.mcp.server), so only their shape is known to a client
STDIO_SESSION_RE = r"stdio:[^:\s]+"
SESSIONLESS_SESSION_RE = r"http-sessionless:[^:\s]+"


def assert_one_turn(status: dict[str, Any], agent_session_re: str) -> str:
    """The four clicks were counted in one implicit turn of an agent session matching
    ``agent_session_re``; returns that agent session."""
    assert status["actions"] == 4, status
    turn = status["turn"]
    assert turn["explicit"] is False and turn["stopped"] is False, status
    m = re.fullmatch(f"session:({agent_session_re})", turn["id"])
    assert m, (agent_session_re, status)
    return m.group(1)


# ---------------------------------------------------------------------- Python clients


@dataclass
class Opened:
    """An open Python client: how to call a tool, and what was negotiated."""

    call: Caller
    protocol_version: str
    server_name: str | None
    #: the ``mcp-session-id`` header of every tools/call request sent (HTTP only)
    sent_session_ids: list[str | None]


async def negotiate(session: ClientSession, version: str) -> None:
    """Negotiate exactly ``version`` on a low-level session.

    The SDK's ``initialize()`` always offers ``LATEST_HANDSHAKE_VERSION`` and ``discover()``
    the newest modern version; an older handshake version is asked for the way any client
    does it, with its own ``initialize`` request (the server answers with the version asked
    for when it supports it), then ``adopt`` + ``notifications/initialized``, which is what
    ``initialize()`` does after its request."""
    if version in MODERN_PROTOCOL_VERSIONS:
        assert version == MODERN_PROTOCOL_VERSIONS[-1], "discover() asks for the newest"
        await session.discover()
    elif version == LATEST_HANDSHAKE_VERSION:
        await session.initialize()
    else:
        assert version in HANDSHAKE_PROTOCOL_VERSIONS, version
        result = await session.send_request(
            types.InitializeRequest(
                params=types.InitializeRequestParams(
                    protocol_version=version,
                    capabilities=types.ClientCapabilities(),
                    client_info=types.Implementation(name="deskpilot-tests", version="0"),
                )
            ),
            types.InitializeResult,
        )
        session.adopt(result)
        await session.send_notification(types.InitializedNotification())
    assert session.protocol_version == version


def _bearer_client(token: str, sent: list[str | None]) -> httpx2.AsyncClient:
    """The SDK's HTTP client with the bearer header, recording the session id of every
    tools/call request it sends."""
    http = create_mcp_http_client(headers={"authorization": f"Bearer {token}"})

    async def record(request: httpx2.Request) -> None:
        if request.headers.get("mcp-method") == "tools/call" or b'"tools/call"' in (
            request.content or b""
        ):
            sent.append(request.headers.get("mcp-session-id"))

    http.event_hooks = {"request": [record], "response": []}
    return http


@asynccontextmanager
async def open_python(
    kind: str,
    transport: str,
    *,
    version: str | None = None,
    mode: str = "auto",
    http: tuple[str, str] | None = None,
) -> AsyncIterator[Opened]:
    """``kind`` "session" (``ClientSession`` negotiating ``version``) or "client"
    (``mcp.Client`` with ``mode``); ``transport`` "stdio" (a new ``deskpilot serve``) or
    "http" (``http`` = (url, token) of a running server)."""
    sent: list[str | None] = []
    async with _transport(transport, http, sent) as target:
        if kind == "session":
            assert version is not None
            async with (
                target as (read, write),
                ClientSession(read, write, read_timeout_seconds=120) as session,
            ):
                await negotiate(session, version)

                async def call_session(
                    tool: str, args: dict[str, Any], meta: dict[str, Any] | None
                ) -> CallToolResult:
                    return await session.call_tool(tool, args, meta=meta)

                info = session.server_info
                yield Opened(call_session, version, info.name if info else None, sent)
        else:
            assert kind == "client" and version is None, (kind, version)
            async with Client(target, mode=mode, read_timeout_seconds=120) as client:

                async def call_client(
                    tool: str, args: dict[str, Any], meta: dict[str, Any] | None
                ) -> CallToolResult:
                    return await client.call_tool(tool, args, meta=meta)

                info = client.server_info
                yield Opened(
                    call_client, client.protocol_version, info.name if info else None, sent
                )


@asynccontextmanager
async def _transport(
    transport: str, http: tuple[str, str] | None, sent: list[str | None]
) -> AsyncIterator[Any]:
    """The SDK transport (an unentered async context manager yielding the stream pair)."""
    if transport == "stdio":
        yield stdio_client(stdio_params())
        return
    assert transport == "http" and http is not None, transport
    url, token = http
    async with _bearer_client(token, sent) as client:
        yield streamable_http_client(url, http_client=client)


# ---------------------------------------------------------------------- the HTTP server


# ---------------------------------------------------------------------- the TypeScript SDK


def node() -> str:
    """The system node (Debian/nodesource; the TS SDK also runs on the Node 22 that
    scripts/test installs into tests/clients/node_modules, but the system one is what a
    user's agent would spawn with)."""
    path = shutil.which("node")
    assert path, f"no `node` on PATH: {INSTALL_HINT}"
    return path


def ts_sdk_version() -> str:
    """The installed TypeScript SDK, which must be the version pinned in package.json."""
    pinned = json.loads((CLIENTS_DIR / "package.json").read_text())["dependencies"][TS_SDK]
    installed = CLIENTS_DIR / "node_modules" / TS_SDK / "package.json"
    assert installed.is_file(), f"{TS_SDK} is not installed in tests/clients: {INSTALL_HINT}"
    version = json.loads(installed.read_text())["version"]
    assert version == pinned, f"{TS_SDK} {version} installed, {pinned} pinned: {INSTALL_HINT}"
    return str(version)


def server_env() -> dict[str, str]:
    """What the TS client passes to the server it spawns (its own default environment,
    HOME/PATH/…, is added by the SDK): the desktop, the development trust, the data dir, and
    the runtime dir (the desktop lease lives there) when there is one."""
    names = [
        "DISPLAY",
        "DBUS_SESSION_BUS_ADDRESS",
        "DESKPILOT_HOST_LOCAL_TRUST",
        "DESKPILOT_DATA_DIR",
        "XDG_RUNTIME_DIR",
    ]
    env = {k: os.environ[k] for k in names if k in os.environ}
    assert {"DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "DESKPILOT_HOST_LOCAL_TRUST"} <= set(env)
    return env


async def run_ts_chain(config: dict[str, Any], *, token: str | None = None) -> dict[str, Any]:
    """Run ts_chain.mjs with ``config`` (stdio: command/args/env; http: url) and return the
    JSON line it printed. The bearer token goes through the environment, never argv."""
    return await run_ts_script(TS_CHAIN, config, token=token)


async def run_ts_script(
    script: Path, config: dict[str, Any], *args: str, token: str | None = None
) -> dict[str, Any]:
    """Run one of tests/clients' TypeScript SDK scripts with ``config`` and ``args`` and
    return the JSON line it printed last."""
    ts_sdk_version()
    env = dict(os.environ)
    env.pop("DP_TS_TOKEN", None)
    if token is not None:
        env["DP_TS_TOKEN"] = token
    proc = await asyncio.create_subprocess_exec(
        node(),
        str(script),
        json.dumps(config),
        *args,
        cwd=str(CLIENTS_DIR),
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout=180)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    stderr = err.decode(errors="replace")
    if token:
        stderr = stderr.replace(token, "<token>")
    lines = [ln for ln in out.decode().splitlines() if ln.startswith("{")]
    assert proc.returncode == 0 and lines, (proc.returncode, out.decode()[-2000:], stderr[-4000:])
    report = json.loads(lines[-1])
    assert isinstance(report, dict)
    return report


def stdio_config() -> dict[str, Any]:
    assert Path(DESKPILOT).exists(), DESKPILOT
    return {"transport": "stdio", "command": DESKPILOT, "args": ["serve"], "env": server_env()}
