"""``deskpilot agent`` as a person or a script runs it: the real command in a subprocess, the
scripted model as a real HTTP server, JSON lines out."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agent_policies import Steps, last_text
from agent_rig import API_KEY
from scripted_model import ScriptedModel, call, final

DESKPILOT = [sys.executable, "-m", "deskpilot.cli.main", "agent"]


def _run(
    args: list[str], env: dict[str, str], cwd: Path, stdin: str | None = None
) -> tuple[int, list[dict[str, Any]], str]:
    proc = subprocess.run(
        [*DESKPILOT, *args, "--cwd", str(cwd)],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
    )
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return proc.returncode, events, proc.stdout + proc.stderr


def test_one_goal_runs_one_task_and_streams_jsonl(
    model_env: dict[str, str], scripted_model: ScriptedModel, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("the secret word is kumquat\n")
    scripted_model.set_policy(
        Steps(
            [
                call("read", path="notes.txt"),
                lambda r: final("The word is " + last_text(r).split()[-1] + "."),
            ]
        )
    )
    code, events, out = _run(
        ["Read notes.txt and tell me the word.", "--json"], model_env, tmp_path
    )
    assert code == 0, out
    kinds = [e["event"] for e in events]
    assert kinds[0] == "session_start" and kinds[-1] == "turn_end"
    assert kinds.index("turn_start") < kinds.index("tool_call") < kinds.index("model_text")
    call_event = next(e for e in events if e["event"] == "tool_call")
    assert call_event["name"] == "read" and call_event["summary"] == "path=notes.txt"
    assert next(e for e in events if e["event"] == "model_text")["text"] == "The word is kumquat."
    end = events[-1]
    assert end["status"] == "answered" and end["toolCalls"] == 1 and end["actions"] == 0
    assert API_KEY not in out
    assert "kumquat" not in json.dumps([e for e in events if e["event"] != "model_text"])


def test_interactive_session_turns_plan_and_exit(
    model_env: dict[str, str], scripted_model: ScriptedModel, tmp_path: Path
) -> None:
    def policy(request: Any) -> dict[str, Any]:
        if "Plan mode is active" in request.system:
            return final("<proposed_plan>\n1. look\n2. report\n</proposed_plan>")
        return final(f"you said: {request.user_texts[-1].splitlines()[-1]}")

    scripted_model.set_policy(policy)
    code, events, out = _run(
        ["--json"], model_env, tmp_path, stdin="hello there\n/plan\nmake a plan\n/exit\n"
    )
    assert code == 0, out
    texts = [e["text"] for e in events if e["event"] == "model_text"]
    assert texts[0] == "you said: hello there"
    assert "<proposed_plan>" in texts[1]
    turns = [e for e in events if e["event"] == "turn_start"]
    assert len(turns) == 2 and turns[0]["turnId"] != turns[1]["turnId"]
    assert turns[1]["planMode"] is True
    assert any(e["event"] == "notice" and e.get("code") == "plan_mode" for e in events)


def test_without_a_decision_model_it_says_how_to_configure_one(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DESKPILOT_PROVIDER_")}
    env.pop("DESKPILOT_API_KEY", None)
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    env["DESKPILOT_DATA_DIR"] = str(tmp_path / "data")
    env["DESKPILOT_PROVIDER_KEY_STORAGE"] = "file"
    proc = subprocess.run(
        [*DESKPILOT, "do something", "--json", "--cwd", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 4, proc.stdout + proc.stderr
    err = json.loads(proc.stdout.splitlines()[0])
    assert err["event"] == "error" and err["code"] == "decision_model_error"
    assert "deskpilot provider configure" in err["message"]


@pytest.mark.parametrize("args", [["--budget", "forever", "x"], ["--cwd", "/nonexistent/dir"]])
def test_bad_options_are_refused_clearly(args: list[str], tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "deskpilot.cli.main", "agent", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode in (2, 4), proc.stdout + proc.stderr
    assert "budget" in proc.stderr or "not a directory" in proc.stderr


def test_the_person_view_shows_calls_outcomes_and_the_answer_but_no_secrets(
    model_env: dict[str, str], scripted_model: ScriptedModel, tmp_path: Path
) -> None:
    scripted_model.set_policy(
        Steps(
            [
                call("bash", command="API_TOKEN=abc123secret echo hi"),
                call("read", path="absent.txt"),
                final("Done: the command said hi; absent.txt does not exist."),
            ]
        )
    )
    code, _, out = _run(["Say hi with bash, then read absent.txt."], model_env, tmp_path)
    assert code == 0, out
    assert "→ bash command=API_TOKEN=«hidden»" in out
    assert "abc123secret" not in out
    assert "✓ bash L1" in out or "✓ bash L2" in out
    assert "→ read path=absent.txt" in out and "✗ read" in out and "invalid_request" in out
    assert "Done: the command said hi" in out
    assert "answered · 3 steps · 2 tool calls" in out


def test_ctrl_c_while_the_model_thinks_interrupts_cleanly(
    model_env: dict[str, str], scripted_model: ScriptedModel, tmp_path: Path
) -> None:
    scripted_model.delay = 20.0
    scripted_model.set_policy(lambda r: final("too late"))
    proc = subprocess.Popen(
        [*DESKPILOT, "Think for a long time.", "--json", "--cwd", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **model_env},
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if '"event": "thinking"' in line:
            break
    proc.send_signal(signal.SIGINT)
    rest, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    end = json.loads(rest.strip().splitlines()[-1])
    assert end["event"] == "turn_end" and end["status"] == "interrupted"
    assert "Traceback" not in err and "never retrieved" not in err, err


def test_interactive_refuses_unknown_commands_and_helps(
    model_env: dict[str, str], scripted_model: ScriptedModel, tmp_path: Path
) -> None:
    code, events, out = _run(["--json"], model_env, tmp_path, stdin="/foo\n/help\n/exit\n")
    assert code == 0, out
    notices = {e["code"]: e for e in events if e["event"] == "notice"}
    assert "unknown_command" in notices and "/plan" in notices["help"]["text"]
    assert scripted_model.calls == 0


def test_json_mode_reports_a_bad_cwd_as_an_event(tmp_path: Path) -> None:
    proc = subprocess.run(
        [*DESKPILOT, "x", "--json", "--cwd", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 4
    event = json.loads(proc.stdout.splitlines()[0])
    assert event["event"] == "error" and "not a directory" in event["message"]


def test_tools_limits_what_the_model_is_offered(
    model_env: dict[str, str], scripted_model: ScriptedModel, tmp_path: Path
) -> None:
    scripted_model.set_policy(lambda r: final("no tools here"))
    code, events, out = _run(["--json", "--tools", "read", "hi"], model_env, tmp_path)
    assert code == 0, out
    assert events[0]["toolNames"] == ["read"]
    system = scripted_model.request(-1).system
    assert "- read:" in system and "- bash:" not in system and "- click:" not in system
    code, events, out = _run(["--json", "--tools", "none", "hi"], model_env, tmp_path)
    assert code == 0 and events[0]["toolNames"] == [], out


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--tools", "read,teleport"], "unknown tool(s) teleport"),
        (["--tools", "none,read"], "--tools"),
        (["--max-tools", "0"], "max tools"),
    ],
)
def test_bad_tool_options_are_usage_errors(
    model_env: dict[str, str], tmp_path: Path, args: list[str], says: str
) -> None:
    code, _, out = _run(["--json", *args, "hi"], model_env, tmp_path)
    assert code == 2, out
    assert says in out


def test_max_tools_clips_and_a_read_event_names_its_path(
    model_env: dict[str, str], scripted_model: ScriptedModel, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    scripted_model.set_policy(Steps([call("read", path="a.txt"), final("read it")]))
    code, events, out = _run(["--json", "--max-tools", "1", "Read a.txt"], model_env, tmp_path)
    assert code == 0, out
    assert next(e for e in events if e["event"] == "tool_call")["path"] == "a.txt"
    assert scripted_model.request(0).tools() == ["read"]
