"""Streamable HTTP behind the bearer token: 401 without it, the SDK client works with it."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_helpers import DESKPILOT, diag_of, text_of

from deskpilot.mcp.http import TOKEN_BYTES, TOKEN_TTL_S, BearerToken
from mcp import Client


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_token_shape_and_sliding_ttl() -> None:
    import base64

    tok = secrets.token_urlsafe(TOKEN_BYTES)
    assert len(base64.urlsafe_b64decode(tok + "=")) == 32 and "=" not in tok
    clock = Clock()
    bt = BearerToken(tok, clock=clock)
    assert TOKEN_TTL_S == 1800
    assert bt.check(None) == "missing_token"
    assert bt.check(tok[:-1] + ("A" if tok[-1] != "A" else "B")) == "invalid_token"
    clock.t = 1700
    assert bt.check(tok) is None  # slides to 3500
    clock.t = 3400
    assert bt.check(tok) is None
    clock.t = 3400 + 1800
    assert bt.check(tok) == "expired_token"


@pytest.fixture
def http_server(dp_desktop: Any) -> Iterator[tuple[str, str]]:
    proc = subprocess.Popen(
        [DESKPILOT, "serve", "--transport", "http", "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
        text=True,
    )
    try:
        assert proc.stderr is not None
        url = token = None
        deadline = time.monotonic() + 30
        while (url is None or token is None) and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            if m := re.search(r"(http://127\.0\.0\.1:\d+/mcp)", line):
                url = m.group(1)
            if m := re.search(r"bearer token \(shown once[^)]*\): (\S+)", line):
                token = m.group(1)
        assert url and token, "server did not announce its URL and token"
        yield url, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.stdout is not None
    assert token is not None and token not in (proc.stdout.read() or "")


async def test_http_refuses_missing_or_wrong_token(http_server: tuple[str, str]) -> None:
    url, token = http_server
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(timeout=10) as http:
        r = await http.post(url, json=body, headers=headers)
        assert r.status_code == 401 and r.json()["error"] == "missing_token"
        r = await http.post(url, json=body, headers={**headers, "authorization": "Bearer nope"})
        assert r.status_code == 401 and r.json()["error"] == "invalid_token"
        r = await http.post(url, json=body, headers={**headers, "authorization": f"Basic {token}"})
        assert r.status_code == 401
    client_http = create_mcp_http_client(headers={"authorization": f"Bearer {token}"})
    async with client_http, Client(streamable_http_client(url, http_client=client_http)) as c:
        tools = (await c.list_tools()).tools
        assert len(tools) == 28
        r = await c.call_tool("get_capabilities", {})
        assert not r.is_error, text_of(r)
        assert diag_of(r)["tool"] == "get_capabilities"
        bad = await c.call_tool(
            "scroll", {"state_id": "s", "direction": "sideways", "x": 1, "y": 1}
        )
        assert bad.is_error and diag_of(bad)["code"] == "invalid_request"
