"""App launches through the kernel: rating, contract, ledger, timeline, confirmation, halt,
budgets, and a truthful outcome. Real SQLite, real processes (the spawn callbacks start real
programs; the kernel under test decides whether they are called at all)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from deskpilot.kernel import Kernel
from deskpilot.kernel.governed_launch import LaunchReport
from deskpilot.kernel.policy.launch_rules import LaunchRequest, evaluate_launch, rate_launch
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import (
    EventType,
    RiskLevel,
    SessionState,
    TaskContract,
    UserPresence,
)
from deskpilot.store.db import Database
from deskpilot.store.ledger import ActionRepository
from deskpilot.store.settings import Settings, SettingsModel

SYSTEM_APPS = "/usr/share/applications"
CALC = LaunchRequest(
    app="org.gnome.Calculator",
    program="/usr/bin/gnome-calculator",
    entry=f"{SYSTEM_APPS}/org.gnome.Calculator.desktop",
    resolved_via_entry=True,
    desktop_id="org.gnome.Calculator",
)
SHELL = LaunchRequest(app="/bin/sh", program="/bin/sh", agent_args=("-c", "id > /tmp/x"))
SLEEP_ARGS = LaunchRequest(app="sleep", program="/usr/bin/sleep", agent_args=("30",))


class Spawner:
    """The runtime's side, for real: starts ``run`` (not the approved argv, which may be a
    shell) and records what it was asked to start."""

    def __init__(self, run: list[str], report: LaunchReport | None = None) -> None:
        self.run = run
        self.report = report
        self.asked: list[tuple[str, ...]] = []
        self.procs: list[subprocess.Popen[bytes]] = []

    def spawn(self, argv: tuple[str, ...]) -> int:
        self.asked.append(argv)
        proc = subprocess.Popen(self.run, start_new_session=True)
        self.procs.append(proc)
        return proc.pid

    async def watch(self, pid: int) -> LaunchReport:
        if self.report is not None:
            return self.report
        proc = next(p for p in self.procs if p.pid == pid)
        while proc.poll() is None:  # noqa: ASYNC110 - a real child we poll
            await asyncio.sleep(0.02)
        return LaunchReport(exit_code=proc.returncode)

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()


@pytest.fixture
def spawner() -> Iterator[Spawner]:
    s = Spawner(["sleep", "30"], LaunchReport(window_id="0x4400001"))
    yield s
    s.close()


def events(kernel: Kernel, sid: str) -> list[EventType]:
    return [e.type for e in kernel.sessions.events(sid)]


async def approve_when_asked(kernel: Kernel, approve: bool = True) -> str:
    while not kernel.confirmations.pending():  # noqa: ASYNC110 - another writer's row
        await asyncio.sleep(0.02)
    row = kernel.confirmations.pending()[0]
    kernel.confirmations.resolve(row.id, approve, "dashboard")
    return row.summary


# ---------------------------------------------------------------------- through the kernel


async def test_desktop_app_launch_is_l2_recorded_and_counted(
    kernel: Kernel, db: Database, spawner: Spawner
) -> None:
    sid = await kernel.open_session("agent-a")
    out = await kernel.launch(sid, CALC, spawner.spawn, spawner.watch)
    assert spawner.asked == [("/usr/bin/gnome-calculator",)]
    assert out.decision.risk == RiskLevel.L2 and out.decision.reason == "within_task_scope"
    assert out.decision.details["rating"] == "desktop_entry"
    row = ActionRepository(db).get(out.action_id)
    assert row is not None and row.kind == "open_app" and row.status == "executed"
    assert row.risk_level == RiskLevel.L2 and row.effect_class == "external_write"
    assert row.outcome == {"method": "spawn", "pid": out.pid, "windowId": "0x4400001"}
    assert events(kernel, sid)[-2:] == [EventType.ACTION_REQUESTED, EventType.ACTION_EXECUTED]
    requested = kernel.sessions.events(sid)[-2].payload
    assert requested["rating"] == "desktop_entry" and requested["program"] == "gnome-calculator"
    assert kernel.session(sid).steps == 1  # type: ignore[union-attr]
    assert kernel.session_state(sid) == SessionState.OBSERVING


async def test_shell_is_l4_and_denied_without_spawning(
    kernel: Kernel, db: Database, spawner: Spawner
) -> None:
    sid = await kernel.open_session("agent-a")
    with pytest.raises(DeskpilotError) as e:
        await kernel.launch(sid, SHELL, spawner.spawn, spawner.watch)
    assert e.value.code == ErrorCode.ACTION_BLOCKED
    assert e.value.details["reason"] == "launch_restricted" and e.value.details["risk"] == "L4"
    assert e.value.details["rating"] == "shell"
    assert spawner.asked == []
    rows = ActionRepository(db).list(sid)
    assert [(r.kind, r.status, r.reason, r.risk_level) for r in rows] == [
        ("open_app", "blocked", "launch_restricted", RiskLevel.L4)
    ]
    blocked = kernel.sessions.events(sid)[-1]
    assert blocked.type == EventType.ACTION_BLOCKED and blocked.payload["rating"] == "shell"
    # the ledger keeps a keyed hash, never the command
    raw = db.query_one("SELECT * FROM actions WHERE session_id = ?", (sid,))
    assert raw is not None and "/tmp/x" not in " ".join(str(v) for v in tuple(raw))
    assert kernel.session(sid).steps == 0  # type: ignore[union-attr]


async def test_l3_waits_for_the_person_and_shows_the_exact_command(
    kernel: Kernel, db: Database, spawner: Spawner
) -> None:
    sid = await kernel.open_session("agent-a")
    out, summary = await asyncio.gather(
        kernel.launch(sid, SLEEP_ARGS, spawner.spawn, spawner.watch), approve_when_asked(kernel)
    )
    assert "start /usr/bin/sleep 30" in summary and "L3" in summary
    assert out.decision.risk == RiskLevel.L3 and out.approval_ms > 0
    assert spawner.asked == [("/usr/bin/sleep", "30")]
    row = ActionRepository(db).get(out.action_id)
    assert row is not None and row.status == "executed" and row.approval_id is not None
    assert events(kernel, sid)[-4:] == [
        EventType.ACTION_REQUESTED,
        EventType.APPROVAL_REQUESTED,
        EventType.APPROVAL_RESOLVED,
        EventType.ACTION_EXECUTED,
    ]


async def test_denied_confirmation_spawns_nothing(
    kernel: Kernel, db: Database, spawner: Spawner
) -> None:
    sid = await kernel.open_session("agent-a")
    with pytest.raises(DeskpilotError) as e:
        await asyncio.gather(
            kernel.launch(sid, SLEEP_ARGS, spawner.spawn, spawner.watch),
            approve_when_asked(kernel, approve=False),
        )
    assert e.value.code == ErrorCode.APPROVAL_DENIED
    assert e.value.details["reason"] == "confirmation_denied"
    assert spawner.asked == []
    (row,) = ActionRepository(db).list(sid)
    assert row.status == "blocked" and row.error_code == "approval_denied"
    assert kernel.sessions.events(sid)[-1].type == EventType.ACTION_BLOCKED
    assert kernel.session_state(sid) == SessionState.OBSERVING


async def test_contract_naming_the_interpreter_allows_it_with_confirmation(
    kernel: Kernel, spawner: Spawner
) -> None:
    sid = await kernel.open_session("agent-a", TaskContract(allowed_apps=["sh"]))
    out, _ = await asyncio.gather(
        kernel.launch(sid, SHELL, spawner.spawn, spawner.watch), approve_when_asked(kernel)
    )
    assert out.decision.risk == RiskLevel.L4
    assert out.decision.reason == "launch_confirmation_required"
    assert spawner.asked == [("/bin/sh", "-c", "id > /tmp/x")]


async def test_contract_fields_deny_with_reason_codes(kernel: Kernel, spawner: Spawner) -> None:
    forbid = await kernel.open_session("agent-a", TaskContract(forbidden_actions=["open_app"]))
    only_pad = await kernel.open_session("agent-a", TaskContract(allowed_apps=["mousepad"]))
    calc_ok = await kernel.open_session(
        "agent-a", TaskContract(allowed_apps=["org.gnome.Calculator"])
    )
    for sid, reason in ((forbid, "forbidden_action"), (only_pad, "app_not_allowed")):
        with pytest.raises(DeskpilotError) as e:
            await kernel.launch(sid, CALC, spawner.spawn, spawner.watch)
        assert e.value.code == ErrorCode.ACTION_BLOCKED and e.value.details["reason"] == reason
        assert kernel.sessions.events(sid)[-1].payload["reason"] == reason
    assert spawner.asked == []
    await kernel.launch(calc_ok, CALC, spawner.spawn, spawner.watch)
    assert len(spawner.asked) == 1


async def test_halt_disabled_paused_and_budgets_refuse_before_policy(
    kernel: Kernel, db: Database, spawner: Spawner
) -> None:
    one = await kernel.open_session("agent-a", TaskContract(max_steps=1))
    await kernel.launch(one, CALC, spawner.spawn, spawner.watch)
    with pytest.raises(DeskpilotError) as e:
        await kernel.launch(one, CALC, spawner.spawn, spawner.watch)
    assert e.value.code == ErrorCode.TASK_STEP_LIMIT_EXCEEDED

    paused = await kernel.open_session("agent-a")
    await kernel.pause(paused)
    with pytest.raises(DeskpilotError) as e:
        await kernel.launch(paused, CALC, spawner.spawn, spawner.watch)
    assert e.value.code == ErrorCode.SESSION_NOT_EXECUTABLE

    Settings.update(db, enabled=False)
    off = await kernel.open_session("agent-a")
    with pytest.raises(DeskpilotError) as e:
        await kernel.launch(off, CALC, spawner.spawn, spawner.watch)
    assert e.value.code == ErrorCode.COMPUTER_DISABLED
    Settings.update(db, enabled=True)

    halted = await kernel.open_session("agent-a")
    kernel.halt.engage("kill_switch")
    with pytest.raises(DeskpilotError) as e:
        await kernel.launch(halted, CALC, spawner.spawn, spawner.watch)
    assert e.value.code == ErrorCode.KILL_SWITCH_ENGAGED
    assert len(spawner.asked) == 1
    assert ActionRepository(db).list(halted) == ActionRepository(db).list(off) == []


async def test_a_process_that_exits_at_once_is_recorded_with_its_status(
    kernel: Kernel, db: Database
) -> None:
    quick = Spawner([sys.executable, "-c", "raise SystemExit(3)"])
    sid = await kernel.open_session("agent-a")
    try:
        out = await kernel.launch(sid, CALC, quick.spawn, quick.watch)
    finally:
        quick.close()
    assert out.report == LaunchReport(exit_code=3)
    row = ActionRepository(db).get(out.action_id)
    assert row is not None and row.outcome is not None
    assert row.outcome["exitCode"] == 3 and row.outcome["exitedBeforeWindow"] is True
    assert kernel.sessions.events(sid)[-1].payload["exitCode"] == 3


async def test_stop_during_the_wait_ends_it_and_records_the_start(
    kernel: Kernel, db: Database
) -> None:
    forever = Spawner(["sleep", "30"])  # no window, never exits in time
    sid = await kernel.open_session("agent-a")

    async def stop_soon() -> None:
        while not forever.asked:  # noqa: ASYNC110 - waits for the real spawn
            await asyncio.sleep(0.02)
        await kernel.stop(sid)

    try:
        with pytest.raises(DeskpilotError) as e:
            await asyncio.wait_for(
                asyncio.gather(kernel.launch(sid, CALC, forever.spawn, forever.watch), stop_soon()),
                5,
            )
    finally:
        forever.close()
    assert e.value.code == ErrorCode.SESSION_CANCELED
    (row,) = ActionRepository(db).list(sid)
    assert row.status == "executed" and row.outcome is not None
    assert row.outcome["watchEnded"] == "canceled" and row.outcome["pid"] > 0


async def test_spawn_failure_is_a_failed_action(kernel: Kernel, db: Database) -> None:
    def broken(argv: tuple[str, ...]) -> int:
        raise DeskpilotError(ErrorCode.TARGET_NOT_FOUND, "could not start")

    async def never(pid: int) -> LaunchReport:
        raise AssertionError("no watch without a process")

    sid = await kernel.open_session("agent-a")
    with pytest.raises(DeskpilotError) as e:
        await kernel.launch(sid, CALC, broken, never)
    assert e.value.code == ErrorCode.TARGET_NOT_FOUND
    (row,) = ActionRepository(db).list(sid)
    assert row.status == "failed" and row.error_code == "target_not_found"
    assert kernel.session_state(sid) == SessionState.OBSERVING


# ---------------------------------------------------------------------- the rating table


def _rate(req: LaunchRequest) -> tuple[RiskLevel, str]:
    r = rate_launch(req)
    return r.risk, r.rating


def test_ratings_of_programs_and_arguments(tmp_path: Path) -> None:
    listed = LaunchRequest(
        app="mousepad",
        program="/usr/bin/mousepad",
        entry=f"{SYSTEM_APPS}/org.xfce.mousepad.desktop",
    )
    assert _rate(listed) == (RiskLevel.L2, "listed_gui_executable")
    assert _rate(CALC) == (RiskLevel.L2, "desktop_entry")
    with_args = LaunchRequest(**{**_fields(listed), "agent_args": ("/etc/passwd",)})
    assert _rate(with_args) == (RiskLevel.L3, "agent_arguments")
    assert _rate(LaunchRequest(app="sleep", program="/usr/bin/sleep")) == (
        RiskLevel.L3,
        "unlisted_executable",
    )
    tool = tmp_path / "tool"
    tool.write_text("#!/bin/true\n")
    tool.chmod(0o755)
    assert _rate(LaunchRequest(app=str(tool), program=str(tool))) == (
        RiskLevel.L3,
        "outside_standard_bin",
    )
    for program, rating in (
        ("/usr/bin/bash", "shell"),
        ("/usr/bin/dash", "shell"),
        ("/usr/bin/perl", "interpreter"),
        ("/usr/bin/env", "command_runner"),
        ("/usr/bin/sudo", "privilege_tool"),
        ("/usr/bin/pkexec", "privilege_tool"),
    ):
        assert _rate(LaunchRequest(app=program, program=program)) == (RiskLevel.L4, rating)
    # a symlink is rated by what it points to
    link = tmp_path / "calc"
    link.symlink_to(os.path.realpath(sys.executable))
    assert _rate(LaunchRequest(app=str(link), program=str(link)))[0] == RiskLevel.L4
    xterm = LaunchRequest(app="xterm", program="/usr/bin/xterm", entry=f"{SYSTEM_APPS}/x.desktop")
    assert _rate(xterm) == (RiskLevel.L3, "terminal_emulator")
    assert _rate(LaunchRequest(**{**_fields(xterm), "agent_args": ("-e", "sh")})) == (
        RiskLevel.L4,
        "terminal_command",
    )
    chromium = LaunchRequest(
        app="chromium",
        program="/usr/bin/chromium",
        entry=f"{SYSTEM_APPS}/chromium.desktop",
        resolved_via_entry=True,
        agent_args=("--renderer-cmd-prefix=sh -c id",),
    )
    assert _rate(chromium) == (RiskLevel.L4, "argument_runs_command")
    # an argument that picks the display puts the app on another desktop (the person's own)
    for arg in ("--display=:0", "-display", "--screen", "--ozone-platform=wayland"):
        elsewhere = LaunchRequest(**{**_fields(chromium), "agent_args": (arg,)})
        assert _rate(elsewhere) == (RiskLevel.L4, "argument_picks_display"), arg


def test_desktop_entries_env_wrappers_and_user_entries(tmp_path: Path) -> None:
    wrapped = LaunchRequest(
        app="calc",
        program="/usr/bin/env",
        entry_args=("GDK_BACKEND=x11", "gnome-calculator"),
        entry=f"{SYSTEM_APPS}/calc.desktop",
        resolved_via_entry=True,
    )
    assert _rate(wrapped) == (RiskLevel.L2, "desktop_entry")
    shell_entry = LaunchRequest(**{**_fields(wrapped), "entry_args": ("A=1", "sh", "-c", "x")})
    assert _rate(shell_entry) == (RiskLevel.L4, "shell")
    user_entry = str(tmp_path / "applications" / "mine.desktop")
    plain = LaunchRequest(
        app="mine", program="/usr/bin/sleep", entry=user_entry, resolved_via_entry=True
    )
    assert _rate(plain) == (RiskLevel.L2, "desktop_entry")
    with_exec_args = LaunchRequest(**{**_fields(plain), "entry_args": ("30",)})
    assert _rate(with_exec_args) == (RiskLevel.L3, "user_entry_arguments")
    elsewhere = LaunchRequest(**{**_fields(plain), "program": str(tmp_path / "evil")})
    assert _rate(elsewhere) == (RiskLevel.L3, "outside_standard_bin")
    terminal = LaunchRequest(**{**_fields(CALC), "entry_terminal": True})
    assert _rate(terminal) == (RiskLevel.L3, "terminal_entry")


def test_decision_order_presence_threshold_and_domains() -> None:
    settings = SettingsModel()
    assert evaluate_launch(CALC, TaskContract(), settings).decision.value == "allow"
    supervised = TaskContract(user_presence=UserPresence.SUPERVISED)
    assert evaluate_launch(CALC, supervised, settings).reason == "user_presence_supervised"
    strict = SettingsModel(require_confirmation_above="L1")
    assert evaluate_launch(CALC, TaskContract(), strict).reason == "confirmation_required"
    by_settings = SettingsModel(allowed_apps=["mousepad"])
    denied = evaluate_launch(CALC, TaskContract(), by_settings)
    assert denied.reason == "app_not_allowed" and denied.details["source"] == "settings"
    web = LaunchRequest(
        app="chromium",
        program="/usr/bin/chromium",
        entry=f"{SYSTEM_APPS}/chromium.desktop",
        resolved_via_entry=True,
        agent_args=("https://evil.example.net/",),
    )
    only = TaskContract(allowed_domains=["example.com"])
    assert evaluate_launch(web, only, settings).reason == "domain_not_allowed"
    ok = LaunchRequest(**{**_fields(web), "agent_args": ("https://example.com/",)})
    assert evaluate_launch(ok, only, settings).reason == "launch_confirmation_required"
    restricted = TaskContract(forbidden_actions=["restricted"])
    assert evaluate_launch(SHELL, restricted, settings).reason == "forbidden_action"


def _fields(req: LaunchRequest) -> dict[str, object]:
    return {name: getattr(req, name) for name in req.__dataclass_fields__}
