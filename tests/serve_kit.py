"""``deskpilot serve --transport http`` for tests: started, its URL and token read, ended.

Shared by the MCP tests (tests/mcp/mcp_helpers.py re-exports it) and the dashboard's
(tests/web/settings_kit.py); tests/ is on ``sys.path`` through its conftest.py.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

URL = re.compile(r"(http://127\.0\.0\.1:\d+/mcp)")
TOKEN = re.compile(r"bearer token \(shown once[^)]*\): (\S+)")


@dataclass
class HttpServer:
    """A running server: its URL, its bearer token (never in a repr a failing assertion
    prints), the process and what it said on stderr."""

    url: str
    token: str = field(repr=False)
    proc: subprocess.Popen[str] | None = field(default=None, repr=False, compare=False)
    lines: list[str] = field(default_factory=list, repr=False, compare=False)

    @property
    def target(self) -> tuple[str, str]:
        return self.url, self.token


@contextmanager
def http_server(env: dict[str, str] | None = None, timeout: float = 60.0) -> Iterator[HttpServer]:
    """``deskpilot serve --transport http --port 0`` in its own process group; the URL and the
    token are read from its stderr, which a thread keeps draining (a full pipe would block the
    server); ended with SIGTERM (then SIGKILL) afterwards."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "deskpilot", "serve", "--transport", "http", "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    announced = threading.Event()

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            said = "".join(lines)
            if URL.search(said) and TOKEN.search(said):
                announced.set()
        announced.set()  # the server ended

    reader = threading.Thread(target=drain, name="serve-stderr", daemon=True)
    reader.start()
    try:
        announced.wait(timeout)
        said = "".join(lines)
        url, token = URL.search(said), TOKEN.search(said)
        shown = TOKEN.sub("bearer token …", said)[-2000:]
        assert url and token, f"deskpilot serve did not announce its URL and token:\n{shown}"
        yield HttpServer(url.group(1), token.group(1), proc, lines)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        reader.join(5)
