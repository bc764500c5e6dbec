"""``deskpilot eval``'s usage errors (exit 2 with the reason) and the ``operator`` agent: the
delegated operator deciding through the scripted OpenAI-compatible model, on a fresh
private desktop, scored by the eval's own check."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "operator"))
from scripted_model import Calculator, ScriptedModel, provider_env

from deskpilot.eval.capacity import DESKTOPS_PER_CORE
from deskpilot.eval.task_env import task_environment

ROOT = Path(__file__).resolve().parents[2]
STARTER = ROOT / "suites" / "starter.json"
DESKPILOT = str(Path(sys.executable).with_name("deskpilot"))


def eval_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``deskpilot eval`` with the thread engine unless the test names one (these tests are
    not about Ray: tests/eval/test_eval_ray.py runs the default engine)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("DESKPILOT_PROVIDER_")}
    base.pop("DESKPILOT_API_KEY", None)  # no model of the developer's reaches these runs
    base["DESKPILOT_HOST_LOCAL_TRUST"] = "1"
    named = {"--engine", "--ray", "--host-command"} & set(args)  # (threads with an ssh host)
    engine = [] if named else ["--engine", "threads"]
    return subprocess.run(
        [DESKPILOT, "eval", *engine, *args],
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def test_more_desktops_than_the_machine_holds_is_refused(tmp_path: Path) -> None:
    too_many = (os.cpu_count() or 1) * DESKTOPS_PER_CORE + 1
    proc = eval_cli(
        str(STARTER), "--desktops", str(too_many), "--agent", "mcp:true", "--out", str(tmp_path)
    )
    assert proc.returncode == 2
    assert "error (capacity)" in proc.stderr and "core(s)" in proc.stderr
    assert not (tmp_path / "results.json").exists()  # refused before anything ran


def test_an_invalid_suite_or_agent_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": "deskpilot.eval.suite/1", "name": "b", "tasks": []}))
    proc = eval_cli(str(bad), "--agent", "mcp:true")
    assert proc.returncode == 2 and "tasks: List should have at least 1 item" in proc.stderr
    proc = eval_cli(str(STARTER), "--agent", "claude")
    assert proc.returncode == 2 and "--agent is operator, mcp:COMMAND or none" in proc.stderr
    proc = eval_cli(str(STARTER), "--agent", "mcp:true", "--tasks", "nope")
    assert proc.returncode == 2 and "no task 'nope'" in proc.stderr
    proc = eval_cli(str(STARTER), "--agent", "mcp:true", "--resume")
    assert proc.returncode == 2 and "--resume needs the --out" in proc.stderr


def test_the_operator_without_a_model_is_refused(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "DESKPILOT_DATA_DIR": str(tmp_path)}
    proc = eval_cli(str(STARTER), "--agent", "operator", "--out", str(tmp_path / "o"), env=env)
    assert proc.returncode == 4 and "no decision model for the operator" in proc.stderr


@pytest.mark.desktop
@pytest.mark.timeout(240)
def test_the_operator_solves_a_task_with_the_configured_model(tmp_path: Path) -> None:
    with ScriptedModel(Calculator("17+25")) as model:
        env = {
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "DESKPILOT_PROVIDER_KEY_STORAGE": "file",
            **provider_env(model),
        }
        out = tmp_path / "out"
        proc = eval_cli(
            str(STARTER),
            "--tasks",
            "calculator-add",
            "--agent",
            "operator",
            "--out",
            str(out),
            "--json",
            env=env,
        )
        calls = model.calls
    data = json.loads((out / "results.json").read_text())
    (task,) = data["tasks"]
    assert proc.returncode == 0, (proc.stderr[-2000:], task)
    assert data["agent"] == "operator"
    assert task["outcome"] == "passed" and task["agent"]["state"] == "completed"
    assert task["verification"][0]["passed"] is True
    assert task["steps"] >= 4  # 1 7 + 2 5 = at least: the operator's own count
    assert task["modelCalls"] >= 1 and task["modelCalls"] <= calls
    # the model's key reached the operator, never the results
    assert "test" not in json.dumps(data.get("provider"))
    assert (Path(task["trajectory"]) / "deskpilot.sqlite3").is_file()


@pytest.mark.desktop
@pytest.mark.timeout(240)
def test_repeat_runs_each_task_on_its_own_desktop_and_shows_a_table(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = eval_cli(
        str(STARTER),
        "--tasks",
        "zenity-entry-name",
        "--repeat",
        "2",
        "--agent",
        "none",
        "--out",
        str(out),
    )
    assert proc.returncode == 1  # the baseline fails
    data = json.loads((out / "results.json").read_text())
    runs = sorted((t["repeat"], Path(t["trajectory"]).parent.name) for t in data["tasks"])
    assert runs == [(0, "zenity-entry-name"), (1, "zenity-entry-name-r1")]
    displays = [t["desktop"]["display"] for t in data["tasks"]]
    assert all(displays) and all("teardownS" in t["desktop"] for t in data["tasks"])
    assert "zenity-entry-name#1" in proc.stdout and "failed" in proc.stdout  # the table
    assert "deskpilot eval" in proc.stdout
    assert f"results: {out / 'results.json'}" in proc.stderr.replace("\n", "")


def test_a_host_command_is_refused_where_the_task_cannot_follow_its_desktop(
    tmp_path: Path,
) -> None:
    """Each task's desktop is on the remote machine, driven over ssh by the thread engine:
    Ray (which places desktops on its own nodes) is refused (exit 2) before anything runs;
    the default engine with --host-command is the thread engine (the ssh then fails: no such
    machine). (The operator follows the desktop there: tests/eval/test_eval_ssh.py.)"""
    ssh = ("--host-command", "ssh user@box.invalid deskpilot-host")
    out = ("--out", str(tmp_path / "out"))
    for ray in (("--engine", "ray"), ("--ray", "127.0.0.1:1")):
        proc = eval_cli(str(STARTER), *ssh, "--agent", "mcp:true", *ray, *out)
        said = " ".join(proc.stderr.split())  # the console wraps long lines
        assert proc.returncode == 2 and "cannot be used with --engine ray" in said, said
    assert not (tmp_path / "out").exists()  # refused before anything ran
    proc = eval_cli(
        str(STARTER), *ssh, "--agent", "mcp:true", "--tasks", "zenity-entry-name", *out, "--json"
    )
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert proc.returncode == 1 and data["engine"] == {"kind": "threads"}
    (task,) = data["tasks"]
    assert task["outcome"] == "error" and task["error"].startswith("remote: "), task


def test_the_operators_key_goes_to_a_ray_cluster_only_when_asked(tmp_path: Path) -> None:
    """--ray ADDRESS ships the worker config (and so the model's key) to other machines: the
    operator agent there needs --send-provider-key; refused (exit 2) before Ray is joined."""
    proc = eval_cli(
        str(STARTER), "--ray", "127.0.0.1:1", "--agent", "operator", "--out", str(tmp_path)
    )
    assert proc.returncode == 2, proc.stderr
    assert "error (usage)" in proc.stderr and "--send-provider-key" in proc.stderr
    proc = eval_cli(
        str(STARTER),
        "--ray",
        "127.0.0.1:1",
        "--agent",
        "operator",
        "--send-provider-key",
        "--out",
        str(tmp_path),
    )
    assert "--send-provider-key" not in proc.stderr  # past the check: no model here (exit 4)
    assert proc.returncode == 4, proc.stderr
    assert not (tmp_path / "results.json").exists()


def test_empty_tasks_are_refused(tmp_path: Path) -> None:
    for empty in ("", ",", " , "):
        proc = eval_cli(str(STARTER), "--tasks", empty, "--out", str(tmp_path / "o"))
        said = " ".join(proc.stderr.split())
        assert proc.returncode == 2 and "--tasks names no task" in said, said
    assert not (tmp_path / "o").exists()


@pytest.mark.desktop
@pytest.mark.timeout(240)
def test_an_earlier_run_is_never_overwritten_and_resumes_only_as_itself(tmp_path: Path) -> None:
    """``--out`` of an earlier run needs ``--resume`` (nothing is overwritten); a resume by
    another agent is refused (one results file scores one agent); a resume of some tasks
    keeps the records of the others."""
    out = tmp_path / "out"
    two = ("--tasks", "zenity-entry-name,zenity-entry-replace", "--agent", "none")
    first = eval_cli(str(STARTER), *two, "--out", str(out), "--json")
    assert first.returncode == 1, first.stderr[-2000:]  # the baseline fails both
    before = (out / "results.json").read_text()
    again = eval_cli(str(STARTER), *two, "--out", str(out), "--json")
    said = " ".join(again.stderr.split())
    assert again.returncode == 2 and "holds the results of an earlier run" in said, said
    assert (out / "results.json").read_text() == before
    other = eval_cli(
        str(STARTER), "--tasks", "zenity-entry-name", "--agent", "mcp:true", "--resume",
        "--out", str(out), "--json",
    )  # fmt: skip
    said = " ".join(other.stderr.split())
    assert other.returncode == 2 and "written by the agent 'none'" in said, said
    some = eval_cli(
        str(STARTER), "--tasks", "zenity-entry-name", "--agent", "none", "--resume",
        "--out", str(out), "--json",
    )  # fmt: skip
    assert some.returncode == 1, some.stderr[-2000:]
    data = json.loads((out / "results.json").read_text())
    assert sorted(t["id"] for t in data["tasks"]) == ["zenity-entry-name", "zenity-entry-replace"]


@pytest.mark.desktop
@pytest.mark.timeout(240)
def test_what_an_agent_leaves_running_is_ended_with_it(tmp_path: Path) -> None:
    """A child the agent started in a session of its own (which ending the agent's process
    group does not reach) is ended when the agent's run is over."""
    pid_file = tmp_path / "child.pid"
    agent = (
        "import subprocess; "
        "c = subprocess.Popen(['sleep', '300'], start_new_session=True); "
        f"open({str(pid_file)!r}, 'w').write(str(c.pid))"
    )
    proc = eval_cli(
        str(STARTER), "--tasks", "zenity-entry-name", "--out", str(tmp_path / "out"), "--json",
        "--agent", "mcp:" + shlex.join([sys.executable, "-c", agent]),
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-2000:]  # it did not solve the task
    child = int(pid_file.read_text())
    assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text()


def test_a_tasks_processes_get_no_display_cookies_of_the_person(tmp_path: Path) -> None:
    """With no XAUTHORITY, Xlib would fall back to ~/.Xauthority (the person's displays'
    cookies): a task's processes get a file that does not exist (its private desktop needs
    none)."""
    person = {"DISPLAY": ":0", "XAUTHORITY": "/home/p/.Xauthority", "HOME": "/home/p"}
    env = task_environment(person, {"DISPLAY": ":5", "DBUS_SESSION_BUS_ADDRESS": "x"}, tmp_path)
    assert env["DISPLAY"] == ":5" and env["HOME"] == "/home/p"
    assert env["XAUTHORITY"] == str(tmp_path / "no-xauthority")
    assert not Path(env["XAUTHORITY"]).exists()
