"""start_task and wait_for_completion through the official TypeScript MCP SDK (the SDK Claude
Code and pi are built on), over stdio, against a real ``deskpilot serve`` whose decision model
is the scripted model server: the delegated contract is tested through the client people use.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from scripted_model import Calculator, ScriptedModel

from deskpilot.desktop.apps import App

pytestmark = pytest.mark.desktop

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = ROOT / "tests" / "clients"
DESKPILOT = str(Path(sys.executable).with_name("deskpilot"))


async def _run_ts_task(config: dict[str, Any]) -> dict[str, Any]:
    node = shutil.which("node")
    assert node, "node is not installed: run scripts/test, which installs it"
    assert (CLIENTS / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir(), "scripts/test"
    proc = await asyncio.create_subprocess_exec(
        node,
        str(CLIENTS / "ts_task.mjs"),
        json.dumps(config),
        cwd=str(CLIENTS),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=180)
    assert proc.returncode == 0, err.decode(errors="replace")[-3000:]
    return dict(json.loads(out.decode().strip().splitlines()[-1]))


async def test_typescript_sdk_delegates_a_goal_and_waits_for_it(
    calculator: App, scripted_model: ScriptedModel, tmp_path: Path
) -> None:
    scripted_model.set_policy(Calculator("7*6"))
    names = ["DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "DESKPILOT_HOST_LOCAL_TRUST", "XDG_RUNTIME_DIR"]
    env = {k: os.environ[k] for k in names if k in os.environ}
    env.update(
        DESKPILOT_DATA_DIR=str(tmp_path / "data"),
        DESKPILOT_PROVIDER_BASE_URL=scripted_model.base_url,
        DESKPILOT_PROVIDER_MODEL=scripted_model.model_id,
        DESKPILOT_PROVIDER_API_KEY="sk-test-ts-0123456789",
        PATH=os.environ.get("PATH", ""),
    )
    report = await _run_ts_task(
        {
            "command": DESKPILOT,
            "args": ["serve"],
            "env": env,
            "task": {
                "goal": "Compute 7 times 6 on the calculator.",
                "app": calculator.pid,
                "success_criteria": [
                    {
                        "kind": "accessibility",
                        "selector": {"role": "textField"},
                        "assertion": "value_equals",
                        "expected": "42",
                    }
                ],
            },
        }
    )
    assert not report["errors"], report
    assert {"start_task", "get_status", "wait_for_completion"} <= set(report["tools"])
    start = report["start"]
    assert not start["isError"], start
    assert start["body"]["operator"] == "running" and start["body"]["taskId"], start
    wait = report["wait"]["body"]
    assert wait["state"] == "completed" and wait["timedOut"] is False, wait
    assert wait["endReason"] == "verification_passed", wait
    assert wait["lastVerification"]["passed"] is True, wait
    assert wait["verificationIds"], wait
    status = report["status"]["body"]  # no task_id: the caller's latest task
    assert status["taskId"] == start["body"]["taskId"] and status["state"] == "completed"
    assert scripted_model.calls >= 2, scripted_model.calls  # a batch, then ready
