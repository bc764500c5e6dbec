"""A suite's setup: the launch policy of ``open_app`` decides every launch, nothing runs in a
shell, and the apps run on the task's private desktop — never on the person's display, even
when ``DISPLAY`` names one (here the test session's desktop stands for the person's)."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from deskpilot import desktop as vdesk
from deskpilot.desktop.a11y import list_accessible_apps
from deskpilot.desktop.virtual import is_private_display
from deskpilot.eval.agents import AgentSpec
from deskpilot.eval.results import ERROR
from deskpilot.eval.suite import TASK_DIR, parse_suite
from deskpilot.eval.task_setup import SetupRefused, decide, run_setup
from deskpilot.eval.worker import DesktopWorker, WorkerConfig
from deskpilot.runtime.open_app import resolve_launch

needs_zenity = pytest.mark.skipif(shutil.which("zenity") is None, reason="zenity not installed")


@pytest.mark.parametrize(
    ("app", "args", "signal"),
    [
        ("sh", ["-c", "echo hi"], "shell"),
        ("python3", ["-c", "print(1)"], "interpreter"),
        ("env", ["zenity"], "command_runner"),
        ("zenity", ["--entry", "--display=:0"], "argument_picks_display"),
    ],
)
def test_the_launch_policy_refuses_what_open_app_refuses(
    app: str, args: list[str], signal: str
) -> None:
    if shutil.which(app) is None:
        pytest.skip(f"{app} not installed")
    with pytest.raises(SetupRefused) as info:
        decide(resolve_launch(app, args))
    assert "the launch policy refuses" in str(info.value) and signal in str(info.value)


@needs_zenity
def test_an_app_with_arguments_is_l3_and_runs() -> None:
    risk, rating = decide(resolve_launch("zenity", ["--info", "--text=hi"]))
    assert (risk, rating) == ("L3", "agent_arguments")


def _suite(setup: dict[str, Any]) -> Any:
    return parse_suite(
        {
            "schema": "deskpilot.eval.suite/1",
            "name": "safety",
            "tasks": [
                {
                    "id": "t",
                    "instruction": "nothing",
                    "setup": setup,
                    "success": [
                        {"kind": "file", "path": f"{TASK_DIR}/note.txt", "assertion": "exists"}
                    ],
                    "limits": {"timeS": 20},
                }
            ],
        }
    )


async def _apps(session_address: str) -> list[tuple[str, int]]:
    return await list_accessible_apps(session_address)


@pytest.mark.desktop
@needs_zenity
def test_setup_runs_on_the_private_display_only(
    desktop: vdesk.DesktopState, tmp_path: Path
) -> None:
    person = os.environ["DISPLAY"]  # the session fixture's desktop stands for the person's
    assert person == desktop.display
    suite = _suite(
        {
            "files": [{"path": "note.txt", "text": "hello"}],
            "launch": [{"app": "zenity", "args": ["--info", "--text=setup"]}],
        }
    )
    secrets = {"DESKPILOT_API_KEY": "k1", "DESKPILOT_PROVIDER_API_KEY": "k2"}
    worker = DesktopWorker(
        WorkerConfig(AgentSpec("mcp", ("true",)), tmp_path, base_env={**os.environ, **secrets})
    )
    state = vdesk.up()
    try:
        assert state.display != person
        env = worker.task_env(state, tmp_path)
        assert not set(secrets) & set(env)  # no model key reaches an MCP task
        agent_env = worker.agent_env(env)
        assert "DISPLAY" not in agent_env and "DBUS_SESSION_BUS_ADDRESS" not in agent_env
        assert (
            env["DISPLAY"] == state.display
            and env["DBUS_SESSION_BUS_ADDRESS"] != os.environ["DBUS_SESSION_BUS_ADDRESS"]
        )
        work = tmp_path / "work"
        work.mkdir()
        setup = run_setup(
            suite.tasks[0].resolved_setup(str(work)), env, work, width=800, height=600
        )
        try:
            (launched,) = setup.launched
            assert launched.display == state.display  # read back from /proc/PID/environ
            assert (work / "note.txt").read_text() == "hello"
            private = asyncio.run(_apps(state.dbus_address))
            persons = asyncio.run(_apps(desktop.dbus_address))
            assert launched.pid in {pid for _, pid in private}
            assert launched.pid not in {pid for _, pid in persons}
        finally:
            setup.stop()
        assert launched.proc.poll() is not None  # ended with its task
    finally:
        vdesk.down(state)


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    pairs = (item.partition(b"=") for item in raw.split(b"\0") if item)
    return {k.decode(): v.decode("utf-8", "replace") for k, _, v in pairs}


@pytest.mark.desktop
@needs_zenity
def test_the_operators_model_key_reaches_its_agent_not_the_apps_under_test(
    desktop: vdesk.DesktopState, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The setup's apps start before the agent: their /proc/PID/environ, read while the
    agent runs, holds no DESKPILOT_PROVIDER_* while the agent's environment does."""
    from deskpilot.eval import worker as worker_module

    launched: list[Any] = []
    seen: dict[str, dict[str, str]] = {}

    def recording_setup(*args: Any, **kwargs: Any) -> Any:
        result = run_setup(*args, **kwargs)
        launched.extend(result.launched)
        return result

    def agent_reads_the_apps(spec: Any, job: Any, data: Path) -> Any:
        seen["agent"] = dict(job.env)
        seen["app"] = _environ(launched[0].pid)
        raise worker_module.AgentError("stop here: the environments are read")

    monkeypatch.setattr(worker_module, "run_setup", recording_setup)
    monkeypatch.setattr(worker_module, "run_agent", agent_reads_the_apps)
    key = {"DESKPILOT_PROVIDER_API_KEY": "k-secret", "DESKPILOT_PROVIDER_MODEL": "m"}
    suite = _suite({"launch": [{"app": "zenity", "args": ["--info", "--text=setup"]}]})
    worker = DesktopWorker(
        WorkerConfig(AgentSpec("operator"), tmp_path, base_env=dict(os.environ), provider_env=key)
    )
    record = worker.run(suite.tasks[0])
    assert record.error is not None and "stop here" in record.error
    assert seen["agent"]["DESKPILOT_PROVIDER_API_KEY"] == "k-secret"
    assert seen["app"]["DISPLAY"] == record.desktop["display"]  # it is the setup's app
    assert not [k for k in seen["app"] if k.startswith("DESKPILOT_PROVIDER_")]
    assert "k-secret" not in "\0".join(seen["app"].values())


@pytest.mark.desktop
def test_a_refused_setup_is_an_error_and_its_desktop_is_gone(
    desktop: vdesk.DesktopState, tmp_path: Path
) -> None:
    suite = _suite({"launch": [{"app": "sh", "args": ["-c", "touch note.txt"]}]})
    worker = DesktopWorker(
        WorkerConfig(AgentSpec("mcp", ("true",)), tmp_path, base_env=dict(os.environ))
    )
    record = worker.run(suite.tasks[0])
    assert record.outcome == ERROR
    assert record.error is not None and "the launch policy refuses sh" in record.error
    assert not (tmp_path / "tasks" / "t" / "work" / "note.txt").exists()  # nothing ran
    display = record.desktop["display"]
    assert display != desktop.display and not is_private_display(display)
    assert (tmp_path / "tasks" / "t").stat().st_mode & 0o077 == 0
