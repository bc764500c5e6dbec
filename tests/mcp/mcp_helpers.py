"""Helpers for the MCP tests: starting apps, clients, reading results."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp_types import CallToolResult

from deskpilot.desktop.apps import App, launch_accessible, wait_accessible
from deskpilot.mcp.server import build_server
from deskpilot.runtime.diagnostics import parse_diagnostic
from deskpilot.runtime.runtime import RuntimeConfig
from deskpilot.runtime.wiring import build_runtime
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[2]
DESKPILOT = str(ROOT / ".venv" / "bin" / "deskpilot")


def start_app(argv: list[str], *, capture_stdout: bool = False) -> App:
    """Launch and wait for the AT-SPI registration (desktop/apps.py: one relaunch)."""
    return launch_accessible(argv, capture_stdout=capture_stdout)


async def astart_app(argv: list[str], *, capture_stdout: bool = False) -> App:
    """start_app from async code (wait_accessible runs its own event loop)."""
    import asyncio

    return await asyncio.to_thread(start_app, argv, capture_stdout=capture_stdout)


async def await_accessible(pid: int) -> None:
    import asyncio

    await asyncio.to_thread(wait_accessible, pid=pid, timeout=60)


async def state_showing(client: Client, pid: int, marker: str) -> Any:
    """``get_app_state`` of ``pid`` once its text holds ``marker`` (a renderer's tree
    arrives a little after its window); fails with the last state after ~20 s."""
    import asyncio

    state: Any = None
    for _ in range(100):
        state = await client.call_tool("get_app_state", {"app": str(pid)})
        if not state.is_error and marker in text_of(state):
            return state
        await asyncio.sleep(0.2)
    raise AssertionError(text_of(state))


@asynccontextmanager
async def memory_client(config: RuntimeConfig | None = None) -> AsyncIterator[Client]:
    runtime = build_runtime(config)
    server = build_server(runtime)
    try:
        async with Client(server) as client:
            client.runtime = runtime  # type: ignore[attr-defined]
            client.agent_session = server.stdio_session  # type: ignore[attr-defined]
            yield client
    finally:
        await runtime.close()


def stdio_params(*args: str) -> StdioServerParameters:
    assert shutil.which(DESKPILOT) or os.path.exists(DESKPILOT)
    return StdioServerParameters(command=DESKPILOT, args=["serve", *args], env=dict(os.environ))


# ---------------------------------------------------------------------- reading results


def text_of(result: CallToolResult) -> str:
    texts = [c.text for c in result.content if c.type == "text"]
    assert texts, "every result has a text part"
    return "\n".join(texts)


def diag_of(result: CallToolResult) -> dict[str, Any]:
    d = parse_diagnostic(text_of(result))
    assert d is not None, text_of(result)
    return d


def state_id_of(result: CallToolResult) -> str:
    m = re.search(r"^state_id=(\S+)$", text_of(result), re.M)
    assert m, text_of(result)
    return m.group(1)


def element_id(result: CallToolResult, pattern: str) -> int:
    """The id of the one tree line matching ``pattern`` (a regex)."""
    found = [
        int(m.group(1))
        for line in text_of(result).splitlines()
        if re.search(pattern, line) and (m := re.search(r"\[(\d+)\]\s*$", line))
    ]
    assert len(found) == 1, (pattern, found, text_of(result))
    return found[0]


def has_image(result: CallToolResult) -> bool:
    return any(c.type == "image" and c.mime_type == "image/jpeg" for c in result.content)
