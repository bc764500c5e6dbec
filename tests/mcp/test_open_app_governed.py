"""open_app is a governed action, seen from a real MCP client talking to ``deskpilot serve``
over stdio on the private desktop: a shell is refused by policy and never runs, a desktop app
is an L2 launch in the ledger, an L3 launch waits for the person's ``deskpilot confirm``, and a
program that exits at once is reported with its exit status."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import DESKPILOT, diag_of, text_of

from deskpilot.store.db import Database
from deskpilot.store.ledger import ActionRepository
from deskpilot.store.timeline import TimelineRepository
from mcp import Client, StdioServerParameters

pytestmark = pytest.mark.desktop


def serve(data_dir: Path) -> StdioServerParameters:
    env = {**os.environ, "DESKPILOT_DATA_DIR": str(data_dir)}
    return StdioServerParameters(command=DESKPILOT, args=["serve"], env=env)


def status_of(text: str) -> dict[str, Any]:
    return json.loads(text.split("\ndeskpilot diagnostic")[0])  # type: ignore[no-any-return]


def ledger(data_dir: Path, session_id: str) -> list[Any]:
    return ActionRepository(Database(data_dir / "deskpilot.sqlite3")).list(session_id)


def timeline(data_dir: Path, session_id: str) -> list[Any]:
    return TimelineRepository(Database(data_dir / "deskpilot.sqlite3")).list(session_id)


async def person(data_dir: Path, approve: bool) -> str:
    """The person at another terminal: waits for the confirmation, then answers it."""
    env = {**os.environ, "DESKPILOT_DATA_DIR": str(data_dir)}
    cli = [sys.executable, "-m", "deskpilot.cli.main", "confirm"]
    for _ in range(300):
        out = await asyncio.to_thread(
            subprocess.run, [*cli, "list"], env=env, capture_output=True, text=True
        )
        if out.stdout.startswith("cf_"):
            cid = out.stdout.split()[0]
            verb = "approve" if approve else "deny"
            done = await asyncio.to_thread(
                subprocess.run, [*cli, verb, cid], env=env, capture_output=True, text=True
            )
            assert done.returncode == 0, done.stderr
            return out.stdout
        await asyncio.sleep(0.1)
    raise AssertionError("no confirmation appeared")


async def test_shell_is_refused_and_a_desktop_app_is_an_l2_launch(
    dp_desktop: Any, tmp_path: Path
) -> None:
    mark = tmp_path / "open_app_ran_this"
    async with Client(serve(tmp_path)) as client:
        r = await client.call_tool(
            "open_app", {"app": "/bin/sh", "args": ["-c", f"id > {mark}"], "timeout_ms": 1500}
        )
        d = diag_of(r)
        assert r.is_error and d["code"] == "action_blocked", text_of(r)
        assert d["actionOutcome"] == "not_dispatched"
        assert d["details"]["reason"] == "launch_restricted" and d["details"]["risk"] == "L4"
        assert d["details"]["rating"] == "shell" and "allowedApps" in d["message"]
        assert not mark.exists()
        st = status_of(text_of(await client.call_tool("status", {})))
        sid = st["session"]["sessionId"]
        assert st["actions"] == 1 and st["session"]["steps"] == 0
        (row,) = ledger(tmp_path, sid)
        assert (row.kind, row.status, row.reason, row.risk_level.label) == (
            "open_app",
            "blocked",
            "launch_restricted",
            "L4",
        )
        blocked = [e for e in timeline(tmp_path, sid) if e.type.value == "action_blocked"]
        assert blocked and blocked[0].payload["program"] == "sh"

        r = await client.call_tool("open_app", {"app": "org.gnome.Calculator"})
        assert not r.is_error, text_of(r)
        data = json.loads(text_of(r).split("\nOpened")[0])
        try:
            assert data["risk"] == "L2" and data["rating"] == "desktop_entry"
            assert diag_of(r)["actionOutcome"] == "call_returned"
            st = status_of(text_of(await client.call_tool("status", {})))
            assert st["actions"] == 2 and st["session"]["steps"] == 1
            row = ledger(tmp_path, sid)[-1]
            assert row.id == data["actionId"] and row.status == "executed"
            assert row.outcome["pid"] == data["pid"]
            assert row.outcome["windowId"] == data["window"]["windowId"]
            kinds = [e.type.value for e in timeline(tmp_path, sid) if e.action_id == row.id]
            assert kinds == ["action_requested", "action_executed"]
        finally:
            os.killpg(data["pid"], signal.SIGTERM)


async def test_l3_launch_waits_for_the_person_and_reports_an_early_exit(
    dp_desktop: Any, tmp_path: Path
) -> None:
    refused, ran = tmp_path / "refused", tmp_path / "ran"
    async with Client(serve(tmp_path)) as client:
        r, listed = await asyncio.gather(
            client.call_tool("open_app", {"app": "/usr/bin/touch", "args": [str(refused)]}),
            person(tmp_path, approve=False),
        )
        assert f"start /usr/bin/touch {refused}" in listed and "L3" in listed
        d = diag_of(r)
        assert r.is_error and d["code"] == "approval_denied", text_of(r)
        assert d["actionOutcome"] == "not_dispatched" and "Nothing was started" in d["message"]
        assert not refused.exists()

        r, _ = await asyncio.gather(
            client.call_tool("open_app", {"app": "/usr/bin/touch", "args": [str(ran)]}),
            person(tmp_path, approve=True),
        )
        d = diag_of(r)
        assert r.is_error and d["code"] == "action_failed", text_of(r)
        assert d["actionOutcome"] == "call_returned"
        assert d["details"]["exitCode"] == 0 and "before showing a window" in d["message"]
        assert "still running" not in d["message"]
        assert ran.exists()

        st = status_of(text_of(await client.call_tool("status", {})))
        assert st["actions"] == 2 and st["session"]["steps"] == 1
        denied, executed = ledger(tmp_path, st["session"]["sessionId"])
        assert denied.status == "blocked" and denied.error_code == "approval_denied"
        assert executed.status == "executed" and executed.approval_id is not None
        assert executed.outcome["exitCode"] == 0 and executed.outcome["exitedBeforeWindow"]
