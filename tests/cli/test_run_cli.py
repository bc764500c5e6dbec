"""``deskpilot run`` and ``deskpilot verification``, as a person runs them: the real executable
in a subprocess, on the private virtual desktop, against real apps; the decision model is the
scripted OpenAI-compatible HTTP server of tests/operator (a real server, no mocks).

Each test gets its own data dir and config home, so no provider configuration or database of
another test (or of the developer) is found.
"""

from __future__ import annotations

import json
import os
import pty
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from deskpilot.cli.main import app as cli_app
from deskpilot.desktop.apps import App, launch_accessible

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "operator"))
from scripted_model import Calculator, ScriptedModel, provider_env

DESKPILOT = str(Path(sys.executable).with_name("deskpilot"))
RUN_TIMEOUT_S = 240
#: the calculator's display (the editable text field) shows the product
DISPLAY_SHOWS_42 = {
    "kind": "accessibility",
    "selector": {"role": "textField", "notStates": ["readonly"]},
    "assertion": "value_equals",
    "expected": "42",
}


@pytest.fixture
def cli_env(tmp_path: Path, desktop: Any) -> dict[str, str]:
    """The desktop's environment with a fresh data dir and config home and no provider."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DESKPILOT_PROVIDER_")}
    env.pop("DESKPILOT_API_KEY", None)
    env["DESKPILOT_DATA_DIR"] = str(tmp_path / "data")
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    env["DESKPILOT_PROVIDER_KEY_STORAGE"] = "file"
    env["DESKPILOT_HOST_LOCAL_TRUST"] = "1"
    return env


def _start(argv: list[str]) -> App:
    """An app registered with AT-SPI (desktop/apps.py: one relaunch)."""
    return launch_accessible(argv)


@pytest.fixture
def calculator(desktop: Any) -> Iterator[App]:
    if shutil.which("gnome-calculator") is None:
        pytest.skip("gnome-calculator is not installed")
    started = _start(["gnome-calculator"])
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def zenity_entry(desktop: Any) -> Iterator[App]:
    path = shutil.which("zenity")
    if path is None:
        pytest.skip("zenity is not installed")
    started = _start([path, "--entry", "--title=Name", "--text=Your name"])
    try:
        yield started
    finally:
        started.stop()


def deskpilot(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DESKPILOT, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )


def jsonl(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def with_model(env: dict[str, str], model: ScriptedModel) -> dict[str, str]:
    return {**env, **provider_env(model)}


def criteria_file(tmp_path: Path) -> Path:
    path = tmp_path / "criteria.json"
    path.write_text(json.dumps({"success_criteria": [DISPLAY_SHOWS_42]}))
    return path


class Terminal:
    """``deskpilot run`` on a pseudo-terminal, as a person sees it: the rich view and its
    prompts, answered by writing lines; Ctrl-C is the SIGINT a terminal sends."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        master, slave = pty.openpty()
        self.master = master
        self.proc = subprocess.Popen(
            [DESKPILOT, *args], env=env, stdin=slave, stdout=slave, stderr=slave
        )
        os.close(slave)
        self._chunks: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 4096)
            except OSError:
                return
            if not data:
                return
            self._chunks.append(data.decode(errors="replace"))

    @property
    def screen(self) -> str:
        return "".join(self._chunks)

    def expect(self, text: str, count: int = 1, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while self.screen.count(text) < count:
            assert time.monotonic() < deadline, f"never saw {text!r}:\n{self.screen[-3000:]}"
            assert self.proc.poll() is None, f"exited {self.proc.returncode}:\n{self.screen}"
            time.sleep(0.05)

    def ctrl_c(self) -> None:
        self.proc.send_signal(signal.SIGINT)

    def answer(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\n")

    def wait(self) -> int:
        code = self.proc.wait(timeout=RUN_TIMEOUT_S)
        time.sleep(0.2)  # the last output
        os.close(self.master)
        return code


@pytest.mark.desktop
def test_run_without_a_provider_exits_4_and_names_the_fix(
    cli_env: dict[str, str], zenity_entry: App
) -> None:
    done = deskpilot(["run", "type my name", "--app", str(zenity_entry.pid)], cli_env)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "decision_model_error" in done.stderr, done.stderr
    assert "deskpilot provider configure" in done.stderr, done.stderr


@pytest.mark.desktop
def test_run_json_without_a_provider_prints_an_error_line(
    cli_env: dict[str, str], zenity_entry: App
) -> None:
    done = deskpilot(["run", "type my name", "--app", str(zenity_entry.pid), "--json"], cli_env)
    assert done.returncode == 4, done.stdout + done.stderr
    (line,) = jsonl(done.stdout)
    assert line["type"] == "error" and line["code"] == "decision_model_error"
    assert "deskpilot provider configure" in line["message"]
    assert line["details"] == {"cause": "configuration_invalid"}, line  # what was wrong


@pytest.mark.desktop
def test_run_computes_on_the_calculator_and_the_verdict_persists(
    cli_env: dict[str, str], calculator: App, tmp_path: Path
) -> None:
    criteria = criteria_file(tmp_path)
    with ScriptedModel(Calculator("7*6")) as model:
        args = ["run", "compute 7*6", "--app", str(calculator.pid), "--json"]
        done = deskpilot(
            [*args, "--criteria", str(criteria), "--timeout", "180"],
            with_model(cli_env, model),
        )
    assert not model.errors, model.errors
    assert done.returncode == 0, done.stdout + done.stderr
    lines = jsonl(done.stdout)
    assert lines[0]["type"] == "started"
    events = [line for line in lines if line["type"] == "event"]
    executed = [e for e in events if e["event"] == "action_executed"]
    assert executed and all(e["payload"]["kind"] == "click" for e in executed), events
    verdicts = [e for e in events if e["event"] == "verification_completed"]
    assert verdicts and verdicts[-1]["payload"]["passed"] is True, verdicts
    assert events[-1]["event"] == "session_completed", events[-1]
    result = lines[-1]
    assert result["type"] == "result" and result["exitCode"] == 0
    assert result["state"] == "completed"
    vid = verdicts[-1]["payload"]["verificationId"]
    assert vid in result["verificationIds"]

    shown = deskpilot(["verification", "show", vid, "--json"], cli_env)  # a new process
    assert shown.returncode == 0, shown.stderr
    row = json.loads(shown.stdout)
    assert row["id"] == vid and row["passed"] is True
    assert row["spec"]["expected"] == "42"
    assert row["sessionId"] == result["taskId"]


@pytest.mark.desktop
def test_ctrl_c_pauses_asks_and_stops_with_130(
    cli_env: dict[str, str], calculator: App, tmp_path: Path
) -> None:
    criteria = criteria_file(tmp_path)
    # a slow model: the task is mid-flight when the person presses Ctrl-C
    with ScriptedModel(Calculator("7*6"), delay=1.5) as model:
        args = ["run", "compute 7*6", "--app", str(calculator.pid), "--criteria", str(criteria)]
        term = Terminal(args, with_model(cli_env, model))
        term.expect("Ctrl-C pauses")
        term.ctrl_c()
        term.expect("[r]esume, [t]ake over, or [s]top?")
        term.answer("r")
        term.expect("task resumed")
        term.ctrl_c()
        term.expect("[r]esume, [t]ake over, or [s]top?", count=2)
        term.answer("t")
        term.expect("You have the desktop")
        term.answer("d")
        term.expect("Hand the desktop back")
        term.answer("s")
        code = term.wait()
    assert code == 130, term.screen
    assert "task canceled: user_stop" in term.screen
    assert "stopped from deskpilot run" in term.screen


@pytest.mark.desktop
def test_ctrl_c_under_json_stops_the_task(
    cli_env: dict[str, str], calculator: App, tmp_path: Path
) -> None:
    criteria = criteria_file(tmp_path)
    with ScriptedModel(Calculator("7*6"), delay=3.0) as model:
        args = ["run", "compute 7*6", "--app", str(calculator.pid), "--json"]
        proc = subprocess.Popen(
            [DESKPILOT, *args, "--criteria", str(criteria)],
            env=with_model(cli_env, model),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())
        assert first["type"] == "started", first
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 130, out + err
    lines = jsonl(out)
    ends = [x for x in lines if x.get("event") == "session_canceled"]
    assert ends and ends[-1]["payload"]["reason"] == "user_stop", lines
    assert lines[-1]["type"] == "result" and lines[-1]["state"] == "canceled"
    assert lines[-1]["endMessage"] == "stopped from deskpilot run"


@pytest.mark.desktop
def test_timeout_stops_the_task_with_5(
    cli_env: dict[str, str], calculator: App, tmp_path: Path
) -> None:
    criteria = criteria_file(tmp_path)
    with ScriptedModel(Calculator("7*6"), delay=5.0) as model:
        args = ["run", "compute 7*6", "--app", str(calculator.pid), "--json", "--timeout", "1"]
        done = deskpilot([*args, "--criteria", str(criteria)], with_model(cli_env, model))
    assert done.returncode == 5, done.stdout + done.stderr
    result = jsonl(done.stdout)[-1]
    assert result["state"] == "canceled" and result["exitCode"] == 5


def test_verification_show_of_an_unknown_id_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DESKPILOT_DATA_DIR", str(tmp_path / "data"))
    result = CliRunner().invoke(cli_app, ["verification", "show", "vf_nope"])
    assert result.exit_code == 1
    assert "no verification 'vf_nope'" in result.output


def test_run_refuses_both_app_and_window(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli_app, ["run", "x", "--app", "a", "--window-id", "0x1"])
    assert result.exit_code == 2
    assert "exactly one of --app or --window-id" in result.output


def test_run_refuses_a_criteria_file_without_a_list(tmp_path: Path) -> None:
    criteria = tmp_path / "c.json"
    criteria.write_text('{"nothing": 1}')
    result = CliRunner().invoke(cli_app, ["run", "x", "--app", "a", "--criteria", str(criteria)])
    assert result.exit_code == 2
    assert "non-empty JSON list" in result.output
