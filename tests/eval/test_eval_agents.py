"""The agent side of a task run: ``--agent`` parsing, an agent that outlives its time or a run
that is interrupted is ended (its whole process group), and results / resume bookkeeping."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

import pytest

from deskpilot.eval.agents import AgentSpec, Interrupted, _wait, ledger_steps
from deskpilot.eval.results import (
    RESULTS_SCHEMA,
    TaskRecord,
    load_finished,
    write_results,
)


def test_agent_spec_parsing() -> None:
    assert AgentSpec.parse("operator") == AgentSpec("operator")
    assert AgentSpec.parse("none").label == "none"
    spec = AgentSpec.parse("mcp:my-agent --model 'big one'")
    assert spec == AgentSpec("mcp", ("my-agent", "--model", "big one"))
    assert spec.label == "mcp:my-agent --model 'big one'"
    for bad in ("mcp:", "claude", "mcp:'unterminated"):
        with pytest.raises(ValueError):
            AgentSpec.parse(bad)


def _group(argv: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, start_new_session=True, stdin=subprocess.DEVNULL)


def _gone(pgid: int) -> bool:
    """No live process (a zombie waiting to be reaped is not live) is left in the group."""
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        live = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                live.append(entry.name)
        if not live:
            return True
        time.sleep(0.05)
    return False


def test_an_agent_that_outlives_its_time_is_ended_with_its_children() -> None:
    proc = _group(["sh", "-c", "sleep 60 & sleep 60"])
    t0 = time.monotonic()
    code, timed_out = _wait(proc, 0.5, None)
    assert timed_out and code is not None and time.monotonic() - t0 < 10
    assert _gone(proc.pid)  # the background sleep went with it


def test_an_interrupted_run_ends_the_agent_at_once() -> None:
    cancel = threading.Event()
    proc = _group(["sleep", "60"])
    threading.Timer(0.3, cancel.set).start()
    t0 = time.monotonic()
    with pytest.raises(Interrupted):
        _wait(proc, 60.0, cancel)
    assert time.monotonic() - t0 < 10 and proc.poll() is not None


def test_an_agent_that_ends_reports_its_status() -> None:
    assert _wait(_group(["sh", "-c", "exit 3"]), 10.0, None) == (3, False)


def test_no_store_means_no_step_count(tmp_path: Path) -> None:
    assert ledger_steps(tmp_path) is None


def test_results_round_trip_and_resume_keeps_only_finished_runs(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    records = [
        TaskRecord("b", 0, "passed", 2.0, steps=3),
        TaskRecord("a", 0, "failed", 1.0),
        TaskRecord("a", 1, "error", 0.5, error="setup: no zenity"),
    ]
    write_results(path, {"suite": {"name": "s", "sha256": "x" * 64}}, records)
    data = json.loads(path.read_text())
    assert data["schema"] == RESULTS_SCHEMA
    assert [(t["id"], t["repeat"]) for t in data["tasks"]] == [("a", 0), ("a", 1), ("b", 0)]
    assert data["totals"] == {
        "tasks": 3,
        "passed": 1,
        "failed": 1,
        "error": 1,
        "sumTaskS": 3.5,
    }
    kept = load_finished(path, "x" * 64)
    assert sorted(kept) == ["a#0", "b#0"] and kept["b#0"].steps == 3
    with pytest.raises(ValueError, match="another suite file"):
        load_finished(path, "y" * 64)
    assert load_finished(tmp_path / "none.json", "x") == {}


def test_the_server_takes_its_token_from_the_eval_and_never_prints_it(tmp_path: Path) -> None:
    """The eval chooses the server's bearer token and hands it over in the environment: the
    server answers to it, and its stderr file (kept in the task's trajectory) never holds
    it, not even while the server runs."""
    import os
    import urllib.error
    import urllib.request

    from deskpilot.eval.agents import SERVE_TOKEN_ENV, AgentJob, McpServer

    work = tmp_path / "work"
    work.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("DISPLAY", SERVE_TOKEN_ENV)},
        "DESKPILOT_DATA_DIR": str(tmp_path / "data"),
    }
    job = AgentJob("t", "nothing", None, [], 1, 30.0, env, env, tmp_path, work)
    server = McpServer(job)
    try:
        said = (tmp_path / "server.stderr.txt").read_text()
        assert server.token not in said and f"the one in {SERVE_TOKEN_ENV}" in said, said
        codes = []
        for token in (server.token, "wrong"):
            request = urllib.request.Request(
                server.url,
                data=b"{}",
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            )
            deadline = time.monotonic() + 10.0
            while True:
                try:
                    with urllib.request.urlopen(request, timeout=10) as reply:
                        codes.append(reply.status)
                except urllib.error.HTTPError as err:
                    codes.append(err.code)
                except urllib.error.URLError:  # printed its address a moment before listening
                    if time.monotonic() < deadline:
                        time.sleep(0.1)
                        continue
                    raise
                break
        assert codes[0] != 401 and codes[1] == 401, codes
    finally:
        server.close()
    assert server.token not in (tmp_path / "server.stderr.txt").read_text()
