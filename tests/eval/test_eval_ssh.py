"""``deskpilot eval --host-command "ssh … deskpilot-host"``: each task's desktop on the remote.

The "remote" is this machine reached through a Debian ``sshd`` the test starts on loopback
with throwaway keys (tests/sshd_kit.py); the remote command carries no display at all. Each
task's private desktop, its setup (the launch policy there) and its check (``file`` specs
read the remote's files) are on the remote side of an ssh channel per task; the reference
solver acts through a ``deskpilot serve`` here whose host is attached to that desktop over a
second channel. Checked: starter tasks (zenity, gnome-calculator) pass on two remote desktops
side by side; the remote's task directory and apps are gone afterwards; a setup the launch
policy refuses is refused on the remote; a ``file`` criterion reads the remote's file.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deskpilot.eval import procfs
from deskpilot.eval.suite import SUITE_SCHEMA, TASK_DIR
from deskpilot.hostclient.config import LOCAL_TRUST_ENV
from sshd_kit import SSHD, Sshd, start_sshd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "operator"))
from scripted_model import Calculator, ScriptedModel, provider_env

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(not SSHD.exists(), reason="openssh-server missing"),
]

ROOT = Path(__file__).resolve().parents[2]
STARTER = ROOT / "suites" / "starter.json"
SOLVER = Path(__file__).resolve().parent / "reference_solver.py"
DESKPILOT = str(Path(sys.executable).with_name("deskpilot"))


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    server.pin(server.host_key("host_a"))  # deskpilot's known_hosts (the test data dir)
    try:
        yield server
    finally:
        server.stop()


def eval_over_ssh(
    sshd: Sshd, suite: Path, out: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """``deskpilot eval`` with no desktop of its own: only the remote has desktops."""
    env = {
        **{
            k: v
            for k, v in os.environ.items()
            if k not in ("DISPLAY", "DBUS_SESSION_BUS_ADDRESS", LOCAL_TRUST_ENV)
            and not k.startswith("DESKPILOT_PROVIDER_")
        },
        **(env or {}),
    }
    command = [DESKPILOT, "eval", str(suite), "--host-command", sshd.command({}), *args]
    proc = subprocess.run(
        [*command, "--out", str(out), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
        stdin=subprocess.DEVNULL,
    )
    data = json.loads((out / "results.json").read_text())
    assert isinstance(data, dict)
    return proc, data


@pytest.mark.timeout(460)
def test_starter_tasks_run_on_remote_desktops_with_the_reference_solver(
    sshd: Sshd, tmp_path: Path
) -> None:
    solver = "mcp:" + shlex.join([sys.executable, str(SOLVER)])
    tasks = "zenity-entry-name,calculator-add"
    proc, data = eval_over_ssh(
        sshd, STARTER, tmp_path, "--tasks", tasks, "--desktops", "2", "--agent", solver
    )
    assert proc.returncode == 0, (proc.stderr[-2000:], data["tasks"])
    assert data["engine"] == {"kind": "threads"}  # the default with --host-command
    assert sorted(t["id"] for t in data["tasks"]) == sorted(tasks.split(","))
    for t in data["tasks"]:
        assert t["outcome"] == "passed" and t["error"] is None, t
        desktop = t["desktop"]
        assert desktop["remote"].startswith("ssh:") and desktop["remoteVersion"] == "0.1.0"
        remote_dir = Path(desktop["remoteTaskDir"])
        # the setup ran there, on the task's own remote desktop
        (launched,) = t["setup"]["launched"]
        assert launched["display"] == desktop["display"]
        assert procfs.is_zombie(launched["pid"])  # the app ended with the task
        assert not remote_dir.parent.exists()  # the remote's task directory was removed
        assert t["steps"] >= 1  # the solver acted through the server: the local ledger
        assert (Path(t["trajectory"]) / "deskpilot.sqlite3").is_file()
        log = (Path(t["trajectory"]).parent / "remote-task.log").read_text()
        assert "an eval task's desktop" in log, log
    (zenity,) = [t for t in data["tasks"] if t["id"] == "zenity-entry-name"]
    (verdict,) = zenity["verification"]
    # the file criterion read the remote's file (its ${TASK_DIR})
    assert verdict["passed"] is True
    assert verdict["spec"]["path"] == zenity["desktop"]["remoteTaskDir"] + "/answer.txt"
    (calc,) = [t for t in data["tasks"] if t["id"] == "calculator-add"]
    assert calc["desktop"]["checkObserveS"] > 0  # observed on the remote by its own host


def _suite(path: Path, *tasks: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"schema": SUITE_SCHEMA, "name": "ssh", "tasks": list(tasks)}))
    return path


@pytest.mark.timeout(240)
def test_the_remote_refuses_a_setup_and_checks_its_own_files(sshd: Sshd, tmp_path: Path) -> None:
    """The setup's launch policy decides on the remote (a shell is refused there); a
    ``file`` criterion reads the file the remote's setup wrote, not one here."""
    suite = _suite(
        tmp_path / "suite.json",
        {
            "id": "a-shell",
            "instruction": "nothing",
            "setup": {"launch": [{"app": "sh", "args": ["-c", "true"]}]},
            "success": [{"kind": "file", "path": f"{TASK_DIR}/x", "assertion": "exists"}],
        },
        {
            "id": "remote-file",
            "instruction": "nothing",
            "setup": {"files": [{"path": "note.txt", "text": "written on the remote\n"}]},
            "success": [
                {
                    "kind": "file",
                    "path": f"{TASK_DIR}/note.txt",
                    "assertion": "contains",
                    "text": "on the remote",
                }
            ],
        },
    )
    proc, data = eval_over_ssh(sshd, suite, tmp_path / "out", "--agent", "none")
    assert proc.returncode == 1, proc.stderr[-2000:]
    by_id = {t["id"]: t for t in data["tasks"]}
    shell = by_id["a-shell"]
    assert shell["outcome"] == "error"
    assert shell["error"].startswith("setup: the launch policy refuses"), shell["error"]
    remote = by_id["remote-file"]
    assert remote["outcome"] == "passed", remote
    read = remote["verification"][0]["evidence"]["path"]
    assert read.startswith(remote["desktop"]["remoteTaskDir"])
    # nothing of it was written here: this side's work/ holds no note
    assert not (Path(remote["trajectory"]).parent / "work" / "note.txt").exists()


@pytest.mark.timeout(300)
def test_the_operator_drives_the_remote_desktop(sshd: Sshd, tmp_path: Path) -> None:
    """``--agent operator`` over SSH: ``deskpilot run`` here, deciding with the (scripted)
    model, acts through a host attached to the task's remote desktop; the check is the
    remote's."""
    with ScriptedModel(Calculator("17+25")) as model:
        env = {
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "DESKPILOT_PROVIDER_KEY_STORAGE": "file",
            **provider_env(model),
        }
        proc, data = eval_over_ssh(
            sshd,
            STARTER,
            tmp_path / "out",
            "--tasks",
            "calculator-add",
            "--agent",
            "operator",
            env=env,
        )
    (task,) = data["tasks"]
    assert proc.returncode == 0, (proc.stderr[-2000:], task)
    assert task["outcome"] == "passed" and task["agent"]["state"] == "completed", task
    assert task["desktop"]["remote"].startswith("ssh:")
    assert task["verification"][0]["passed"] is True
    assert task["steps"] >= 4 and task["modelCalls"] >= 1
