"""The summary reader (deskpilot.smoke: history, compare, drift, gates, retention) on real files.

Every test writes summaries in the contract's shape (docs/smoke.md) into a temp dir and reads
them back through the same functions the CLI uses; nothing is mocked.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from deskpilot.smoke import compare, drift, gates, history, retention, schema
from deskpilot.smoke.history import BrokenSummary, RunSummary, SummaryError
from deskpilot.smoke.summary_selftest import (
    BAD_SAMPLES,
    LIMITS,
    run_selftest,
    sample_summary,
    stamp,
    write,
)


def put(root: Path, i: int, **kwargs: Any) -> str:
    """Write the i-th sample run (larger i = newer); returns its run id."""
    write(root, stamp(i), sample_summary(stamp(i), **kwargs))
    return stamp(i)


def loaded(root: Path, run_id: str) -> RunSummary:
    run = history.find_run(root, run_id)
    assert isinstance(run, RunSummary)
    return run


def snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    seen = {}
    for top, dirs, files in os.walk(root):
        for name in dirs:
            seen[os.path.join(top, name) + "/"] = (0, 0, "")
        for name in files:
            path = Path(top) / name
            info = path.stat()
            seen[str(path)] = (
                info.st_size,
                info.st_mtime_ns,
                hashlib.sha256(path.read_bytes()).hexdigest(),
            )
    return seen


# --- history -------------------------------------------------------------------------------


def test_history_lists_only_summaries_newest_first_by_stamp_and_pid(tmp_path: Path) -> None:
    write(tmp_path, "20260101-120000-99", sample_summary("20260101-120000-99"))
    write(tmp_path, "20260101-120000-1000", sample_summary("20260101-120000-1000"))
    write(tmp_path, "20251231-235959", sample_summary("20251231-235959"))
    for name in (
        "20260101-120000-1000-debug-summary.json",
        "20260101-120000-1000-read.case.json",
        "20260101-120000-1000-provider-health.json",
        "notes-summary.json",
        "README.txt",
    ):
        (tmp_path / name).write_text("{}", encoding="utf-8")
    ids = [run_id for run_id, _ in history.summary_files(tmp_path)]
    # pid 1000 is newer than pid 99 in the same second: numeric, not lexical
    assert ids == ["20260101-120000-1000", "20260101-120000-99", "20251231-235959"]


def test_a_missing_dir_is_an_empty_history_and_is_not_created(tmp_path: Path) -> None:
    root = tmp_path / "nothing"
    assert history.select(root, 5).runs == ()
    assert history.latest_state(root) == {
        "schema": schema.STATE_SCHEMA,
        "dir": str(root),
        "runs": 0,
        "latest": None,
    }
    assert not root.exists()


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{not json", "invalid JSON"),
        ("[]", "not a JSON object"),
        (json.dumps({"schema": "deskpilot.smoke-summary.v9", "ok": True}), "unsupported schema"),
        (json.dumps({"schema": schema.SUMMARY_SCHEMA, "ok": "yes"}), "'ok'"),
        (json.dumps({"ok": True, "totals": []}), "'totals'"),
        (json.dumps({"ok": True, "caseResults": {}}), "'caseResults'"),
        (json.dumps({"ok": True, "failures": "0"}), "'failures'"),
    ],
)
def test_an_unparsable_summary_is_reported_not_dropped(
    tmp_path: Path, text: str, reason: str
) -> None:
    put(tmp_path, 0)
    write(tmp_path, stamp(1), text)
    selection = history.select(tmp_path, 5)
    assert [r.run_id for r in selection.runs] == [stamp(1), stamp(0)]
    broken = selection.broken
    assert len(broken) == 1 and reason in broken[0].error
    report = history.history_report(selection)
    assert report["parseErrors"] == [
        {"runId": stamp(1), "parseError": broken[0].error, "runKind": None}
    ]
    assert report["allOk"] is False


def test_an_old_summary_without_runkind_is_classified(tmp_path: Path) -> None:
    def kind(**kwargs: Any) -> str:
        data = sample_summary(stamp(0), **kwargs)
        del data["runKind"]
        return history.infer_run_kind(data)

    assert kind() == "full-suite"
    assert kind(cases=("read", "no-tool")) == "targeted"
    assert kind(cases=()) == "empty"
    assert kind(stopReason="preflight_failed") == "preflight-failed"
    failed_health = {"ok": False, "skipped": False, "error": {"code": "http_401"}}
    assert kind(providerHealth=failed_health, totals={"casesRun": 0}) == "preflight-failed"
    # a failed health check that did not stop the cases is not a preflight failure
    assert kind(providerHealth=failed_health) == "full-suite"
    data = sample_summary(stamp(0), cases=("read",))
    data["runKind"] = "weird"
    write(tmp_path, stamp(0), data)
    run = loaded(tmp_path, stamp(0))
    assert (run.run_kind, run.run_kind_inferred) == ("targeted", True)
    assert run.row()["runKindInferred"] is True


def test_run_kind_filter_selects_after_filtering_and_keeps_broken_runs(tmp_path: Path) -> None:
    for i in range(3):
        put(tmp_path, i)
    put(tmp_path, 3, cases=("read",))
    write(tmp_path, stamp(4), "{")
    selection = history.select(tmp_path, 3, ("full-suite",))
    assert [r.run_id for r in selection.runs] == [stamp(4), stamp(2), stamp(1)]
    assert selection.info() == {
        "totalArtifacts": 5,
        "candidateArtifacts": 4,
        "filteredOutArtifacts": 1,
        "filter": {"runKinds": ["full-suite"]},
    }
    targeted = history.select(tmp_path, None, ("targeted",))
    assert [r.run_id for r in targeted.good] == [stamp(3)]


def test_find_run_by_new_stamp_old_stamp_and_unique_prefix(tmp_path: Path) -> None:
    put(tmp_path, 1)
    write(tmp_path, "20250101-000000", sample_summary("20250101-000000"))
    assert history.find_run(tmp_path, stamp(1)).run_id == stamp(1)
    assert history.find_run(tmp_path, "20250101-000000").run_id == "20250101-000000"
    assert history.find_run(tmp_path, stamp(1)[:15]).run_id == stamp(1)
    write(tmp_path, stamp(1)[:15] + "-7", sample_summary(stamp(1)[:15] + "-7"))
    with pytest.raises(SummaryError, match="ambiguous"):
        history.find_run(tmp_path, stamp(1)[:15])
    with pytest.raises(SummaryError, match="no summary"):
        history.find_run(tmp_path, "20990101-000000")
    for bad in ("latest", "../20260101-120001-1001", "20260101-1200"):
        with pytest.raises(SummaryError, match="not a run id"):
            history.find_run(tmp_path, bad)


def test_latest_state_is_compact_and_ages_from_the_summary(tmp_path: Path) -> None:
    put(tmp_path, 0)
    put(tmp_path, 1, ok=False, failures=2, endedAt="2026-01-01T12:00:00+00:00")
    ended = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC).timestamp()
    state = history.latest_state(tmp_path, now=ended + 90)
    assert state["runs"] == 2
    assert state["latest"] == {
        "runId": stamp(1),
        "runKind": "full-suite",
        "ok": False,
        "failures": 2,
        "ageS": 90.0,
    }
    write(tmp_path, stamp(2), "{")
    assert history.latest_state(tmp_path)["latest"]["parseError"].startswith("invalid JSON")


# --- compare -------------------------------------------------------------------------------


def test_compare_reports_stable_case_fields_and_ignores_final_text_length(tmp_path: Path) -> None:
    a = sample_summary(stamp(0))
    b = sample_summary(
        stamp(1), ok=False, failures=1, totals={"recoveries": 2, "recoveryRate": 0.1}
    )
    b["caseResults"][2]["toolCalls"] = ["read", "bash"]  # read
    b["caseResults"][2]["finalChars"] = 5000
    b["caseResults"][1]["finalChars"] = 1  # bash-pwd: only the text length moved
    a["caseResults"][4]["providerErrorCodes"] = ["http_429", "network_error"]
    b["caseResults"][4]["providerErrorCodes"] = ["network_error", "http_429"]  # same set
    b["caseResults"][5]["processLifecycleOk"] = False
    b["caseResults"].pop()  # tool-result-injection only in A
    write(tmp_path, stamp(0), a)
    write(tmp_path, stamp(1), b)
    result = compare.compare(loaded(tmp_path, stamp(0)), loaded(tmp_path, stamp(1)))
    assert result["schema"] == schema.COMPARE_SCHEMA
    cases = {row["name"]: row for row in result["cases"]}
    assert set(cases) == {"read", "plan-mode-contract", "tool-result-injection"}
    assert cases["read"]["changes"] == {"toolCalls": {"a": ["read"], "b": ["read", "bash"]}}
    assert cases["plan-mode-contract"]["changes"] == {"processLifecycleOk": {"a": True, "b": False}}
    assert cases["tool-result-injection"]["presence"] == "a-only"
    assert result["overall"]["recoveries"] == {"a": 0, "b": 2, "delta": 2}
    assert result["overall"]["recoveryRate"]["delta"] == 0.1
    assert result["changedOverall"] == ["ok", "failures", "recoveries", "recoveryRate"]
    assert result["ok"] == {"a": True, "b": False, "changed": True}
    assert result["identical"] is False


def test_compare_of_equal_runs_is_identical(tmp_path: Path) -> None:
    put(tmp_path, 0)
    put(tmp_path, 1)
    result = compare.compare(loaded(tmp_path, stamp(0)), loaded(tmp_path, stamp(1)))
    assert result["identical"] is True and result["cases"] == [] and result["unchangedCases"] == 12


# --- drift and the runtime fingerprint ------------------------------------------------------


def test_runtime_fingerprint_is_stable_short_and_separates_bounds(tmp_path: Path) -> None:
    put(tmp_path, 0)
    put(tmp_path, 1)
    put(tmp_path, 2, max_tools=8)
    put(tmp_path, 3, limits={**LIMITS, "totalDeadlineMs": 1})
    rt = [loaded(tmp_path, stamp(i)).runtime() for i in range(4)]
    assert all(r is not None for r in rt)
    r0, r1, r2, r3 = (r or {} for r in rt)
    assert len(r0["sha256"]) == 16 and int(r0["sha256"], 16) >= 0
    assert r0["sha256"] == r1["sha256"] and r0["boundsSha256"] == r1["boundsSha256"]
    assert r2["sha256"] != r0["sha256"] and r2["boundsSha256"] == r0["boundsSha256"]
    assert r3["boundsSha256"] != r0["boundsSha256"]
    assert r0["maxTools"] == [14] and r0["clippedCases"] == ["tool-selection-clipping"]
    assert r0["protocolVersions"] == ["deskpilot-json-action.v1"]
    no_fp = sample_summary(stamp(4))
    for case in no_fp["caseResults"]:
        del case["runtimeFingerprint"]
    write(tmp_path, stamp(4), no_fp)
    assert loaded(tmp_path, stamp(4)).runtime() is None


def test_drift_names_drifted_fields_and_only_fails_on_parse_errors(tmp_path: Path) -> None:
    put(tmp_path, 0, totals={"providerErrorCodes": {"http_429": 1}, "providerErrors": 1})
    put(tmp_path, 1, model="other", max_tools=8)
    report = drift.drift(history.select(tmp_path, 10))
    assert report["schema"] == schema.DRIFT_SCHEMA
    assert report["ok"] is True and report["requested"] == 10 and report["found"] == 2
    drifted = {d["field"]: d["values"] for d in report["drifted"]}
    assert set(drifted) == {"provider.model", "runtime.sha256", "runtime.maxTools"}
    assert drifted["provider.model"] == [
        {"value": "other", "runIds": [stamp(1)]},
        {"value": "m", "runIds": [stamp(0)]},
    ]
    assert "runtime.boundsSha256" in report["stableFields"]
    assert report["totals"]["providerErrorCodes"] == {"http_429": 1}
    write(tmp_path, stamp(2), "nope")
    broken = drift.drift(history.select(tmp_path, 10))
    assert broken["ok"] is False and broken["parseErrors"][0]["runId"] == stamp(2)


# --- gates ---------------------------------------------------------------------------------


def test_trend_gate_passes_clean_runs_and_fails_when_too_few(tmp_path: Path) -> None:
    for i in range(3):
        put(tmp_path, i)
    ok = gates.trend_gate(tmp_path, 3, profile="full-suite-strict")
    assert ok.ok and ok.exit_code() == 0 and ok.found == 3
    data = ok.to_json()
    assert data["schema"] == schema.GATE_SCHEMA
    assert data["thresholds"]["maxRecoveries"] == 2
    assert data["thresholds"]["expectCaseNames"] == list(schema.FULL_SUITE_CASES)
    too_few = gates.trend_gate(tmp_path, 4, profile="full-suite-strict")
    assert [f.check for f in too_few.failures] == ["enough-runs"]
    assert too_few.exit_code() == 1


@pytest.mark.parametrize(
    ("totals", "check"),
    [
        ({"errors": 1}, "errors"),
        ({"providerErrors": 1}, "provider-errors"),
        ({"emptyAssistantEnds": 1}, "empty-assistant-ends"),
        ({"rawMarkupFinals": 1}, "raw-markup-finals"),
        ({"toolEnvelopeFinals": 1}, "tool-envelope-finals"),
        ({"lifecycleFailures": 1}, "lifecycle-failures"),
    ],
)
def test_default_checks_fail_without_any_option(
    tmp_path: Path, totals: dict[str, int], check: str
) -> None:
    put(tmp_path, 0)
    bad = put(tmp_path, 1, totals=totals)
    result = gates.trend_gate(tmp_path, 2)
    assert [(f.check, list(f.values)) for f in result.failures] == [(check, [bad])]


def test_explicit_options_override_the_profile(tmp_path: Path) -> None:
    for i in range(3):
        put(tmp_path, i, totals={"recoveries": 3, "recoveryRate": 0.2})
    strict = gates.trend_gate(tmp_path, 3, profile="full-suite-strict")
    assert {f.check for f in strict.failures} == {"max-recoveries", "max-recovery-rate"}
    assert strict.failures[0].to_json()["runIds"] == [stamp(2), stamp(1), stamp(0)]
    relaxed = gates.trend_gate(
        tmp_path,
        3,
        profile="full-suite-strict",
        overrides={"max_recoveries": 3, "max_recovery_rate": 0.25},
    )
    assert relaxed.ok
    purity = gates.trend_gate(tmp_path, 3, overrides={"max_recoveries": 0})
    assert [f.check for f in purity.failures] == ["max-recoveries"]


def test_profile_selects_full_suite_runs_unless_run_kind_is_given(tmp_path: Path) -> None:
    for i in range(3):
        put(tmp_path, i)
    put(tmp_path, 3, cases=("read",))
    assert gates.trend_gate(tmp_path, 3, profile="full-suite-strict").ok
    mixed = gates.trend_gate(tmp_path, 3, profile="full-suite-strict", run_kinds=())
    failed = {f.check: list(f.values) for f in mixed.failures}
    assert failed["require-run-kind"] == [stamp(3)]
    assert failed["expect-cases"] == [stamp(3)]
    assert failed["expect-case-names"] == [stamp(3)]
    names = next(f for f in mixed.failures if f.check == "expect-case-names")
    assert names.values[stamp(3)] == {
        "missing": sorted(set(schema.FULL_SUITE_CASES) - {"read"}),
        "unexpected": [],
    }


def test_reason_code_requirements_and_prohibitions(tmp_path: Path) -> None:
    put(tmp_path, 0)
    put(tmp_path, 1, totals={"omittedToolSelectionReasonCodes": {}})
    overrides = {
        "require_omitted_tool_reason_codes": ("core_tool",),
        "forbid_selected_tool_reason_codes": ("caller_pinned",),
    }
    result = gates.trend_gate(tmp_path, 2, overrides=overrides)
    failed = {f.check: dict(f.values) for f in result.failures}
    assert failed == {
        "require-omitted-tool-selection-reason-codes:core_tool": {stamp(1): 0},
        "forbid-selected-tool-selection-reason-codes:caller_pinned": {stamp(1): 30, stamp(0): 30},
    }
    ranking = gates.trend_gate(tmp_path, 2, profile="full-suite-ranking-strict")
    assert ranking.ok


def test_runtime_stability_and_recovery_increase(tmp_path: Path) -> None:
    put(tmp_path, 0)
    put(tmp_path, 1, max_tools=8, totals={"recoveries": 1, "recoveryRate": 0.04})
    result = gates.trend_gate(
        tmp_path,
        2,
        overrides={"require_stable_runtime_fingerprint": True, "fail_on_recovery_increase": True},
    )
    failed = {f.check: f for f in result.failures}
    assert set(failed) == {"stable-runtime-fingerprint", "recovery-increase"}
    assert set(failed["stable-runtime-fingerprint"].values) == {stamp(0), stamp(1)}
    data = result.to_json()
    assert data["recoveryDelta"] == {
        "latest": stamp(1),
        "previous": stamp(0),
        "recoveries": 1,
        "recoveryRate": 0.04,
    }
    assert len(data["runtimeStability"]["fingerprint"]) == 2
    assert len(data["runtimeStability"]["bounds"]) == 1
    assert gates.trend_gate(tmp_path, 2, overrides={"require_stable_runtime_bounds": True}).ok


def test_a_selected_parse_error_fails_closed_with_exit_2(tmp_path: Path) -> None:
    put(tmp_path, 0)
    put(tmp_path, 1)
    write(tmp_path, stamp(2), "{")
    result = gates.trend_gate(tmp_path, 3, profile="full-suite-strict")
    assert [f.check for f in result.failures] == ["parse-error"]
    assert result.exit_code() == 2
    # outside the newest N it is not selected, so it does not count
    write(tmp_path, stamp(2), json.dumps(sample_summary(stamp(2))))
    write(tmp_path, "20250101-000000", "{")
    assert gates.trend_gate(tmp_path, 3).ok


def test_direct_gate_on_one_run(tmp_path: Path) -> None:
    run = loaded(tmp_path, put(tmp_path, 0, totals={"requestLatencyMs": {"max": 9000.0}}))
    assert gates.gate_run(run, profile="full-suite-strict").ok
    slow = gates.gate_run(run, overrides={"max_request_latency_ms": 5000})
    assert [(f.check, dict(f.values)) for f in slow.failures] == [
        ("max-request-latency-ms", {stamp(0): 9000.0})
    ]
    not_ok = loaded(tmp_path, put(tmp_path, 1, ok=False, stopReason="provider_error"))
    assert [f.check for f in gates.gate_run(not_ok).failures] == ["ok"]
    with pytest.raises(gates.GateUsageError):
        gates.gate_run(run, profile="nope")


def test_smoke_status_for_doctor(tmp_path: Path) -> None:
    assert gates.smoke_status(tmp_path)["trendGate"] is None
    put(tmp_path, 0)
    assert gates.smoke_status(tmp_path)["trendGate"]["status"] == "not-enough-runs"
    put(tmp_path, 1)
    put(tmp_path, 2)
    assert gates.smoke_status(tmp_path)["trendGate"]["status"] == "ok"
    put(tmp_path, 3, totals={"rawMarkupFinals": 1})
    state = gates.smoke_status(tmp_path)
    assert state["trendGate"]["status"] == "failed"
    assert state["trendGate"]["failedChecks"] == ["raw-markup-finals"]
    assert state["latest"]["runId"] == stamp(3)


# --- retention -----------------------------------------------------------------------------


def test_retention_report_inventories_keeps_and_never_changes_anything(tmp_path: Path) -> None:
    for i in range(3):
        put(tmp_path, i)
    put(tmp_path, 3, cases=("read",))
    put(tmp_path, 4, ok=False, failures=1, stopReason="preflight_failed", cases=("read",))
    put(tmp_path, 5, cases=("read",), totals={"rawMarkupFinals": 1})
    write(tmp_path, stamp(6), "{")
    old = stamp(0)
    for suffix in schema.CASE_SUFFIXES:
        (tmp_path / f"{old}-read{suffix}").write_text("x", encoding="utf-8")
    (tmp_path / f"{old}-7zip.case.json").write_text("x", encoding="utf-8")
    schema.health_path(tmp_path, old).write_text("{}", encoding="utf-8")
    (tmp_path / f"{old}-workspace" / "sub").mkdir(parents=True)
    (tmp_path / f"{old}-workspace" / "sub" / "f").write_text("12345", encoding="utf-8")
    (tmp_path / f"{stamp(9)}-read.events.jsonl").write_text("x", encoding="utf-8")
    (tmp_path / f"{stamp(9)}-provider-health.json").write_text("{}", encoding="utf-8")
    (tmp_path / "stray.txt").write_text("x", encoding="utf-8")
    (tmp_path / f"{old}-read.unknown").write_text("x", encoding="utf-8")
    (tmp_path / "somedir").mkdir()
    before = snapshot(tmp_path)
    policy = retention.KeepPolicy(full_suite=1, targeted=0, preflight_failed=0, empty=0)
    report = retention.report(tmp_path, policy)
    assert snapshot(tmp_path) == before
    assert report["schema"] == schema.RETENTION_SCHEMA and report["readOnly"] is True
    rows = {r["runId"]: r for r in report["runs"]}
    assert rows[stamp(6)]["keepReasons"] == ["quality:parse-error"]
    assert rows[stamp(5)]["keepReasons"] == ["quality:raw-markup"]
    assert rows[stamp(2)]["keepReasons"] == ["newest 1 full-suite"]
    # a preflight failure is its kind, not a quality signal: it ages out like any other run
    assert rows[stamp(4)]["decision"] == "archive-candidate"
    assert report["archiveCandidateRunIds"] == [stamp(4), stamp(3), stamp(1), stamp(0)]
    assert report["archiveCandidateSample"][-1]["files"] == rows[old]["files"]
    assert rows[old]["artifacts"] == {
        "summary": 1, "provider-health": 1, "case": 6, "workspace": 1,
    }  # fmt: skip
    assert rows[old]["cases"] == ["7zip", "read"]
    assert f"{old}-workspace/" in rows[old]["files"]
    assert [o["runId"] for o in report["orphans"]] == [stamp(9)]
    assert sorted(report["orphans"][0]["files"]) == sorted(
        [f"{stamp(9)}-read.events.jsonl", f"{stamp(9)}-provider-health.json"]
    )
    assert report["unrecognisedFiles"] == [f"{old}-read.unknown", "somedir/", "stray.txt"]
    assert report["totals"]["archiveCandidates"] == 4 and report["totals"]["orphans"] == 1
    assert report["policy"] == {"full-suite": 1, "targeted": 0, "preflight-failed": 0, "empty": 0}


def test_retention_default_policy(tmp_path: Path) -> None:
    for i in range(12):
        put(tmp_path, i)
    report = retention.report(tmp_path)
    assert report["policy"] == {
        "full-suite": 10,
        "targeted": 10,
        "preflight-failed": 10,
        "empty": 5,
    }
    assert report["archiveCandidateRunIds"] == [stamp(1), stamp(0)]


# --- the self-test -------------------------------------------------------------------------


def test_summary_selftest_passes_offline_quickly() -> None:
    started = time.monotonic()
    result = run_selftest()
    assert time.monotonic() - started < 5
    failed = [(c.name, c.detail) for c in result.checks if not c.ok]
    assert failed == []
    names = {c.name for c in result.checks}
    assert {f"gate-fails-on-{s.name}" for s in BAD_SAMPLES} <= names
    assert "retention-reports-and-deletes-nothing" in names
    data = result.to_json()
    assert data["schema"] == schema.SUMMARY_SELFTEST_SCHEMA
    assert data["passed"] == len(result.checks) and data["failed"] == 0


def test_every_gate_check_has_a_bad_sample_in_the_selftest() -> None:
    sampled = {s.expect.split(":")[0] for s in BAD_SAMPLES}
    options = gates.GateOptions(
        expect_cases=1, expect_case_names=("a",), max_recoveries=0, max_recovery_rate=0,
        max_recovery_case_runs=0, max_request_latency_ms=0, max_slow_requests=0,
        require_run_kinds=("full-suite",),
        **{f"{m}_{label.replace('-', '_')}_reason_codes": ("x",)
           for m in ("require", "forbid") for label, _ in gates.REASON_TOTALS},
    )  # fmt: skip
    per_run = {name.split(":")[0] for name, _, _ in gates._run_checks(options)}
    # the three reason-code totals share one probe; the self-test samples the aggregate one
    per_run -= {
        "require-selected-tool-selection-reason-codes",
        "require-omitted-tool-selection-reason-codes",
        "forbid-selected-tool-selection-reason-codes",
        "forbid-omitted-tool-selection-reason-codes",
    }
    cross_run = {"parse-error", "recovery-increase", "stable-runtime-fingerprint"}
    cross_run |= {"stable-runtime-bounds"}
    assert per_run | cross_run <= sampled


def test_broken_summary_row_shape() -> None:
    row = BrokenSummary("20260101-000000", Path("x"), "invalid JSON").row()
    assert row == {"runId": "20260101-000000", "parseError": "invalid JSON", "runKind": None}
