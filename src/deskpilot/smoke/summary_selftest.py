"""The summary reader's self-test: prove each gate fails on its bad sample, offline, in a blink.

A gate that never fails protects nothing. Against a temp dir of known-good and known-bad
summaries (written here, in the contract's shape) this proves every check of the trend gate
fails on the one sample built to break it, while the same options pass a dir of good runs (so a
failure is the sample's, not the gate's); then that compare, drift, history and retention read
what they should, and that retention left every file exactly as it was.

``sample_summary`` is also what the tests build their fixtures from.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deskpilot.smoke import compare, drift, gates, history, retention, schema

LIMITS: dict[str, Any] = {
    "perAttemptTimeoutMs": 180000,
    "totalDeadlineMs": 180000,
    "maxOutputTokens": 1024,
    "maxToolResultChars": 64000,
    "maxToolHistoryChars": 200000,
    "recoveryLimits": {"max_total_recoveries": 3},
}
_TOOLLESS = {"no-tool", "plan-mode-contract", "plan-mode-accepted-continuation"}


def stamp(i: int) -> str:
    """The i-th sample run id; a larger i is a newer run."""
    return f"20260101-12{i // 60:02d}{i % 60:02d}-{1000 + i}"


def _case(name: str, max_tools: int, limits: Mapping[str, Any]) -> dict[str, Any]:
    tools = [] if name in _TOOLLESS else ["read"]
    fingerprint: dict[str, Any] = {
        "protocolVersion": "deskpilot-json-action.v1",
        "selectedToolHash": hashlib.sha256(",".join(tools).encode()).hexdigest()[:16],
        "selectedToolNames": tools,
        "maxTools": max_tools,
        "clipped": name == "tool-selection-clipping",
        "omittedCount": 0,
        "promptSources": ["latest_user"],
        "limits": dict(limits),
    }
    return {
        "name": name,
        "ok": True,
        "skipped": False,
        "failures": [],
        "semanticFlowOk": True,
        "processLifecycleOk": True,
        "turns": 1,
        "requests": 2,
        "toolCalls": tools,
        "readPaths": [],
        "recoveries": 0,
        "recoveryCodes": {},
        "providerErrorCodes": [],
        "errors": 0,
        "rawMarkupFinal": False,
        "toolEnvelopeFinal": False,
        "emptyAssistantEnd": False,
        "finalChars": 120,
        "requestLatencyMs": {"max": 4.0, "avg": 3.0, "count": 2},
        "slowRequests": 0,
        "argumentValidationWarnings": 0,
        "argumentValidationWarningCodes": {},
        "lifecycle": {"exitStatus": 0, "timedOutByWatchdog": False, "timedOutAfterAgentEnd": False},
        "runtimeFingerprint": fingerprint,
    }


def _clean_totals(n: int) -> dict[str, Any]:
    """The totals of ``n`` clean cases: nothing failed, recovered, or went slow."""
    zero = (
        "failed", "skipped", "recoveries", "recoveryCaseRuns", "rawMarkupFinals",
        "toolEnvelopeFinals", "emptyAssistantEnds", "errors", "providerErrors",
        "retryableProviderErrors", "slowRequests", "argumentValidationWarnings",
        "lifecycleFailures", "watchdogTimeouts",
    )  # fmt: skip
    return {
        **dict.fromkeys(zero, 0),
        **{"cases": n, "casesRun": n, "passed": n, "turns": n, "toolCalls": n},
        "requests": 2 * n,
        "recoveryRate": 0.0,
        "recoveryCodes": {},
        "providerErrorCodes": {},
        "providerErrorCategories": {},
        "argumentValidationWarningCodes": {},
        "requestLatencyMs": {"max": 4.0, "avg": 3.0, "count": 2 * n},
        "slowRequestThresholdMs": schema.SLOW_REQUEST_MS,
        "toolSelectionReasonCodes": {"caller_pinned": 30, "core_tool": 4},
        "selectedToolSelectionReasonCodes": {"caller_pinned": 30},
        "omittedToolSelectionReasonCodes": {"core_tool": 2},
    }


def sample_summary(
    run_id: str,
    *,
    cases: Sequence[str] = schema.FULL_SUITE_CASES,
    totals: Mapping[str, Any] | None = None,
    model: str = "m",
    max_tools: int = 14,
    limits: Mapping[str, Any] | None = None,
    **top: Any,
) -> dict[str, Any]:
    """A clean summary in the contract's shape; ``totals`` and ``top`` override fields."""
    names = sorted(set(cases))
    n = len(cases)
    data: dict[str, Any] = {
        "schema": schema.SUMMARY_SCHEMA,
        "runId": run_id,
        "startedAt": time.strftime(
            "%Y-%m-%dT%H:%M:%SZ", time.strptime(run_id[:15], "%Y%m%d-%H%M%S")
        ),
        "deskpilotVersion": "0.1.0",
        "provider": {"endpoint": "http://127.0.0.1:8000/v1/chat/completions", "model": model},
        "selfTest": True,
        "cases": list(cases),
        "caseSet": {
            "names": names,
            "sha256": hashlib.sha256("\n".join(names).encode()).hexdigest(),
        },
        "settings": {"caseTimeoutS": 240, "requestTimeoutMs": 180000, "maxOutputTokens": 1024},
        "providerHealth": {"ok": True, "skipped": False, "latencyMs": 12.3},
        "stopReason": None,
        "ok": True,
        "failures": 0,
        "totals": _clean_totals(n),
        "caseResults": [_case(c, max_tools, limits or LIMITS) for c in cases],
    }
    data["totals"].update(totals or {})
    data.update(top)
    if "runKind" not in top:
        data["runKind"] = history.infer_run_kind(data)
    return data


def write(root: Path, run_id: str, data: Mapping[str, Any] | str) -> Path:
    """Write a summary (or raw text, for a broken one) as ``<run id>-summary.json``."""
    root.mkdir(parents=True, exist_ok=True)
    path = schema.summary_path(root, run_id)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


@dataclass(frozen=True)
class SelfTestResult:
    checks: tuple[Check, ...]
    elapsed_s: float

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": schema.SUMMARY_SELFTEST_SCHEMA,
            "ok": self.ok,
            "passed": sum(c.ok for c in self.checks),
            "failed": sum(not c.ok for c in self.checks),
            "elapsedS": round(self.elapsed_s, 3),
            "checks": [c.to_json() for c in self.checks],
        }


@dataclass(frozen=True)
class BadSample:
    """A newest run built to break exactly one gate check (``expect``)."""

    name: str
    expect: str
    bad: Mapping[str, Any] | str
    profile: str | None = "full-suite-strict"
    overrides: Mapping[str, Any] = field(default_factory=dict)
    run_kinds: tuple[str, ...] | None = None


_SHORT = schema.FULL_SUITE_CASES[:11]
BAD_SAMPLES = (
    BadSample("failed-run", "failures", {"ok": False, "failures": 1}),
    BadSample("not-ok-run", "ok", {"ok": False, "stopReason": "provider_error"}),
    BadSample("raw-markup", "raw-markup-finals", {"totals": {"rawMarkupFinals": 1}}),
    BadSample("empty-assistant-end", "empty-assistant-ends", {"totals": {"emptyAssistantEnds": 1}}),
    BadSample("tool-envelope", "tool-envelope-finals", {"totals": {"toolEnvelopeFinals": 1}}),
    BadSample("errors", "errors", {"totals": {"errors": 1}}),
    BadSample("provider-error", "provider-errors", {"totals": {"providerErrors": 1}}),
    BadSample("lifecycle-failure", "lifecycle-failures", {"totals": {"lifecycleFailures": 1}}),
    BadSample("recoveries", "max-recoveries", {"totals": {"recoveries": 3}}),
    BadSample("recovery-rate", "max-recovery-rate", {"totals": {"recoveryRate": 0.5}}),
    BadSample("recovery-case-runs", "max-recovery-case-runs", {"totals": {"recoveryCaseRuns": 4}}),
    BadSample(
        "request-latency",
        "max-request-latency-ms",
        {"totals": {"requestLatencyMs": {"max": 200000.0, "avg": 9.0, "count": 24}}},
        overrides={"max_request_latency_ms": 150000},
    ),
    BadSample(
        "slow-requests", "max-slow-requests", {"totals": {"slowRequests": 1}},
        overrides={"max_slow_requests": 0},
    ),
    BadSample(
        "case-count", "expect-cases", {"cases": _SHORT}, None, {"expect_cases": 12}, ()
    ),
    BadSample(
        "case-names", "expect-case-names", {"cases": (*_SHORT, "extra-case")}, None,
        {"expect_case_names": schema.FULL_SUITE_CASES}, (),
    ),
    BadSample(
        "run-kind", "require-run-kind", {"cases": ("read",)}, None,
        {"require_run_kinds": ("full-suite",)}, (),
    ),
    BadSample(
        "recovery-increase", "recovery-increase",
        {"totals": {"recoveries": 1, "recoveryRate": 0.04}}, None,
        {"fail_on_recovery_increase": True},
    ),
    BadSample(
        "runtime-fingerprint", "stable-runtime-fingerprint", {"max_tools": 8},
        "full-suite-runtime-strict",
    ),
    BadSample(
        "runtime-bounds", "stable-runtime-bounds", {"limits": {**LIMITS, "maxOutputTokens": 2048}},
        "full-suite-runtime-strict",
    ),
    BadSample(
        "required-reason-code", "require-tool-selection-reason-codes:caller_pinned",
        {"totals": {"toolSelectionReasonCodes": {"core_tool": 4}}}, "full-suite-ranking-strict",
    ),
    BadSample(
        "forbidden-reason-code", "forbid-tool-selection-reason-codes:prompt_tool_exclusive",
        {"totals": {"toolSelectionReasonCodes": {"caller_pinned": 30, "prompt_tool_exclusive": 1}}},
        "full-suite-ranking-strict",
    ),
    BadSample("parse-error", "parse-error", "{not json"),
)  # fmt: skip


def _good_dir(root: Path, n: int = 3) -> Path:
    for i in range(n):
        write(root, stamp(i), sample_summary(stamp(i)))
    return root


def _gate(root: Path, sample: BadSample, n: int) -> gates.GateResult:
    return gates.trend_gate(
        root, n, profile=sample.profile, overrides=sample.overrides, run_kinds=sample.run_kinds
    )


def check_bad_sample(root: Path, sample: BadSample) -> str:
    """'' when the gate passes good runs and fails the bad one on ``expect``; else why not."""
    control = _gate(_good_dir(root / "good"), sample, 3)
    if not control.ok:
        return f"the control dir failed: {[f.check for f in control.failures]}"
    bad_dir = _good_dir(root / "bad", 2)
    bad = sample.bad if isinstance(sample.bad, str) else sample_summary(stamp(9), **sample.bad)
    write(bad_dir, stamp(9), bad)
    result = _gate(bad_dir, sample, 3)
    failed = {f.check: f for f in result.failures}
    if sample.expect not in failed:
        return f"expected {sample.expect!r} to fail; failed: {sorted(failed)}"
    if stamp(9) not in failed[sample.expect].values:
        return f"{sample.expect!r} did not name the bad run {stamp(9)}"
    want_exit = gates.EXIT_UNREADABLE if isinstance(sample.bad, str) else gates.EXIT_FAILED
    if result.exit_code() != want_exit:
        return f"exit code {result.exit_code()}, expected {want_exit}"
    return ""


def _too_few_runs(root: Path) -> str:
    result = gates.trend_gate(_good_dir(root), 5)
    checks = [f.check for f in result.failures]
    return "" if checks == ["enough-runs"] and result.exit_code() == 1 else f"failed: {checks}"


def _direct_gate(root: Path) -> str:
    good = history.load(stamp(1), write(root, stamp(1), sample_summary(stamp(1))))
    bad_data = sample_summary(stamp(2), totals={"recoveries": 5})
    bad = history.load(stamp(2), write(root, stamp(2), bad_data))
    passed = gates.gate_run(good, profile="full-suite-strict")
    failed = gates.gate_run(bad, overrides={"max_recoveries": 1})
    if not passed.ok:
        return f"a good run failed: {[f.check for f in passed.failures]}"
    if [f.check for f in failed.failures] != ["max-recoveries"]:
        return f"the bad run failed on {[f.check for f in failed.failures]}"
    return ""


def _history(root: Path) -> str:
    _good_dir(root, 2)
    write(root, stamp(5), sample_summary(stamp(5), cases=("read",)))
    old = sample_summary(stamp(3))
    del old["runKind"]
    write(root, "20260101-120003", old)  # an old pid-less stamp, no runKind
    write(root, stamp(6), "[]")
    for name in (f"{stamp(5)}-debug-summary.json", f"{stamp(5)}-read.case.json", "notes.txt"):
        (root / name).write_text("{}", encoding="utf-8")
    everything = history.select(root, None)
    ids = [r.run_id for r in everything.runs]
    want = [stamp(6), stamp(5), "20260101-120003", stamp(1), stamp(0)]
    if ids != want:
        return f"order {ids}, expected {want}"
    if not isinstance(everything.runs[0], history.BrokenSummary):
        return "a summary that is a JSON list was not reported as a parse error"
    inferred = everything.runs[2]
    if not isinstance(inferred, history.RunSummary) or (
        inferred.run_kind,
        inferred.run_kind_inferred,
    ) != ("full-suite", True):
        return "the old summary's runKind was not inferred as full-suite"
    full = history.select(root, 2, ("full-suite",))
    if [r.run_id for r in full.runs] != [stamp(6), "20260101-120003"] or full.candidates != 4:
        return f"run-kind filter selected {[r.run_id for r in full.runs]}"
    found = history.find_run(root, "20260101-120001")  # a pid-less prefix of one new stamp
    return "" if found.run_id == stamp(1) else f"--run-id prefix found {found.run_id}"


def _compare(root: Path) -> str:
    a = sample_summary(stamp(1))
    b = sample_summary(stamp(2), totals={"recoveries": 1})
    b["caseResults"][2]["toolCalls"] = ["read", "read"]
    b["caseResults"][3]["finalChars"] = 9999
    ra = history.load(stamp(1), write(root, stamp(1), a))
    rb = history.load(stamp(2), write(root, stamp(2), b))
    if not isinstance(ra, history.RunSummary) or not isinstance(rb, history.RunSummary):
        return "a clean sample did not parse"
    result = compare.compare(ra, rb)
    changed = {row["name"]: sorted(row["changes"]) for row in result["cases"]}
    if changed != {a["caseResults"][2]["name"]: ["toolCalls"]}:
        return f"case deltas {changed} (final text length must not count)"
    delta = result["overall"]["recoveries"]["delta"]
    return "" if delta == 1 and result["changedOverall"] == ["recoveries"] else f"overall {delta}"


def _drift(root: Path) -> str:
    _good_dir(root, 2)
    write(root, stamp(4), sample_summary(stamp(4), model="other"))
    report = drift.drift(history.select(root, 10))
    fields = [d["field"] for d in report["drifted"]]
    if fields != ["provider.model"] or not report["ok"]:
        return f"drifted {fields}, ok {report['ok']}"
    write(root, stamp(5), "{")
    broken = drift.drift(history.select(root, 10))
    return "" if not broken["ok"] and broken["parseErrors"] else "a parse error left drift ok"


def _snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    seen: dict[str, tuple[int, int, str]] = {}
    for top, dirs, files in os.walk(root):
        for name in dirs:
            seen[str((Path(top) / name).relative_to(root)) + "/"] = (0, 0, "dir")
        for name in files:
            path = Path(top) / name
            info = path.stat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            seen[str(path.relative_to(root))] = (info.st_size, info.st_mtime_ns, digest)
    return seen


def _retention(root: Path) -> str:
    for i in range(5):
        extra: dict[str, Any] = {"totals": {"recoveries": 1}} if i == 1 else {}
        write(root, stamp(i), sample_summary(stamp(i), cases=("read",), **extra))
    (root / f"{stamp(0)}-read.events.jsonl").write_text("{}\n", encoding="utf-8")
    (root / f"{stamp(0)}-workspace").mkdir()
    (root / f"{stamp(0)}-workspace" / "f.txt").write_text("x", encoding="utf-8")
    (root / f"{stamp(8)}-read.events.jsonl").write_text("{}\n", encoding="utf-8")  # orphan
    (root / "notes.txt").write_text("hello", encoding="utf-8")
    before = _snapshot(root)
    report = retention.report(root, retention.KeepPolicy(targeted=2))
    if _snapshot(root) != before:
        return "the retention report changed the directory"
    if report["archiveCandidateRunIds"] != [stamp(2), stamp(0)]:
        return f"archive candidates {report['archiveCandidateRunIds']}"
    kept = {r["runId"]: r["keepReasons"] for r in report["runs"] if r["decision"] == "keep"}
    want = {
        stamp(4): ["newest 2 targeted"],
        stamp(3): ["newest 2 targeted"],
        stamp(1): ["quality:recoveries"],
    }
    if kept != want:
        return f"kept {kept}"
    if [o["runId"] for o in report["orphans"]] != [stamp(8)]:
        return f"orphans {report['orphans']}"
    return "" if report["unrecognisedFiles"] == ["notes.txt"] else "unrecognised files wrong"


def _doctor_state(root: Path) -> str:
    empty = gates.smoke_status(root / "none")
    if empty["runs"] != 0 or empty["trendGate"] is not None:
        return f"no runs gave {empty}"
    _good_dir(root, 2)
    two = gates.smoke_status(root)
    if two["trendGate"]["status"] != "not-enough-runs" or two["latest"]["runId"] != stamp(1):
        return f"two runs gave {two}"
    write(root, stamp(2), sample_summary(stamp(2)))
    three = gates.smoke_status(root)
    return "" if three["trendGate"]["status"] == "ok" else f"three runs gave {three}"


def run_selftest(base: Path | None = None) -> SelfTestResult:
    """Run every check in its own temp dir under ``base`` (a fresh temp dir when None)."""
    started = time.monotonic()
    named: list[tuple[str, Callable[[Path], str]]] = [
        ("gate-fails-on-too-few-runs", _too_few_runs),
        *[(f"gate-fails-on-{s.name}", lambda d, s=s: check_bad_sample(d, s)) for s in BAD_SAMPLES],
        ("direct-summary-gate", _direct_gate),
        ("history-reads-and-filters", _history),
        ("compare-uses-stable-fields", _compare),
        ("drift-observes-and-fails-only-on-parse-errors", _drift),
        ("retention-reports-and-deletes-nothing", _retention),
        ("doctor-state", _doctor_state),
    ]
    checks: list[Check] = []
    with tempfile.TemporaryDirectory(prefix="deskpilot-summary-selftest-", dir=base) as tmp:
        for i, (name, run) in enumerate(named):
            work = Path(tmp) / f"{i:02d}"
            work.mkdir()
            try:
                problem = run(work)
            except Exception as exc:  # a self-test reports; it does not crash
                problem = f"raised {type(exc).__name__}: {exc}"
            checks.append(Check(name, not problem, problem or "passed"))
    return SelfTestResult(tuple(checks), time.monotonic() - started)
