"""Shell commands through the kernel: a real Kernel on a real SQLite file, real ``/bin/sh``
processes (agent/shell.py's runner), the person's confirmation through the real
``deskpilot confirm`` CLI in another process, timeouts that kill the process group, and a
pause that ends a running command."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from deskpilot.agent.shell import KEEP_BYTES, governed_bash, run_command
from deskpilot.kernel import Kernel
from deskpilot.kernel.policy.shell_rules import ShellRequest
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import EventType, RiskLevel, SessionState, TaskContract
from deskpilot.store.db import Database
from deskpilot.store.ledger import ActionRepository
from deskpilot.store.settings import Settings

CLI = [sys.executable, "-m", "deskpilot.cli.main"]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    cwd = tmp_path / "work"
    cwd.mkdir()
    return cwd


def _raw_rows(db: Database, sid: str) -> str:
    """Everything the database holds of the session's actions and timeline, as text."""
    rows = db.query("SELECT * FROM actions WHERE session_id = ?", (sid,))
    rows += db.query("SELECT * FROM timeline_events WHERE session_id = ?", (sid,))
    return " ".join(str(v) for row in rows for v in tuple(row))


async def _person(kernel: Kernel, db: Database, verb: str) -> str:
    """The person at another terminal: once something waits, ``deskpilot confirm list``, then
    ``deskpilot confirm approve|deny ID`` (real CLI processes on the same database file);
    returns the listed line."""
    while not kernel.confirmations.pending():  # noqa: ASYNC110 - another writer's row
        await asyncio.sleep(0.02)
    env = {**os.environ, "DESKPILOT_DATA_DIR": str(db.path.parent)}
    listed = await asyncio.to_thread(
        subprocess.run, [*CLI, "confirm", "list"], env=env, capture_output=True, text=True
    )
    assert listed.stdout.startswith("cf_"), listed.stderr
    cid = listed.stdout.split()[0]
    done = await asyncio.to_thread(
        subprocess.run, [*CLI, "confirm", verb, cid], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return listed.stdout.splitlines()[0]


async def test_l1_command_runs_and_the_ledger_keeps_no_output(
    kernel: Kernel, db: Database, work: Path
) -> None:
    (work / "notes.txt").write_text("secret-output-line\n")
    sid = await kernel.open_session("agent-a")
    out = await governed_bash(
        kernel, sid, "cat notes.txt; echo err-line >&2", cwd=str(work), timeout_s=10
    )
    assert out.exit_code == 0 and not out.timed_out and not out.failed
    assert out.stdout == "secret-output-line\n" and out.stderr == "err-line\n"
    assert (out.risk, out.rating) == ("L1", "read_only_command")
    assert "exit code 0" in out.text() and "secret-output-line" in out.text()
    row = ActionRepository(db).get(out.action_id)
    assert row is not None and row.kind == "bash" and row.status == "executed"
    assert row.risk_level == RiskLevel.L1 and row.effect_class == "reversible_local"
    assert row.outcome is not None and row.outcome["exitCode"] == 0
    assert row.outcome["stdoutBytes"] == 19 and row.outcome["stderrBytes"] == 9
    types = [e.type for e in kernel.sessions.events(sid)]
    assert types[-2:] == [EventType.ACTION_REQUESTED, EventType.ACTION_EXECUTED]
    raw = _raw_rows(db, sid)
    assert "secret-output-line" not in raw and "err-line" not in raw
    assert "cat notes.txt" not in raw and "notes.txt" not in raw
    assert kernel.session(sid).steps == 1  # type: ignore[union-attr]
    assert kernel.session_state(sid) == SessionState.OBSERVING


async def test_l3_waits_for_the_person_then_runs(kernel: Kernel, db: Database, work: Path) -> None:
    Settings.update(db, confirmation_timeout_seconds=30)
    (work / "build").mkdir()
    sid = await kernel.open_session("agent-a")
    out, listed = await asyncio.gather(
        governed_bash(kernel, sid, "rm -rf build && touch removed", cwd=str(work), timeout_s=10),
        _person(kernel, db, "approve"),
    )
    assert "run `rm -rf build && touch removed`" in listed and "L3" in listed
    assert "recursive_delete" in listed
    assert out.exit_code == 0 and (out.risk, out.rating) == ("L3", "recursive_delete")
    assert not (work / "build").exists() and (work / "removed").exists()
    row = ActionRepository(db).get(out.action_id)
    assert row is not None and row.status == "executed" and row.approval_id is not None
    types = [e.type for e in kernel.sessions.events(sid)]
    assert types[-4:] == [
        EventType.ACTION_REQUESTED,
        EventType.APPROVAL_REQUESTED,
        EventType.APPROVAL_RESOLVED,
        EventType.ACTION_EXECUTED,
    ]


async def test_denied_confirmation_runs_nothing(kernel: Kernel, db: Database, work: Path) -> None:
    Settings.update(db, confirmation_timeout_seconds=30)
    sid = await kernel.open_session("agent-a")
    with pytest.raises(DeskpilotError) as e:
        await asyncio.gather(
            governed_bash(kernel, sid, "touch marker; rm -rf x", cwd=str(work), timeout_s=10),
            _person(kernel, db, "deny"),
        )
    assert e.value.code == ErrorCode.APPROVAL_DENIED
    assert e.value.details["reason"] == "confirmation_denied"
    assert not (work / "marker").exists()
    (row,) = ActionRepository(db).list(sid)
    assert row.status == "blocked" and row.error_code == "approval_denied"
    assert kernel.sessions.events(sid)[-1].type == EventType.ACTION_BLOCKED
    assert kernel.session_state(sid) == SessionState.OBSERVING


async def test_forbidden_by_contract(kernel: Kernel, db: Database, work: Path) -> None:
    sid = await kernel.open_session("agent-a", TaskContract(forbidden_actions=["bash"]))
    with pytest.raises(DeskpilotError) as e:
        await governed_bash(kernel, sid, "touch marker", cwd=str(work), timeout_s=10)
    assert e.value.code == ErrorCode.ACTION_BLOCKED
    assert e.value.details["reason"] == "forbidden_action"
    assert not (work / "marker").exists()
    (row,) = ActionRepository(db).list(sid)
    assert (row.kind, row.status, row.reason) == ("bash", "blocked", "forbidden_action")
    assert kernel.sessions.events(sid)[-1].type == EventType.ACTION_BLOCKED
    assert kernel.session(sid).steps == 0  # type: ignore[union-attr]


async def test_a_timeout_kills_the_process_group(kernel: Kernel, db: Database, work: Path) -> None:
    sid = await kernel.open_session("agent-a")
    t0 = time.monotonic()
    out = await governed_bash(
        kernel,
        sid,
        "sleep 30 & echo $! > child.pid; echo started; wait",
        cwd=str(work),
        timeout_s=0.5,
    )
    assert out.timed_out and out.failed and out.exit_code is not None and out.exit_code < 0
    assert out.stdout == "started\n" and "timed out" in out.text()
    assert time.monotonic() - t0 < 5
    await asyncio.sleep(0.1)
    assert not _alive(int((work / "child.pid").read_text()))  # the child sleep too
    row = ActionRepository(db).get(out.action_id)
    assert row is not None and row.outcome is not None and row.outcome["timedOut"] is True


async def test_a_shell_that_ignores_sigterm_is_killed_after_the_grace(work: Path) -> None:
    t0 = time.monotonic()
    report, _ = await run_command(
        ShellRequest(
            "trap '' TERM; sleep 30 & echo $! > child.pid; wait; touch late", str(work), 0.3
        )
    )
    assert report.timed_out and report.exit_code == -9
    assert 1.0 <= time.monotonic() - t0 < 5  # the grace, then SIGKILL
    await asyncio.sleep(0.1)
    assert not _alive(int((work / "child.pid").read_text()))
    assert not (work / "late").exists()


async def test_what_a_finished_command_left_running_is_ended(work: Path) -> None:
    t0 = time.monotonic()
    report, output = await run_command(
        ShellRequest("sleep 30 & echo $! > child.pid; echo done", str(work), 10)
    )
    assert report.exit_code == 0 and not report.timed_out and output.stdout == "done\n"
    assert time.monotonic() - t0 < 3  # the leftover held the pipe; it was killed
    await asyncio.sleep(0.1)
    assert not _alive(int((work / "child.pid").read_text()))


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


async def test_a_pause_ends_a_running_command(kernel: Kernel, db: Database, work: Path) -> None:
    sid = await kernel.open_session("agent-a")

    async def pause_soon() -> None:
        while not (work / "child.pid").exists():  # noqa: ASYNC110 - the real command's file
            await asyncio.sleep(0.02)
        await kernel.pause(sid)

    with pytest.raises(DeskpilotError) as e:
        await asyncio.wait_for(
            asyncio.gather(
                governed_bash(
                    kernel,
                    sid,
                    "sleep 30 & echo $! > child.pid; wait; touch finished",
                    cwd=str(work),
                    timeout_s=60,
                ),
                pause_soon(),
            ),
            10,
        )
    assert e.value.code == ErrorCode.SESSION_NOT_EXECUTABLE
    child = int((work / "child.pid").read_text())
    # SIGKILL went to the group when the pause cancelled the command; the child ends when
    # it is next scheduled (on a loaded 2-core machine it still ran 0.1 s later: a CI run at
    # load 6–7, tests/FLAKES.md), and never runs another instruction of its own meanwhile
    deadline = time.monotonic() + 5
    while _alive(child):
        assert time.monotonic() < deadline, "the paused command's child still runs after 5 s"
        await asyncio.sleep(0.02)
    assert not (work / "finished").exists()
    (row,) = ActionRepository(db).list(sid)
    assert row.status == "executed" and row.outcome is not None
    assert row.outcome["interrupted"] == "paused"
    assert kernel.session_state(sid) == SessionState.PAUSED


async def test_output_is_bounded_and_says_so(work: Path) -> None:
    size = KEEP_BYTES * 2
    report, output = await run_command(
        ShellRequest(f"head -c {size} /dev/zero | tr '\\0' a; printf '\\377' >&2", str(work), 10)
    )
    assert report.exit_code == 0 and report.stdout_bytes == size
    assert len(output.stdout) == KEEP_BYTES and output.stdout_truncated
    assert output.stderr == "\ufffd" and not output.stderr_truncated


async def test_invalid_request_writes_nothing(kernel: Kernel, db: Database, work: Path) -> None:
    sid = await kernel.open_session("agent-a")
    with pytest.raises(DeskpilotError) as e:
        await governed_bash(kernel, sid, "ls", cwd=str(work / "missing"), timeout_s=10)
    assert e.value.code == ErrorCode.INVALID_REQUEST
    assert ActionRepository(db).list(sid) == []
