"""``deskpilot smoke summary`` end to end: the real CLI over summaries in a temp data dir.

Each test points ``DESKPILOT_DATA_DIR`` at its own temp dir, writes summaries where the runner
writes them (``<data dir>/smoke``), and drives the command through the real ``deskpilot`` app;
one test runs the installed entry point as a subprocess. Also doctor's read-only smoke state.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from deskpilot.cli import doctor
from deskpilot.cli.main import app
from deskpilot.smoke import schema
from deskpilot.smoke.summary_selftest import sample_summary, stamp, write


@pytest.fixture
def smoke_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DESKPILOT_DATA_DIR", str(tmp_path / "data"))
    return schema.smoke_dir(tmp_path / "data")


def put(root: Path, i: int, **kwargs: Any) -> str:
    write(root, stamp(i), sample_summary(stamp(i), **kwargs))
    return stamp(i)


def cli(*args: str) -> Result:
    result = CliRunner().invoke(app, ["smoke", "summary", *args])
    assert "Traceback" not in result.output
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.exception
    return result


def as_json(*args: str) -> tuple[dict[str, Any], int]:
    result = cli(*args, "--json")
    return json.loads(result.stdout), result.exit_code


@pytest.fixture
def three_runs(smoke_dir: Path) -> Path:
    for i in range(3):
        put(smoke_dir, i)
    put(smoke_dir, 3, cases=("read",), totals={"recoveries": 1})
    (smoke_dir / f"{stamp(3)}-debug-summary.json").write_text("{}", encoding="utf-8")
    return smoke_dir


@pytest.mark.parametrize(
    ("args", "schema_name"),
    [
        ((), schema.RUN_VIEW_SCHEMA),
        (("--latest",), schema.RUN_VIEW_SCHEMA),
        (("--run-id", stamp(1)), schema.RUN_VIEW_SCHEMA),
        (("--history", "5"), schema.HISTORY_SCHEMA),
        (("--compare", stamp(0), stamp(3)), schema.COMPARE_SCHEMA),
        (("--drift", "10"), schema.DRIFT_SCHEMA),
        (("--trend-gate", "3", "--profile", "full-suite-strict"), schema.GATE_SCHEMA),
        (("--retention-report",), schema.RETENTION_SCHEMA),
        (("--self-test",), schema.SUMMARY_SELFTEST_SCHEMA),
    ],
)
def test_every_mode_prints_versioned_json(
    three_runs: Path, args: tuple[str, ...], schema_name: str
) -> None:
    data, code = as_json(*args)
    assert data["schema"] == schema_name
    assert code == 0


def test_history_json_lists_runs_newest_first_without_debug_summaries(three_runs: Path) -> None:
    data, _ = as_json("--history", "10")
    assert [r["runId"] for r in data["runs"]] == [stamp(3), stamp(2), stamp(1), stamp(0)]
    assert data["runs"][0]["runKind"] == "targeted" and data["runs"][0]["recoveries"] == 1
    filtered, _ = as_json("--history", "2", "--run-kind", "full-suite")
    assert [r["runId"] for r in filtered["runs"]] == [stamp(2), stamp(1)]
    assert filtered["history"]["filteredOutArtifacts"] == 1


def test_history_require_run_kind_exits_1_on_a_violation(three_runs: Path) -> None:
    data, code = as_json("--history", "4", "--require-run-kind", "full-suite")
    assert code == 1 and data["runKindViolations"] == [stamp(3)]
    assert (
        as_json("--history", "3", "--run-kind", "full-suite", "--require-run-kind", "full-suite")[1]
        == 0
    )


def test_trend_gate_exit_codes_and_option_override(three_runs: Path) -> None:
    data, code = as_json("--trend-gate", "4", "--run-kind", "full-suite,targeted")
    assert code == 0 and data["found"] == 4
    data, code = as_json("--trend-gate", "4", "--profile", "full-suite-strict")
    assert code == 1
    assert [f["check"] for f in data["failures"]] == ["enough-runs"]
    data, code = as_json(
        "--trend-gate", "4", "--run-kind", "full-suite,targeted", "--max-recoveries", "0"
    )
    assert code == 1
    assert data["failures"] == [
        {
            "check": "max-recoveries",
            "message": "recoveries must be <= 0",
            "runIds": [stamp(3)],
            "values": {stamp(3): 1},
        }
    ]
    assert data["thresholds"]["maxRecoveries"] == 0


def test_trend_gate_reason_codes_and_runtime_flags(three_runs: Path) -> None:
    put(three_runs, 4, max_tools=3)
    data, code = as_json(
        "--trend-gate", "3", "--run-kind", "full-suite", "--require-stable-runtime",
        "--forbid-tool-selection-reason-codes", "caller_pinned,prompt_tool_exclusive",
        "--require-omitted-tool-selection-reason-codes", "core_tool",
    )  # fmt: skip
    assert code == 1
    checks = sorted(f["check"] for f in data["failures"])
    assert checks == [
        "forbid-tool-selection-reason-codes:caller_pinned",
        "stable-runtime-fingerprint",
    ]
    assert data["thresholds"]["requireStableRuntimeBounds"] is True


def test_a_broken_summary_in_the_selection_exits_2(three_runs: Path) -> None:
    write(three_runs, stamp(5), "{ nope")
    data, code = as_json("--trend-gate", "3")
    assert code == 2 and data["failures"][0]["check"] == "parse-error"
    data, code = as_json("--latest")
    assert code == 2 and data["parseError"].startswith("invalid JSON")
    assert as_json("--history", "2")[1] == 2
    assert as_json("--drift", "2")[1] == 2
    result = cli("--compare", stamp(5), stamp(0))
    assert result.exit_code == 2 and "cannot be parsed" in result.stderr
    # the retention report lists it as evidence to keep; it does not fail
    report, code = as_json("--retention-report")
    assert code == 0 and report["runs"][0]["keepReasons"] == ["quality:parse-error"]


def test_direct_summary_is_gated(three_runs: Path) -> None:
    view, code = as_json("--latest")
    assert code == 0 and view["runId"] == stamp(3) and view["summary"]["runId"] == stamp(3)
    assert view["gate"]["ok"] is True
    view, code = as_json("--latest", "--max-recoveries", "0")
    assert code == 1 and view["gate"]["failures"][0]["check"] == "max-recoveries"
    view, code = as_json("--latest", "--run-kind", "full-suite", "--profile", "full-suite-strict")
    assert code == 0 and view["runId"] == stamp(2)
    put(three_runs, 4, ok=False, failures=1)
    view, code = as_json("--run-id", stamp(4))
    assert code == 1 and {f["check"] for f in view["gate"]["failures"]} == {"ok", "failures"}
    view, code = as_json("--run-id", stamp(1)[:15])  # a pid-less id finds the one match
    assert code == 0 and view["runId"] == stamp(1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--latest", "--history", "3"), "choose one mode"),
        (("--history", "3", "--keep-targeted", "2"), "--keep-* options apply only"),
        (("--drift", "3", "--max-recoveries", "1"), "gate options"),
        (("--history", "3", "--profile", "full-suite-strict"), "gate options"),
        (("--compare", stamp(0), stamp(1), "--run-kind", "full-suite"), "--run-kind does not"),
        (("--trend-gate", "3", "--run-kind", "nightly"), "unknown run kind nightly"),
        (("--trend-gate", "3", "--profile", "loose"), "unknown --profile"),
        (("--trend-gate", "3", "--require-tool-selection-reason-codes", "Bad Code"), "not a valid"),
        (("--trend-gate", "3", "--expect-case-names", ","), "comma-separated"),
        (("--run-id", "yesterday"), "not a run id"),
        (("--run-id", "20990101-000000"), "no summary for run"),
        (("--compare", stamp(0), "20990101-000000"), "no summary for run"),
        (("--history", "0"), "greater than or equal to 1"),
        (("--compare", stamp(0)), "requires 2 arguments"),
    ],
)
def test_usage_errors_exit_2_with_a_message(
    three_runs: Path, args: tuple[str, ...], message: str
) -> None:
    result = cli(*args)
    assert result.exit_code == 2
    assert message in result.output


def test_latest_without_runs_and_dir_arguments(smoke_dir: Path, tmp_path: Path) -> None:
    result = cli("--latest")
    assert result.exit_code == 2 and "no smoke run summary" in result.stderr
    assert not smoke_dir.exists()  # reading never creates the smoke dir
    other = tmp_path / "elsewhere"
    put(other, 7)
    assert as_json(str(other))[0]["runId"] == stamp(7)
    assert as_json("--dir", str(other))[0]["runId"] == stamp(7)
    assert as_json(str(other), "--dir", str(other))[0]["runId"] == stamp(7)
    clash = cli(str(other), "--dir", str(smoke_dir))
    assert clash.exit_code == 2 and "two different dirs" in clash.stderr
    a_file = tmp_path / "file"
    a_file.write_text("x", encoding="utf-8")
    assert "is not a directory" in cli("--dir", str(a_file)).stderr


def test_trend_gate_over_an_empty_dir_fails_not_enough_runs(smoke_dir: Path) -> None:
    data, code = as_json("--trend-gate", "3")
    assert code == 1 and data["found"] == 0 and data["failures"][0]["check"] == "enough-runs"


def test_retention_report_via_cli_changes_nothing(three_runs: Path) -> None:
    (three_runs / "stray.bin").write_bytes(b"\0")
    before = sorted((p.name, p.stat().st_mtime_ns, p.read_bytes()) for p in three_runs.iterdir())
    data, code = as_json("--retention-report", "--keep-full-suite", "1", "--keep-targeted", "0")
    after = sorted((p.name, p.stat().st_mtime_ns, p.read_bytes()) for p in three_runs.iterdir())
    assert before == after and code == 0
    assert data["archiveCandidateRunIds"] == [stamp(1), stamp(0)]
    assert data["unrecognisedFiles"] == ["stray.bin"]
    assert data["policy"]["full-suite"] == 1


def test_tables_without_json(three_runs: Path) -> None:
    gate = cli("--trend-gate", "4", "--run-kind", "full-suite,targeted", "--max-recoveries", "0")
    assert gate.exit_code == 1
    assert "FAILED" in gate.stdout and "max-recoveries" in gate.stdout and stamp(3) in gate.stdout
    for args in (
        ("--history", "4"),
        ("--latest",),
        ("--compare", stamp(0), stamp(3)),
        ("--drift", "4"),
        ("--retention-report",),
    ):
        result = cli(*args)
        assert result.exit_code == 0, args
        assert stamp(3) in result.stdout, args
    assert "passed" in cli("--self-test").stdout


def test_installed_entry_point_runs_the_selftest(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("deskpilot")
    env = {**os.environ, "DESKPILOT_DATA_DIR": str(tmp_path)}
    done = subprocess.run(
        [str(exe), "smoke", "summary", "--self-test", "--json"],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["ok"] is True and data["failed"] == 0 and data["passed"] >= 25


# --- doctor --------------------------------------------------------------------------------


def test_doctor_smoke_state(smoke_dir: Path) -> None:
    empty = doctor._smoke_state()
    assert empty["runs"] == 0 and empty["latest"] is None and empty["trendGate"] is None
    assert doctor._smoke_row(empty) == "no runs"
    for i in range(2):
        put(smoke_dir, i)
    state = doctor._smoke_state()
    assert state["schema"] == schema.STATE_SCHEMA
    assert state["latest"]["runId"] == stamp(1) and state["latest"]["ok"] is True
    assert state["trendGate"]["status"] == "not-enough-runs"
    put(smoke_dir, 2, ok=False, failures=1)
    state = doctor._smoke_state()
    assert state["trendGate"]["status"] == "failed"
    row = doctor._smoke_row(state)
    assert stamp(2) in row and "not ok" in row and "failed" in row


def test_doctor_smoke_state_never_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DESKPILOT_DATA_DIR", str(tmp_path / ("x" * 300)))  # ENAMETOOLONG
    state = doctor._smoke_state()
    assert "error" in state and "OSError" in state["error"]
    assert doctor._smoke_row(state).startswith("unreadable")
