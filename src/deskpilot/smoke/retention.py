"""The retention report: what the smoke dir holds, and which runs could be archived.

Runs pile up; an operator needs to know which of them still carry evidence before removing
anything. This module inventories every file by run id (summary, provider health, case
artifacts, a ``<stamp>-workspace/`` dir), applies a keep policy (the newest N of each run kind,
plus every run with a quality signal), and reports archive candidates, orphans (artifacts with a
run id but no summary: a run still in progress, or one that died before writing it) and files it
does not recognise.

It only reads: it never deletes, moves or rewrites a file. Acting on the report is the
operator's explicit step.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deskpilot.smoke import history, schema
from deskpilot.smoke.history import BrokenSummary, RunSummary

SAMPLE_SIZE = 5

#: a non-zero total here (or failures) keeps a run whatever its age: it is evidence of something
QUALITY_TOTALS = (
    ("recoveries", "recoveries"),
    ("providerErrors", "provider-errors"),
    ("rawMarkupFinals", "raw-markup"),
    ("toolEnvelopeFinals", "tool-envelope"),
    ("emptyAssistantEnds", "empty-assistant-ends"),
    ("errors", "errors"),
    ("lifecycleFailures", "lifecycle-failures"),
    ("watchdogTimeouts", "watchdog-timeouts"),
    ("slowRequests", "slow-requests"),
)


@dataclass(frozen=True)
class KeepPolicy:
    """How many of the newest runs of each kind to keep regardless of their signals."""

    full_suite: int = 10
    targeted: int = 10
    preflight_failed: int = 10
    empty: int = 5

    def keep(self, kind: str) -> int:
        return int(getattr(self, kind.replace("-", "_"), 0))

    def to_json(self) -> dict[str, int]:
        return {kind: self.keep(kind) for kind in schema.RUN_KINDS}


@dataclass
class _Run:
    run_id: str
    files: list[str] = field(default_factory=list)
    bytes: int = 0
    artifacts: Counter[str] = field(default_factory=Counter)
    cases: set[str] = field(default_factory=set)


def _artifact(rest: str, is_dir: bool) -> tuple[str, str | None] | None:
    """(artifact kind, case name) of what follows a stamp, or None if not an artifact."""
    if is_dir:
        return ("workspace", None) if rest == schema.SUFFIX_WORKSPACE else None
    fixed = {
        schema.SUFFIX_SUMMARY: "summary",
        schema.SUFFIX_HEALTH: "provider-health",
        schema.SUFFIX_DEBUG_SUMMARY: "debug-summary",
    }
    if rest in fixed:
        return fixed[rest], None
    for suffix in schema.CASE_SUFFIXES:
        case = rest[1 : -len(suffix)] if rest.endswith(suffix) else ""
        if rest.startswith("-") and schema.valid_case_name(case):
            return "case", case
    return None


def classify(name: str, is_dir: bool = False) -> tuple[str, str, str | None] | None:
    """(run id, artifact kind, case) of a dir entry, or None when it is not a run artifact.

    The stamp regex is greedy about a pid, so an old pid-less stamp followed by a case whose
    name starts with digits is tried both ways."""
    stamp = schema.stamp_of(name)
    if stamp is None:
        return None
    for run_id in dict.fromkeys((stamp, stamp[:15])):
        found = _artifact(name[len(run_id) :], is_dir)
        if found is not None:
            return run_id, found[0], found[1]
    return None


def _size(path: Path, is_dir: bool) -> int:
    if not is_dir:
        return path.lstat().st_size
    total = 0
    for top, _, files in os.walk(path):
        for name in files:
            try:
                total += (Path(top) / name).lstat().st_size
            except OSError:
                continue
    return total


def _signals(run: RunSummary | BrokenSummary) -> list[str]:
    if isinstance(run, BrokenSummary):
        return ["parse-error"]
    found = ["failures"] if run.failures > 0 else []
    found += [label for key, label in QUALITY_TOTALS if run.count(key) > 0]
    if run.run_kind == "preflight-failed":
        # the failure and the provider error are the preflight itself, which its kind says
        found = [s for s in found if s not in ("failures", "provider-errors")]
    return found


def _inventory(root: Path) -> tuple[dict[str, _Run], list[str]]:
    runs: dict[str, _Run] = {}
    unrecognised: list[str] = []
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return runs, unrecognised
    for entry in entries:
        is_dir = entry.is_dir(follow_symlinks=False)
        found = classify(entry.name, is_dir)
        if found is None:
            unrecognised.append(entry.name + ("/" if is_dir else ""))
            continue
        run_id, kind, case = found
        run = runs.setdefault(run_id, _Run(run_id))
        run.files.append(entry.name + ("/" if is_dir else ""))
        run.artifacts[kind] += 1
        if case is not None:
            run.cases.add(case)
        try:
            run.bytes += _size(Path(entry.path), is_dir)
        except OSError:
            continue
    return runs, unrecognised


def report(root: Path, policy: KeepPolicy | None = None) -> dict[str, Any]:
    """The retention report (RETENTION_SCHEMA); reads ``root`` and changes nothing in it."""
    policy = policy or KeepPolicy()
    runs, unrecognised = _inventory(root)
    newest_first = sorted(runs.values(), key=lambda r: history.stamp_key(r.run_id), reverse=True)
    kept_of_kind: Counter[str] = Counter()
    rows: list[dict[str, Any]] = []
    orphans: list[dict[str, Any]] = []
    for run in newest_first:
        base = {"runId": run.run_id, "files": run.files, "bytes": run.bytes}
        if not run.artifacts["summary"]:
            orphans.append(base)
            continue
        summary = history.load(run.run_id, schema.summary_path(root, run.run_id))
        kind = summary.run_kind if isinstance(summary, RunSummary) else None
        reasons = [f"quality:{signal}" for signal in _signals(summary)]
        if kind is not None and kept_of_kind[kind] < policy.keep(kind):
            kept_of_kind[kind] += 1
            reasons.insert(0, f"newest {policy.keep(kind)} {kind}")
        rows.append(
            {
                **base,
                "runKind": kind,
                "parseError": summary.error if isinstance(summary, BrokenSummary) else None,
                "artifacts": dict(run.artifacts),
                "cases": sorted(run.cases),
                "decision": "keep" if reasons else "archive-candidate",
                "keepReasons": reasons,
            }
        )
    candidates = [r for r in rows if r["decision"] == "archive-candidate"]
    return {
        "schema": schema.RETENTION_SCHEMA,
        "dir": str(root),
        "readOnly": True,
        "policy": policy.to_json(),
        "totals": {
            "runs": len(rows),
            "files": sum(len(r.files) for r in runs.values()) + len(unrecognised),
            "bytes": sum(r.bytes for r in runs.values()),
            "keep": len(rows) - len(candidates),
            "archiveCandidates": len(candidates),
            "archiveCandidateBytes": sum(r["bytes"] for r in candidates),
            "orphans": len(orphans),
            "unrecognised": len(unrecognised),
        },
        "runs": rows,
        "archiveCandidateRunIds": [r["runId"] for r in candidates],
        "archiveCandidateSample": [
            {"runId": r["runId"], "runKind": r["runKind"], "files": r["files"]}
            for r in candidates[:SAMPLE_SIZE]
        ],
        "orphans": orphans,
        "unrecognisedFiles": unrecognised,
    }
