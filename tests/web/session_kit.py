"""Real agents for the sessions and controls tests (test_sessions.py, test_controls.py).

Playwright's sync API cannot run inside a running asyncio loop, so every agent runs on a
:class:`LoopThread` — a background thread with its own loop — and the browser test stays a
plain function:

* :class:`InProcessAgent` — a deskpilot runtime built in this process (the kernel on the
  private desktop, the session's data dir), called as an MCP client's tools would be
  (``call("click", {...})``); its kernel's control inbox runs, so the dashboard's controls
  reach it;
* :class:`McpAgent` — ``deskpilot serve --transport http`` in its own process, driven by the
  official MCP Python SDK client over Streamable HTTP (bearer token read from the server's
  stderr, never printed).

Results are read the way an agent reads them: ``state_id=…`` and the ``[N]`` element ids of
the rendered tree.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
DESKPILOT = str(Path(sys.executable).with_name("deskpilot"))


class LoopThread:
    """An event loop on a daemon thread; ``run(coro)`` waits for the result here."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 120.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@dataclass
class Result:
    text: str
    is_error: bool

    def state_id(self) -> str:
        m = re.search(r"^state_id=(\S+)$", self.text, re.M)
        assert m, self.text[:2000]
        return m.group(1)

    def element(self, pattern: str) -> int:
        """The id of the one tree line matching ``pattern`` (a regex)."""
        found = [
            int(m.group(1))
            for line in self.text.splitlines()
            if re.search(pattern, line) and (m := re.search(r"\[(\d+)\]\s*$", line))
        ]
        assert len(found) == 1, (pattern, found, self.text[:3000])
        return found[0]


class InProcessAgent:
    """A runtime of this process on its own loop; one agent session ``agent``."""

    def __init__(self, loop: LoopThread, agent_session: str = "web-test-agent") -> None:
        self.loop = loop
        self.agent_session = agent_session
        self.runtime: Any = loop.run(self._build())

    @staticmethod
    async def _build() -> Any:
        from deskpilot.runtime.wiring import build_runtime

        rt = build_runtime()
        await rt.start()
        return rt

    def call(self, tool: str, args: dict[str, Any], timeout: float = 90.0) -> Result:
        outcome = self.loop.run(
            self.runtime.call(tool, args, agent_session=self.agent_session), timeout
        )
        return Result(outcome.text, outcome.is_error)

    def session_id(self) -> str:
        """The kernel session this agent's actions run in (its implicit atomic session)."""
        rows = self.loop.run(self._sessions())
        assert rows, "the agent has no live session"
        return str(rows[-1].id)

    async def _sessions(self) -> list[Any]:
        return list(self.runtime.ctx.kernel.sessions.active(self.agent_session))

    def close(self) -> None:
        self.loop.run(self.runtime.close())


_URL = re.compile(r"(http://127\.0\.0\.1:\d+/mcp)")
_TOKEN = re.compile(r"bearer token \(shown once[^)]*\): (\S+)")


class McpAgent:
    """``deskpilot serve --transport http`` and the official MCP client connected to it."""

    def __init__(self, loop: LoopThread, timeout: float = 60.0) -> None:
        self.loop = loop
        self.proc = subprocess.Popen(
            [DESKPILOT, "serve", "--transport", "http", "--port", "0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=dict(os.environ),
            text=True,
            start_new_session=True,
        )
        self._lines: list[str] = []
        announced = threading.Event()

        def drain() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self._lines.append(line)
                said = "".join(self._lines)
                if _URL.search(said) and _TOKEN.search(said):
                    announced.set()
            announced.set()

        threading.Thread(target=drain, daemon=True).start()
        announced.wait(timeout)
        said = "".join(self._lines)
        url, token = _URL.search(said), _TOKEN.search(said)
        if not (url and token):
            self.stop()
            raise AssertionError("deskpilot serve did not announce its URL and token")
        self._client: Any = None
        self._stack: Any = None
        loop.run(self._connect(url.group(1), token.group(1)))

    @property
    def pid(self) -> int:
        return self.proc.pid

    async def _connect(self, url: str, token: str) -> None:
        from contextlib import AsyncExitStack

        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        from mcp import Client

        self._stack = AsyncExitStack()
        http = await self._stack.enter_async_context(
            create_mcp_http_client(headers={"authorization": f"Bearer {token}"})
        )
        self._client = await self._stack.enter_async_context(
            Client(streamable_http_client(url, http_client=http))
        )

    def call(self, tool: str, args: dict[str, Any], timeout: float = 90.0) -> Result:
        result = self.loop.run(self._client.call_tool(tool, args), timeout)
        texts = [c.text for c in result.content if c.type == "text"]
        return Result("\n".join(texts), bool(result.is_error))

    def stop(self) -> None:
        if self._stack is not None:
            with contextlib.suppress(Exception):  # the server may be gone already
                self.loop.run(self._stack.aclose(), 30)
            self._stack = None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
