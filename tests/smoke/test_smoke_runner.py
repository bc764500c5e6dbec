"""The smoke runner end to end: real ``deskpilot agent`` processes per case against the
scripted reference model (a real HTTP server), its artifacts, its failure kinds and its CLI.

Each case's agent is a real process; only the model is scripted. The fake agent commands in
the lifecycle tests are real executables too (a shell script that writes the event stream an
agent would, then misbehaves).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from deskpilot.smoke.case_model import Case, Expect, Observation
from deskpilot.smoke.cases import ALL_CASES, PROFILES, select
from deskpilot.smoke.checks import judge
from deskpilot.smoke.fake_model.reference import Router
from deskpilot.smoke.fake_model.replies import call, final
from deskpilot.smoke.fake_model.server import ScriptedModel
from deskpilot.smoke.runner import AGENT_ENV, EXIT_FAILED, EXIT_OK, Options, run
from deskpilot.smoke.schema import FULL_SUITE_CASES

REPO = Path(__file__).resolve().parents[2]
KEY = "smoke-test-key-0123456789abcdef"


def base_env(tmp: Path, model: ScriptedModel) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "DBUS_SESSION_BUS_ADDRESS")}
    env.update(
        DESKPILOT_PROVIDER_BASE_URL=model.base_url,
        DESKPILOT_PROVIDER_MODEL="reference",
        DESKPILOT_PROVIDER_API_KEY=KEY,
        DESKPILOT_DATA_DIR=str(tmp / "data"),
        DESKPILOT_HOST_LOCAL_TRUST="1",
    )
    return env


def cli(*args: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deskpilot", "smoke", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )


# ----------------------------------------------------------------------------- full runs


def test_the_full_suite_passes_against_the_reference_model(tmp_path: Path) -> None:
    cases = select(["full-suite"], [])
    with ScriptedModel(Router(cases)) as model:
        outcome = run(
            Options(cases=cases, out_dir=tmp_path / "smoke", env=base_env(tmp_path, model))
        )
    s = outcome.summary
    assert outcome.exit_code == EXIT_OK, [r for r in s["caseResults"] if not r["ok"]]
    assert s["runKind"] == "full-suite" and s["cases"] == list(FULL_SUITE_CASES)
    assert s["totals"]["passed"] == 12 and s["failures"] == 0
    by = {r["name"]: r for r in s["caseResults"]}
    # what each case proves is in the record, not just "ok"
    assert by["no-tool"]["toolCalls"] == []
    assert by["read"]["readPaths"] == ["project.json"]
    assert by["read-enoent-recovery"]["recoveryCodes"] == {"repeated_tool_call": 1}
    assert by["read-enoent-recovery"]["toolCalls"].count("read") == 2  # not three
    assert by["tool-selection-clipping"]["runtimeFingerprint"]["clipped"] is True
    assert by["tool-selection-clipping"]["runtimeFingerprint"]["selectedToolNames"] == ["read"]
    assert (
        "recent_user_continuation"
        in by["tool-selection-continuation"]["runtimeFingerprint"]["promptSources"]
    )
    for record in s["caseResults"]:
        life = record["lifecycle"]
        assert life["processLifecycleOk"] and not life["timedOutByWatchdog"]
        assert life["agentEndElapsedSeconds"] <= life["elapsedSeconds"]
        assert len(record["runtimeFingerprint"]["sha256"]) == 64
    # artifacts: one of each per case, private to the person
    root = tmp_path / "smoke"
    stamp = s["runId"]
    for name in FULL_SUITE_CASES:
        for suffix in (".events.jsonl", ".debug.jsonl", ".lifecycle.json", ".case.json"):
            path = root / f"{stamp}-{name}{suffix}"
            assert path.exists(), path
    summary_file = root / f"{stamp}-summary.json"
    for path in root.iterdir():  # every artifact is private to its owner
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name
    assert json.loads(summary_file.read_text())["runId"] == stamp
    # the fake key never reaches an artifact
    for path in root.iterdir():
        assert KEY not in path.read_text("utf-8", errors="replace"), path.name


def test_the_self_test_cli_passes_and_says_what_it_checked(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "DBUS_SESSION_BUS_ADDRESS")}
    env.update(DESKPILOT_DATA_DIR=str(tmp_path / "data"), DESKPILOT_HOST_LOCAL_TRUST="1")
    done = cli("--self-test", "--profile", "quick", "--json", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    names = [c["name"] for c in report["checks"]]
    assert report["ok"] and all(c["ok"] for c in report["checks"])
    for wanted in ("--case", "missing agent", "preflight", "429", "provider error", "unknown"):
        assert any(wanted in n for n in names), (wanted, names)
    # the self-test leaves nothing in the person's smoke history
    assert not (tmp_path / "data" / "smoke").exists()


# ----------------------------------------------------------------------------- judging


def _obs(events: list[dict[str, Any]], debug: list[dict[str, Any]] | None = None) -> Observation:
    return Observation(events, [{"event": e, "data": d} for e, d in debug or []])


READ_CASE = Case(
    "t",
    "t",
    ("Read a.txt",),
    Expect(must_run=("read",), only=("read",), read_paths=("a.txt",), final_contains=("42",)),
)


def _run_events(final_text: str, *calls: tuple[str, str]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"event": "session_start", "toolNames": ["read", "bash"]}]
    for i, (name, path) in enumerate(calls):
        events.append({"event": "tool_call", "id": str(i), "name": name, "path": path})
        events.append({"event": "tool_result", "id": str(i), "ok": True})
    events.append({"event": "model_text", "text": final_text})
    events.append({"event": "turn_end", "status": "answered"})
    return events


@pytest.mark.parametrize(
    ("final_text", "calls", "code"),
    [
        ("It says 42.", [("read", "a.txt")], None),
        ("It says 42.", [("read", "./a.txt")], None),
        ("It says 42.", [], "tool_not_executed"),
        ("It says 42.", [("read", "/home/x/a.txt")], "read_path_missing"),
        ("It says 42.", [("read", "a.txt"), ("bash", "")], "tool_not_allowed"),
        ("It says 41.", [("read", "a.txt")], "final_missing_text"),
        ("", [("read", "a.txt")], "empty_assistant_end"),
        (
            '42 <dp_tool_call>{"name":"read"}</dp_tool_call>',
            [("read", "a.txt")],
            "raw_markup_final",
        ),
        ('42 <pi_tool_call name="read">', [("read", "a.txt")], "raw_markup_final"),
        (
            '{"kind":"tool_call","name":"read","arguments":{"path":"42"}}',
            [("read", "a.txt")],
            "tool_envelope_final",
        ),
    ],
)
def test_judge_catches_each_way_a_case_falls_short(
    tmp_path: Path, final_text: str, calls: list[tuple[str, str]], code: str | None
) -> None:
    failures = judge(READ_CASE, _obs(_run_events(final_text, *calls)), tmp_path)
    codes = [f.code for f in failures]
    assert (code in codes) if code else not codes, codes


def test_judge_reads_selection_telemetry(tmp_path: Path) -> None:
    case = Case("t", "t", ("x",), Expect(continuation=True, clipped_omits=("bash",)))
    events = _run_events("done")
    plain = {"tool_selection_prompt_source": "latest_user", "tool_selection_clipped": False}
    codes = [f.code for f in judge(case, _obs(events, [("turn.start", plain)]), tmp_path)]
    assert {"continuation_not_ranked", "clipping_not_reported"} <= set(codes)
    ranked = {
        "tool_selection_prompt_source": "recent_user_continuation",
        "tool_selection_user_messages": 2,
        "tool_selection_clipped": True,
        "toolSelectionSummary": {"omitted": [{"name": "bash"}]},
    }
    assert judge(case, _obs(events, [("turn.start", ranked)]), tmp_path) == []


def test_a_repeated_call_that_ran_twice_fails(tmp_path: Path) -> None:
    case = Case("t", "t", ("x",), Expect(at_most_once=(("read", "s.json"),)))
    events = _run_events("done", ("read", "s.json"), ("read", "s.json"))
    assert [f.code for f in judge(case, _obs(events), tmp_path)] == ["repeated_call_executed"]


# ----------------------------------------------------------------------------- lifecycle


def _fake_agent(tmp: Path, body: str) -> Path:
    script = tmp / "fake-agent"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return script


TURN_END = 'echo \'{"event": "turn_end", "status": "answered"}\''
MODEL_TEXT = 'echo \'{"event": "model_text", "text": "The capital is Paris."}\''


@pytest.mark.parametrize(
    ("body", "timeout", "expect"),
    [
        (f"{MODEL_TEXT}\n{TURN_END}\nexit 0\n", 30, {"processLifecycleOk": True}),
        (
            f"{MODEL_TEXT}\n{TURN_END}\nsleep 60\n",
            4,
            {"processLifecycleOk": False, "timedOutAfterAgentEnd": True},
        ),
        ("sleep 60\n", 3, {"processLifecycleOk": False, "timedOutAfterAgentEnd": False}),
        (f"{MODEL_TEXT}\n{TURN_END}\nkill -9 $$\n", 30, {"processLifecycleOk": False}),
    ],
)
def test_lifecycle_tells_a_lingering_process_from_a_protocol_failure(
    tmp_path: Path, body: str, timeout: float, expect: dict[str, Any]
) -> None:
    agent = _fake_agent(tmp_path, body)
    cases = select([], ["no-tool"])
    with ScriptedModel(Router(cases)) as model:
        env = {**base_env(tmp_path, model), AGENT_ENV: str(agent)}
        outcome = run(
            Options(cases=cases, out_dir=tmp_path / "smoke", env=env, case_timeout_s=timeout)
        )
    record = outcome.summary["caseResults"][0]
    life = json.loads(
        (tmp_path / "smoke" / f"{outcome.summary['runId']}-no-tool.lifecycle.json").read_text()
    )
    for key, value in expect.items():
        assert life[key] == value, (key, life)
    if expect["processLifecycleOk"]:
        assert outcome.exit_code == EXIT_OK and record["semanticFlowOk"]
    else:
        assert outcome.exit_code == EXIT_FAILED
        assert "process_lifecycle" in [f["code"] for f in record["failures"]]
        if expect.get("timedOutAfterAgentEnd"):
            # the protocol side was fine: only the process failed
            assert record["semanticFlowOk"] is True
            assert outcome.summary["totals"]["watchdogTimeouts"] == 1


# ----------------------------------------------------------------------------- the CLI


def test_unknown_names_and_a_missing_agent_are_usage_errors(tmp_path: Path) -> None:
    env = {**os.environ, "DESKPILOT_DATA_DIR": str(tmp_path)}
    bad = cli("--case", "no-such-case", env=env)
    assert bad.returncode == 2 and "unknown case" in bad.stderr
    bad = cli("--profile", "everything", env=env)
    assert bad.returncode == 2 and "unknown profile" in bad.stderr
    missing = cli("--case", "read", env={**env, AGENT_ENV: str(tmp_path / "nope")})
    assert missing.returncode == 2 and AGENT_ENV in missing.stderr
    assert not (tmp_path / "smoke").exists()


def test_no_configured_endpoint_is_a_failed_preflight_with_a_summary(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DESKPILOT_PROVIDER_")} | {
        "DESKPILOT_DATA_DIR": str(tmp_path),
        "HOME": str(tmp_path),
    }
    done = cli("--profile", "quick", "--json", env=env)
    assert done.returncode == 3, done.stderr
    s = json.loads(done.stdout)["summary"]
    assert s["runKind"] == "preflight-failed" and s["stopReason"] == "preflight_failed"
    assert s["providerHealth"]["error"]["code"] in ("api_key_missing", "configuration_invalid")
    assert [r["skipped"] for r in s["caseResults"]] == [True, True]


def test_list_cases_and_the_tool_plan(tmp_path: Path) -> None:
    env = {**os.environ, "DESKPILOT_DATA_DIR": str(tmp_path)}
    listed = json.loads(cli("--list-cases", "--json", env=env).stdout)
    assert [c["name"] for c in listed["cases"]] == [c.name for c in ALL_CASES]
    assert listed["profiles"] == {k: list(v) for k, v in PROFILES.items()}
    plan = json.loads(cli("--plan", "--json", env=env).stdout)
    from deskpilot.runtime.tools import TOOLS

    tools = {row["tool"]: row for row in plan["tools"]}
    assert {"read", "bash", "vision_read"} <= set(tools)
    assert set(TOOLS) - {"screenshot"} <= set(tools)
    assert tools["read"]["coverage"] == "live" and "read" in tools["read"]["cases"]
    assert set(plan["staticOnly"]) == {n for n, r in tools.items() if r["coverage"] != "live"}


def test_the_reference_model_answers_the_preflight() -> None:
    router = Router(select([], ["read"]))
    from deskpilot.smoke.fake_model.reading import Request

    reply = router(Request({"messages": [{"role": "user", "content": "Reply with OK."}]}))
    assert reply == final("OK")
    first = router(Request({"messages": [{"role": "user", "content": ALL_CASES[2].turns[0]}]}))
    assert first == call("read", path="project.json")


def test_the_persons_limits_and_the_smoke_bounds_reach_each_case(tmp_path: Path) -> None:
    cases = select([], ["no-tool"])
    with ScriptedModel(Router(cases)) as model:
        env = {**base_env(tmp_path, model), "DESKPILOT_PROVIDER_REQUEST_ATTEMPTS": "2"}
        outcome = run(
            Options(
                cases=cases,
                out_dir=tmp_path / "smoke",
                env=env,
                request_timeout_ms=45_000,
                max_output_tokens=512,
            )
        )
    limits = outcome.summary["caseResults"][0]["runtimeFingerprint"]["limits"]
    assert limits["requestAttempts"] == 2  # the person's own setting survives
    assert limits["perAttemptTimeoutMs"] == 45_000 and limits["maxOutputTokens"] == 512
    assert outcome.summary["settings"]["requestTimeoutMs"] == 45_000


def test_a_case_that_cannot_run_here_is_skipped_with_its_reason_not_passed(
    tmp_path: Path,
) -> None:
    from contextlib import contextmanager

    from deskpilot.smoke.case_model import CaseUnavailable

    @contextmanager
    def unavailable(env: object):  # type: ignore[no-untyped-def]
        raise CaseUnavailable("no frobnicator on this machine")
        yield None

    cases = [*select([], ["no-tool"]), Case("needs-x", "x", ("x?",), Expect(), setup=unavailable)]
    with ScriptedModel(Router(cases)) as model:
        outcome = run(
            Options(cases=cases, out_dir=tmp_path / "smoke", env=base_env(tmp_path, model))
        )
    s = outcome.summary
    skipped = s["caseResults"][1]
    assert skipped["skipped"] and "no frobnicator" in skipped["reason"]
    assert s["caseResults"][0]["ok"] and s["totals"]["skipped"] == 1
    assert s["ok"] is False and outcome.exit_code == EXIT_FAILED


def test_the_vision_case_reads_a_random_code_from_an_image(tmp_path: Path) -> None:
    from deskpilot.agent.vision_read import vision_tool

    if vision_tool({}) is None:
        pytest.skip("no OCR here (scripts/test builds tesserocr)")
    cases = select([], ["vision-read-image"])
    wrong = {"vision-read-image": lambda r: final("The pickup code is HERON-0000.")}
    with ScriptedModel(Router(cases)) as model:
        outcome = run(Options(cases=cases, out_dir=tmp_path / "a", env=base_env(tmp_path, model)))
    assert outcome.exit_code == EXIT_OK, outcome.summary["caseResults"]
    with ScriptedModel(Router(cases, wrong)) as model:
        bad = run(Options(cases=cases, out_dir=tmp_path / "b", env=base_env(tmp_path, model)))
    codes = [f["code"] for f in bad.summary["caseResults"][0]["failures"]]
    assert "final_value" in codes and "tool_not_executed" in codes


def test_a_model_that_never_plans_fails_the_plan_contract(tmp_path: Path) -> None:
    cases = select([], ["plan-mode-contract"])
    prose = {"plan-mode-contract": lambda r: final("Sure, I would look at the file and then edit.")}
    with ScriptedModel(Router(cases, prose)) as model:
        outcome = run(
            Options(cases=cases, out_dir=tmp_path / "smoke", env=base_env(tmp_path, model))
        )
    codes = [f["code"] for f in outcome.summary["caseResults"][0]["failures"]]
    assert outcome.exit_code == EXIT_FAILED and "plan_fallback" in codes


def test_provider_errors_are_not_empty_answers_and_a_failed_preflight_counts_one(
    tmp_path: Path,
) -> None:
    cases = select([], ["read"])
    with ScriptedModel(Router(cases)) as model:
        model.fail_next(401, count=20)
        stopped = run(
            Options(
                cases=cases, out_dir=tmp_path / "a", env=base_env(tmp_path, model), preflight=False
            )
        )
        failed = run(Options(cases=cases, out_dir=tmp_path / "b", env=base_env(tmp_path, model)))
    record = stopped.summary["caseResults"][0]
    assert "agent_error" in [f["code"] for f in record["failures"]]
    assert record["emptyAssistantEnd"] is False
    assert stopped.summary["totals"]["emptyAssistantEnds"] == 0
    assert stopped.summary["totals"]["providerErrorCodes"] == {"http_401": 1}
    totals = failed.summary["totals"]
    assert failed.summary["runKind"] == "preflight-failed"
    assert totals["providerErrors"] == 1 and totals["providerErrorCodes"] == {"http_401": 1}


def test_a_hanging_endpoint_stops_the_run_after_one_watchdog(tmp_path: Path) -> None:
    cases = select([], ["read", "bash-pwd"])
    with ScriptedModel(Router(cases), delay=lambda i: 30.0) as model:
        outcome = run(
            Options(
                cases=cases,
                out_dir=tmp_path / "smoke",
                env=base_env(tmp_path, model),
                preflight=False,
                case_timeout_s=4,
                request_timeout_ms=60_000,
            )
        )
    s = outcome.summary
    assert s["stopReason"] == "provider_error"
    stalled = s["caseResults"][0]
    assert stalled["lifecycle"]["timedOutByWatchdog"] is True
    codes = [f["code"] for f in stalled["failures"]]
    assert "request_stalled" in codes and "empty_assistant_end" not in codes
    assert s["totals"]["emptyAssistantEnds"] == 0
    assert s["totals"]["providerErrorCodes"] == {"request_stalled": 1}
    assert s["caseResults"][1]["skipped"] and "request_stalled" in s["caseResults"][1]["reason"]


def _agents_in(workspace_root: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if " agent --json --cwd " in cmdline and workspace_root in cmdline:
            found.append(int(proc.name))
    return found


def test_sigterm_ends_the_running_agent_and_still_writes_the_summary(tmp_path: Path) -> None:
    import signal
    import time

    cases = select([], ["read"])
    with ScriptedModel(Router(cases), delay=lambda i: 60.0) as model:
        env = base_env(tmp_path, model)
        proc = subprocess.Popen(
            [sys.executable, "-m", "deskpilot", "smoke", "--case", "read,bash-pwd",
             "--no-preflight", "--json"],
            env={**env, "TMPDIR": str(tmp_path)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while not _agents_in(str(tmp_path)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _agents_in(str(tmp_path)), "the case's agent never started"
        time.sleep(1.0)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    s = json.loads(out)["summary"]
    assert s["stopReason"] == "interrupted"
    running, rest = s["caseResults"]
    assert not running["skipped"] and "interrupted" in [f["code"] for f in running["failures"]]
    assert running["lifecycle"]["interrupted"] is True and running["emptyAssistantEnd"] is False
    assert rest["skipped"] and rest["reason"] == "interrupted"
    assert s["failures"] == 1 and s["ok"] is False
    time.sleep(0.5)
    assert _agents_in(str(tmp_path)) == []  # no agent left behind
    assert not list(tmp_path.glob("deskpilot-smoke-*"))  # its scratch is gone too


def test_empty_names_and_piped_tables(tmp_path: Path) -> None:
    env = {**os.environ, "DESKPILOT_DATA_DIR": str(tmp_path)}
    empty = cli("--case", "", env=env)
    assert empty.returncode == 2 and "--case needs at least one name" in empty.stderr
    listed = cli("--list-cases", env=env)
    assert "plan-mode-accepted-continuation" in listed.stdout  # whole, not cut at 80 columns


def test_sigterm_during_the_preflight_still_writes_the_summary(tmp_path: Path) -> None:
    import signal
    import time

    cases = select([], ["read"])
    with ScriptedModel(Router(cases), delay=lambda i: 60.0) as model:
        env = base_env(tmp_path, model)
        proc = subprocess.Popen(
            [sys.executable, "-m", "deskpilot", "smoke", "--case", "read", "--json"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        deadline = time.monotonic() + 30
        while model.calls == 0 and time.monotonic() < deadline:  # the preflight is in flight
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    s = json.loads(out)["summary"]
    assert s["stopReason"] == "interrupted" and s["runKind"] == "targeted"
    assert (tmp_path / "data" / "smoke" / f"{s['runId']}-summary.json").exists()


def test_the_status_case_needs_a_real_refusal_not_an_echo(tmp_path: Path) -> None:
    cases = select([], ["task-status-not-found"])
    echo = {"task-status-not-found": lambda r: final("Task task-deadbeef0000 is running fine.")}
    with ScriptedModel(Router(cases)) as model:
        good = run(Options(cases=cases, out_dir=tmp_path / "a", env=base_env(tmp_path, model)))
    with ScriptedModel(Router(cases, echo)) as model:
        bad = run(Options(cases=cases, out_dir=tmp_path / "b", env=base_env(tmp_path, model)))
    assert good.exit_code == EXIT_OK, good.summary["caseResults"]
    codes = [f["code"] for f in bad.summary["caseResults"][0]["failures"]]
    assert "final_missing_text" in codes and "tool_not_executed" in codes


def test_summary_refuses_a_typo_dir_and_comparing_a_run_with_itself(tmp_path: Path) -> None:
    cases = select([], ["no-tool"])
    root = tmp_path / "data" / "smoke"
    with ScriptedModel(Router(cases)) as model:
        stamp = run(Options(cases=cases, out_dir=root, env=base_env(tmp_path, model))).summary[
            "runId"
        ]
    env = {**os.environ, "DESKPILOT_DATA_DIR": str(tmp_path / "data")}
    same = cli("summary", "--compare", stamp, stamp.rsplit("-", 1)[0], env=env)
    assert same.returncode == 2 and "two different runs" in same.stderr
    typo = cli("summary", "--history", "3", str(tmp_path / "smoek"), env=env)
    assert typo.returncode == 2 and "does not exist" in typo.stderr
    fine = cli("summary", "--history", "3", "--json", env=env)
    assert fine.returncode == 0 and json.loads(fine.stdout)["found"] == 1
