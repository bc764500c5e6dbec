"""The starter suite end to end, as a person runs it: ``deskpilot eval`` in a subprocess, two
private desktops side by side, the reference solver as the ``mcp:`` agent.

Every task passes when the solver solves it, and every task fails when the same agent does
nothing but look — so no task's criteria hold before the work is done. ``--resume`` keeps the
finished runs and re-runs only what did not finish.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deskpilot.eval.results import RESULTS_SCHEMA
from deskpilot.eval.suite import load_suite

pytestmark = [pytest.mark.desktop, pytest.mark.chromium]

ROOT = Path(__file__).resolve().parents[2]
STARTER = ROOT / "suites" / "starter.json"
SOLVER = Path(__file__).resolve().parent / "reference_solver.py"
DESKPILOT = str(Path(sys.executable).with_name("deskpilot"))
RUN_TIMEOUT_S = 540


def solver_agent(*flags: str) -> str:
    return "mcp:" + shlex.join([sys.executable, str(SOLVER), *flags])


def eval_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["DESKPILOT_HOST_LOCAL_TRUST"] = "1"  # the test install is not a signed one
    return subprocess.run(
        [DESKPILOT, "eval", "--engine", "threads", *args],  # not a test of Ray (test_eval_ray)
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )


def results(out: Path) -> dict[str, Any]:
    data = json.loads((out / "results.json").read_text())
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The whole starter suite solved once, by the reference solver through MCP, on two
    private desktops of its own: over 20 s (≈ 100 s on 2 cores) because it is every starter
    task end to end — the apps start, are driven and checked — and it is run once for the
    module's tests to read."""
    out = tmp_path_factory.mktemp("eval-solved")
    proc = eval_cli(
        str(STARTER), "--desktops", "2", "--agent", solver_agent(), "--out", str(out), "--json"
    )
    assert proc.returncode == 0, (
        proc.stderr[-3000:]
        + json.dumps([t for t in results(out)["tasks"] if t["outcome"] != "passed"], indent=1)[
            :6000
        ]
    )
    assert proc.stdout.strip() == str(out / "results.json")
    yield out


@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
def test_the_reference_solver_solves_every_task(solved: Path) -> None:
    data = results(solved)
    ids = [t.id for t in load_suite(STARTER).tasks]
    assert data["schema"] == RESULTS_SCHEMA
    assert data["suite"]["name"] == "starter" and len(data["suite"]["sha256"]) == 64
    assert data["desktops"] == 2 and data["agent"].startswith("mcp:")
    assert data["totals"] == {
        "tasks": len(ids),
        "passed": len(ids),
        "failed": 0,
        "error": 0,
        "sumTaskS": data["totals"]["sumTaskS"],
    }
    assert sorted(t["id"] for t in data["tasks"]) == sorted(ids)
    displays = set()
    for t in data["tasks"]:
        assert t["outcome"] == "passed" and t["error"] is None, t
        assert t["verification"] and all(v["passed"] is True for v in t["verification"]), t
        assert all(v["reason"] == "assertion_passed" for v in t["verification"])
        assert t["steps"] >= 1, t  # the solver acted through the server: ledger rows
        assert t["agent"]["exitCode"] == 0 and not t["agent"]["timedOut"]
        assert t["desktop"]["memoryMb"] > 0 and t["desktop"]["startS"] > 0
        displays.add(t["desktop"]["display"])
        for launched in t["setup"]["launched"]:
            assert launched["display"] == t["desktop"]["display"]
        trajectory = Path(t["trajectory"])
        assert (trajectory / "deskpilot.sqlite3").is_file()
        assert (trajectory / "snapshot-vault").is_dir()  # the evidence frames' vault
        assert trajectory.stat().st_mode & 0o077 == 0
        # the server's output stays with the task, its bearer token does not
        said = (trajectory.parent / "server.stderr.txt").read_text()
        assert "bearer token: the one in DESKPILOT_SERVE_TOKEN" in said, said[-500:]
        assert not re.search(r"bearer token \(shown once[^)]*\): \S", said)
    assert len(displays) >= 2  # two desktops side by side
    # the wall time is less than the tasks' sum: they ran in parallel
    assert data["wallS"] < data["totals"]["sumTaskS"]


@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
def test_doing_nothing_fails_every_task(tmp_path: Path) -> None:
    """``--agent none``: the setup, then the check at once — no criterion holds yet. About
    20 s: every task's setup still starts its app on one of two private desktops."""
    proc = eval_cli(
        str(STARTER), "--desktops", "2", "--agent", "none", "--out", str(tmp_path), "--json"
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    data = results(tmp_path)
    for t in data["tasks"]:
        assert t["outcome"] == "failed", t  # decided, not an error: the task ran
        assert any(v["passed"] is not True for v in t["verification"]), t
        assert t["steps"] == 0, t
    assert data["totals"]["failed"] == len(load_suite(STARTER).tasks)


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_an_agent_that_only_looks_fails(tmp_path: Path) -> None:
    """The solver connected but acting on nothing (it reads the state once): two tasks, since
    the baseline above covers every task."""
    chosen = "zenity-form-register,calculator-add"
    proc = eval_cli(
        str(STARTER),
        "--tasks",
        chosen,
        "--desktops",
        "2",
        "--agent",
        solver_agent("--noop"),
        "--out",
        str(tmp_path),
        "--json",
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    data = results(tmp_path)
    assert sorted(t["id"] for t in data["tasks"]) == sorted(chosen.split(","))
    for t in data["tasks"]:
        assert t["outcome"] == "failed" and t["steps"] == 0, t
        assert t["agent"]["exitCode"] == 0  # it connected and looked


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_resume_skips_finished_runs_and_reruns_the_rest(solved: Path) -> None:
    before = results(solved)
    times = {t["id"]: t["timeS"] for t in before["tasks"]}
    # an interrupted run's unfinished task: recorded as an error
    again = "zenity-entry-name"
    edited = dict(before)
    edited["tasks"] = [
        {**t, "outcome": "error"} if t["id"] == again else t for t in before["tasks"]
    ]
    (solved / "results.json").write_text(json.dumps(edited))
    proc = eval_cli(
        str(STARTER),
        "--desktops",
        "1",
        "--agent",
        solver_agent(),
        "--out",
        str(solved),
        "--resume",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    after = results(solved)
    assert len(after["tasks"]) == len(before["tasks"])
    for t in after["tasks"]:
        assert t["outcome"] == "passed"
        if t["id"] == again:
            assert t["timeS"] != times[again]  # run again
        else:
            assert t["timeS"] == times[t["id"]]  # kept as it was
    # a results file of another suite is refused, not mixed in
    other = solved / "other.json"
    other.write_text(STARTER.read_text().replace('"starter"', '"other"', 1))
    refused = eval_cli(str(other), "--agent", solver_agent(), "--out", str(solved), "--resume")
    assert refused.returncode == 2 and "another suite file" in refused.stderr
