"""``deskpilot eval``'s Ray engine on a real, local multi-process Ray: the default engine (no
``--engine``: an embedded Ray) with two desktop actors runs tasks of the starter suite with the
reference solver; an actor killed (SIGKILL) mid-task loses only that attempt — its processes
are swept, the task runs once more on another actor and its record says so; ``--ray ADDRESS``
joins a ``ray start --head`` cluster on loopback started here."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray")

from deskpilot.eval import procfs
from deskpilot.eval.ray_engine import ACTOR_TOKEN, actor_base_env, actor_worker_config

pytestmark = [pytest.mark.desktop]

ROOT = Path(__file__).resolve().parents[2]
STARTER = ROOT / "suites" / "starter.json"
SOLVER = Path(__file__).resolve().parent / "reference_solver.py"
BIN = Path(sys.executable).parent
TASKS = "zenity-entry-name,zenity-scale,calculator-add"


def solver_agent() -> str:
    return "mcp:" + shlex.join([sys.executable, str(SOLVER)])


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "RAY_ADDRESS")}
    env["DESKPILOT_HOST_LOCAL_TRUST"] = "1"
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    return {**env, **(extra or {})}


def eval_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    """``deskpilot eval`` on the starter suite, as a person runs it."""
    return subprocess.run(
        [str(BIN / "deskpilot"), "eval", str(STARTER), *args],
        env=env or cli_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def results(out: Path) -> dict[str, Any]:
    data = json.loads((out / "results.json").read_text())
    assert isinstance(data, dict)
    return data


def _with_token(token: str) -> list[int]:
    mark = f"{ACTOR_TOKEN}={token}".encode()
    return [p for p in procfs.user_pids() if not procfs.is_zombie(p) and mark in procfs.environ(p)]


class ActorKiller(threading.Thread):
    """SIGKILLs the first desktop actor seen running a task: the parent of an Xvfb whose
    environment carries an actor token (a ``ray::DesktopActor`` process)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.killed: dict[str, Any] = {}

    def run(self) -> None:
        while not self.stop.is_set():
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit():
                    continue
                try:
                    if (entry / "comm").read_text().strip() != "Xvfb":
                        continue
                    ppid = int((entry / "stat").read_text().rsplit(")", 1)[-1].split()[1])
                    parent = (Path(f"/proc/{ppid}") / "cmdline").read_bytes()
                except (OSError, ValueError, IndexError):
                    continue
                token = [
                    e for e in procfs.environ(int(entry.name)) if e.startswith(ACTOR_TOKEN.encode())
                ]
                if not token or not parent.startswith(b"ray::DesktopActor"):
                    continue
                time.sleep(1.5)  # the task is under way: its setup, its agent
                os.kill(ppid, signal.SIGKILL)
                self.killed = {
                    "actor": ppid,
                    "xvfb": int(entry.name),
                    "token": token[0].split(b"=", 1)[1].decode(),
                }
                return
            time.sleep(0.2)


@pytest.fixture(scope="module")
def lost_actor_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, str, dict[str, Any]]]:
    """Tasks run on two Ray actors while one actor is killed mid-run. Over 20 s (≈ 27 s):
    an embedded Ray cluster starts (≈ 10 s on 2 cores) and each actor brings up a private
    desktop; run once for the module's tests to read."""
    out = tmp_path_factory.mktemp("eval-ray")
    killer = ActorKiller()
    killer.start()
    try:
        # no --engine: the default engine is the embedded Ray
        proc = eval_cli(
            "--desktops", "2", "--tasks", TASKS, "--agent", solver_agent(), "--out", str(out)
        )
    finally:
        killer.stop.set()
        killer.join()
    assert killer.killed, "no desktop actor was seen running a task"
    assert proc.returncode == 0, (proc.stderr[-3000:], results(out)["tasks"])
    yield out, proc.stdout + proc.stderr, killer.killed


@pytest.mark.timeout(300)
def test_tasks_run_on_two_ray_actors_and_pass(
    lost_actor_run: tuple[Path, str, dict[str, Any]],
) -> None:
    out, _shown, killed = lost_actor_run
    data = results(out)
    assert data["engine"]["kind"] == "ray" and data["engine"]["address"] == "embedded"
    assert data["engine"]["nodes"] == 1 and data["engine"]["startS"] > 0
    # Ray was started while the driver prepared: the driver waited at most its whole start
    assert 0 <= data["engine"]["waitS"] <= data["engine"]["startS"] + 0.5
    assert data["engine"]["cpus"] == 2 and data["engine"]["slots"] == 2  # sized to --desktops
    assert data["desktops"] == 2
    assert data["totals"]["tasks"] == 3 and data["totals"]["passed"] == 3
    assert sorted(t["id"] for t in data["tasks"]) == sorted(TASKS.split(","))
    pids = {t["desktop"]["rayActorPid"] for t in data["tasks"]}
    assert killed["actor"] not in pids  # no record came from the killed actor
    assert len(pids) >= 2  # the runs were spread over actors, not run in the driver
    assert os.getpid() not in pids
    for t in data["tasks"]:
        assert t["verification"] and all(v["passed"] for v in t["verification"])
        assert t["desktop"]["teardownS"] >= 0  # the actor's last teardown came back too


@pytest.mark.timeout(300)
def test_a_lost_actors_task_is_retried_once_on_another_and_reported(
    lost_actor_run: tuple[Path, str, dict[str, Any]],
) -> None:
    out, shown, killed = lost_actor_run
    data = results(out)
    retried = [t for t in data["tasks"] if t["retriedAfter"]]
    assert len(retried) == 1, [t["retriedAfter"] for t in data["tasks"]]
    (task,) = retried
    assert task["retriedAfter"].startswith("actor lost: ")
    assert task["outcome"] == "passed"
    assert task["desktop"]["rayActorPid"] != killed["actor"]
    # the lost attempt's files were moved aside, the retry started from a fresh directory
    assert (out / "tasks" / f"{task['id']}.lost").is_dir()
    assert (out / "tasks" / task["id"] / "work").is_dir()
    # the dead actor's desktop and every process it started were ended by the sweep
    assert procfs.is_zombie(killed["xvfb"])  # ended (or gone)
    assert _with_token(killed["token"]) == []
    assert "processes ended" in task["retriedAfter"]
    assert "(retried)" in shown  # the table marks it


def test_an_unknown_engine_or_a_dead_address_is_a_usage_error(tmp_path: Path) -> None:
    out = ("--out", str(tmp_path))
    proc = eval_cli("--engine", "dask", "--agent", "mcp:true", *out, timeout=60)
    assert proc.returncode == 2 and "--engine is threads or ray, not 'dask'" in proc.stderr
    proc = eval_cli("--engine", "threads", "--ray", "127.0.0.1:1", "--agent", "mcp:true", *out)
    assert proc.returncode == 2 and "not with --engine threads" in proc.stderr
    port = _free_port()  # nothing listens there
    proc = eval_cli(
        "--ray", f"127.0.0.1:{port}", "--agent", "mcp:true", "--tasks", "zenity-entry-name", *out
    )
    assert proc.returncode == 2 and f"nothing answers at 127.0.0.1:{port}" in proc.stderr
    assert not (tmp_path / "results.json").exists()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _end_cluster(temp_dir: Path) -> None:
    """End the head's processes by pid: those naming its temp dir, and their children."""
    mark = str(temp_dir).encode()
    pids: set[int] = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if mark in (entry / "cmdline").read_bytes():
                    pids.add(int(entry.name))
            except OSError:
                pass
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[-1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid in pids:
                pids.add(int(entry.name))
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 5
        while not all(procfs.is_zombie(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.2)


@pytest.mark.timeout(240)
def test_ray_address_joins_a_running_cluster(tmp_path: Path) -> None:
    temp_dir = Path(tempfile.mkdtemp(prefix="dpray-", dir="/tmp"))  # short: Ray's socket paths
    token = temp_dir / "auth_token"
    token.write_text(secrets.token_hex(32))
    env = cli_env({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)})
    port = _free_port()
    out = tmp_path / "out"
    try:
        subprocess.run(
            [
                str(BIN / "ray"),
                "start",
                "--head",
                "--node-ip-address=127.0.0.1",
                f"--port={port}",
                "--num-cpus=1",
                "--include-dashboard=false",
                "--disable-usage-stats",
                f"--temp-dir={temp_dir}",
            ],
            env=env,
            check=True,
            capture_output=True,
            timeout=90,
            stdin=subprocess.DEVNULL,
        )
        proc = eval_cli(
            "--ray",
            f"127.0.0.1:{port}",
            "--tasks",
            "zenity-entry-name",
            "--agent",
            solver_agent(),
            "--out",
            str(out),
            "--json",
            env=env,
            timeout=180,
        )
        data = results(out)
        assert proc.returncode == 0, (proc.stderr[-3000:], data["tasks"])
        assert data["engine"]["kind"] == "ray"
        assert data["engine"]["address"] == f"127.0.0.1:{port}"
        assert data["engine"]["cpus"] == 1 and data["engine"]["slots"] == 1
        (task,) = data["tasks"]
        assert task["outcome"] == "passed" and task["retriedAfter"] is None
        # the actor was one of the cluster's workers: its log is in the head's session dir
        logs = temp_dir / "session_latest" / "logs"
        assert any(str(task["desktop"]["rayActorPid"]) in p.name for p in logs.glob("worker-*"))
    finally:
        _end_cluster(temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)


def test_an_actor_gets_an_allow_listed_base_env(tmp_path: Path) -> None:
    """The worker config is pickled to the actors (other machines with --ray ADDRESS): only
    the allow-listed variables go, never a key, a token, an agent socket or the desktop."""
    from deskpilot.eval.agents import AgentSpec
    from deskpilot.eval.worker import WorkerConfig

    driver = {
        "PATH": "/usr/bin",
        "HOME": "/home/p",
        "LANG": "C.UTF-8",
        "LC_TIME": "de_DE.UTF-8",
        "DESKPILOT_HOST_LOCAL_TRUST": "1",
        "DESKPILOT_TREE_CACHE": "0",
        "DESKPILOT_API_KEY": "k1",
        "DESKPILOT_PROVIDER_API_KEY": "k2",
        "DESKPILOT_PROVIDER_BASE_URL": "http://model",
        "DESKPILOT_VISION_API_KEY": "k3",
        "DESKPILOT_EVAL_MCP_TOKEN": "t",
        "AWS_SECRET_ACCESS_KEY": "aws",
        "GITHUB_TOKEN": "gh",
        "SSH_AUTH_SOCK": "/run/agent",
        "DISPLAY": ":0",
        "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/bus",
    }
    assert actor_base_env(driver) == {
        "PATH": "/usr/bin",
        "HOME": "/home/p",
        "LANG": "C.UTF-8",
        "LC_TIME": "de_DE.UTF-8",
        "DESKPILOT_HOST_LOCAL_TRUST": "1",
        "DESKPILOT_TREE_CACHE": "0",
    }
    key = {"DESKPILOT_PROVIDER_API_KEY": "k2"}
    worker = WorkerConfig(AgentSpec("operator"), tmp_path, base_env=driver, provider_env=key)
    shipped = actor_worker_config(worker)
    assert shipped.base_env == actor_base_env(driver) and shipped.provider_env == key
    assert shipped.cancel is None and shipped.background_teardown
