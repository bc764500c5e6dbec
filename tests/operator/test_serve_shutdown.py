"""SIGTERM on ``deskpilot serve`` ends it the way Ctrl-C does: a delegated task still running
is canceled with reason ``shutdown`` and the desktop lease is let go (the signal's default
action would kill the process and leave the task ``acting`` in the store)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from scripted_model import Calculator, ScriptedModel

from deskpilot.desktop.apps import App
from mcp import Client

pytestmark = pytest.mark.desktop

DESKPILOT = str(Path(sys.executable).with_name("deskpilot"))
_URL = re.compile(r"(http://127\.0\.0\.1:\d+/mcp)")
_TOKEN = re.compile(r"bearer token \(shown once[^)]*\): (\S+)")


def _serve(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [DESKPILOT, "serve", "--transport", "http", "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
        start_new_session=True,
    )


async def _until_called(model: ScriptedModel, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while model.calls == 0:
        assert time.monotonic() < deadline, "the operator never asked the model"
        await asyncio.sleep(0.1)


def _body(result: Any) -> dict[str, Any]:
    text = "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")
    assert not result.is_error, text
    return dict(json.loads(text.split("\n\ndeskpilot diagnostic:")[0]))


async def test_sigterm_cancels_a_running_task_as_shutdown(
    calculator: App, scripted_model: ScriptedModel, tmp_path: Path
) -> None:
    scripted_model.set_policy(Calculator("7*6"))
    scripted_model.delay = 5.0  # the task is still deciding when the signal comes
    data = tmp_path / "data"
    env = dict(os.environ)
    env.update(
        DESKPILOT_DATA_DIR=str(data),
        DESKPILOT_PROVIDER_BASE_URL=scripted_model.base_url,
        DESKPILOT_PROVIDER_MODEL=scripted_model.model_id,
        DESKPILOT_PROVIDER_API_KEY="sk-test-term-0123456789",
    )
    proc = _serve(env)
    lines: list[str] = []
    ready = threading.Event()

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if _URL.search("".join(lines)) and _TOKEN.search("".join(lines)):
                ready.set()
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    try:
        assert ready.wait(60), "".join(lines)[-2000:]
        said = "".join(lines)
        url, token = _URL.search(said), _TOKEN.search(said)
        assert url and token
        http = create_mcp_http_client(headers={"authorization": f"Bearer {token.group(1)}"})
        async with http, Client(streamable_http_client(url.group(1), http_client=http)) as c:
            started = _body(
                await c.call_tool(
                    "start_task",
                    {
                        "goal": "compute 7*6",
                        "app": calculator.pid,
                        "success_criteria": [
                            {"kind": "visual", "assertion": "text_present", "text": "42"}
                        ],
                    },
                )
            )
            await _until_called(scripted_model)  # the operator waits for the model now
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    assert code in (0, 143), (code, "".join(lines)[-2000:])
    db = sqlite3.connect(data / "deskpilot.sqlite3")
    state, reason = db.execute(
        "SELECT state, cancel_reason FROM sessions WHERE id = ?", (started["taskId"],)
    ).fetchone()
    assert (state, reason) == ("canceled", "shutdown"), (state, reason)
    held = db.execute("SELECT COUNT(*) FROM leases").fetchone()[0]
    assert held == 0, "the desktop lease was not let go"
