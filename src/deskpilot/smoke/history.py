"""Listing and loading run summaries: the one place the reader opens ``<stamp>-summary.json``.

Every other reader (compare, drift, gates, retention, doctor) works on what this module returns,
so the reading rules exist once:

* a summary file is exactly ``<stamp>-summary.json``; a ``<stamp>-debug-summary.json`` or a case
  artifact is not one, however it ends;
* runs are ordered newest first by stamp (second, then pid; an old pid-less stamp still sorts);
* a summary that cannot be parsed is a ``BrokenSummary``: it keeps its place in the order and is
  reported, never silently dropped (a gate fails closed on it);
* an old summary without ``runKind`` is classified the way the runner would have classified it,
  from its case set, provider health and stop reason.

Nothing here writes: the reader half never changes a run's artifacts.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from deskpilot.smoke import schema


class SummaryError(Exception):
    """A run the caller named cannot be read: not a run id, unknown, ambiguous, unreadable dir."""


def stamp_key(stamp: str) -> tuple[str, int]:
    """Sort key of a stamp: its second, then its pid (a pid-less stamp sorts first)."""
    pid = stamp[16:]
    return stamp[:15], int(pid) if pid.isdigit() else -1


def short_sha(value: object) -> str:
    """A stable 16-hex SHA-256 of ``value`` as canonical JSON (sorted keys, no spaces)."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def as_int(value: object) -> int:
    """A JSON number as an int; anything else (absent, a bool, a string) is 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return int(value)


def _num(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value)


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _distinct(rows: Sequence[Mapping[str, Any]], key: str) -> list[str]:
    return sorted({str(row[key]) for row in rows if row.get(key)})


def _case_names(data: Mapping[str, Any]) -> tuple[str, ...]:
    """The selected case names, sorted and unique: caseSet, else cases, else caseResults."""
    names = _strings(_mapping(data.get("caseSet")).get("names"))
    if not names:
        names = _strings(data.get("cases"))
    if not names:
        results = data.get("caseResults")
        rows = results if isinstance(results, list) else []
        names = [str(r["name"]) for r in rows if isinstance(r, Mapping) and "name" in r]
    return tuple(sorted(set(names)))


def infer_run_kind(data: Mapping[str, Any]) -> str:
    """Classify a summary that lacks ``runKind`` (the runner's rule, docs/smoke.md)."""
    health = _mapping(data.get("providerHealth"))
    totals = _mapping(data.get("totals"))
    preflight_failed = data.get("stopReason") == "preflight_failed" or (
        health.get("ok") is False
        and not health.get("skipped")
        and as_int(totals.get("casesRun")) == 0
    )
    names = _case_names(data)
    if preflight_failed:
        return "preflight-failed"
    if not names:
        return "empty"
    return "full-suite" if set(names) == set(schema.FULL_SUITE_CASES) else "targeted"


def _shape_problem(data: object) -> str | None:
    """Why a decoded summary cannot be read, or None."""
    if not isinstance(data, dict):
        return "not a JSON object"
    name = data.get("schema")
    if name is not None and name != schema.SUMMARY_SCHEMA:
        return f"unsupported schema {name!r} (this reader knows {schema.SUMMARY_SCHEMA})"
    if not isinstance(data.get("ok"), bool):
        return "'ok' is missing or not a boolean"
    if "failures" in data and (
        isinstance(data["failures"], bool) or not isinstance(data["failures"], int)
    ):
        return "'failures' is not an integer"
    if "totals" in data and not isinstance(data["totals"], dict):
        return "'totals' is not an object"
    results = data.get("caseResults", [])
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        return "'caseResults' is not a list of objects"
    return None


@dataclass(frozen=True)
class BrokenSummary:
    """A summary file that exists but cannot be read; it still counts as a selected run."""

    run_id: str
    path: Path
    error: str

    def row(self) -> dict[str, Any]:
        return {"runId": self.run_id, "parseError": self.error, "runKind": None}


@dataclass(frozen=True)
class RunSummary:
    """One parsed run summary, with lenient typed accessors (an old summary may lack fields)."""

    run_id: str
    path: Path
    data: Mapping[str, Any]
    run_kind: str
    run_kind_inferred: bool

    @property
    def ok(self) -> bool:
        return self.data.get("ok") is True

    @property
    def failures(self) -> int:
        return as_int(self.data.get("failures"))

    @property
    def totals(self) -> Mapping[str, Any]:
        return _mapping(self.data.get("totals"))

    def count(self, key: str) -> int:
        """An integer total (0 when absent)."""
        return as_int(self.totals.get(key))

    def number(self, key: str) -> float:
        """A numeric total such as ``recoveryRate`` (0.0 when absent)."""
        return _num(self.totals.get(key))

    def codes(self, key: str) -> dict[str, int]:
        """A code → count total such as ``providerErrorCodes`` (non-integers dropped)."""
        raw = _mapping(self.totals.get(key))
        return {str(k): as_int(v) for k, v in raw.items() if isinstance(v, int | float)}

    @property
    def case_names(self) -> tuple[str, ...]:
        return _case_names(self.data)

    @property
    def selected_cases(self) -> list[str]:
        """The selected cases in run order (``cases``), else the sorted names."""
        return _strings(self.data.get("cases")) or list(self.case_names)

    @property
    def cases(self) -> int:
        if "cases" in self.totals:
            return self.count("cases")
        return len(self.case_names)

    @property
    def case_set_sha(self) -> str:
        given = _mapping(self.data.get("caseSet")).get("sha256")
        if isinstance(given, str) and given:
            return given
        return hashlib.sha256("\n".join(self.case_names).encode()).hexdigest()

    @property
    def case_results(self) -> list[Mapping[str, Any]]:
        results = self.data.get("caseResults")
        return [r for r in results if isinstance(r, Mapping)] if isinstance(results, list) else []

    @property
    def latency_max(self) -> float | None:
        value = _mapping(self.totals.get("requestLatencyMs")).get("max")
        return None if value is None else _num(value)

    @property
    def provider(self) -> dict[str, str | None]:
        raw = _mapping(self.data.get("provider"))
        keys = ("endpoint", "model", "profile")
        return {k: None if raw.get(k) is None else str(raw[k]) for k in keys}

    def started(self) -> float | None:
        """When the run ended (else started) as epoch seconds; the stamp as a last resort."""
        for key in ("endedAt", "startedAt"):
            value = self.data.get(key)
            if isinstance(value, str):
                try:
                    return datetime.fromisoformat(value).timestamp()
                except ValueError:
                    continue
        try:
            return time.mktime(time.strptime(self.run_id[:15], "%Y%m%d-%H%M%S"))
        except ValueError:
            return None

    def runtime(self) -> dict[str, Any] | None:
        """The run's runtime fingerprint, aggregated over its cases, with stable short hashes.

        ``sha256`` covers protocol versions, selected-tool hashes and names, ``maxTools``, the
        clipped cases and the limits; ``boundsSha256`` covers the limits alone, so a changed
        timeout shows as a bounds drift without hiding a tool-selection drift."""
        prints = [
            (str(case.get("name")), fp)
            for case in self.case_results
            if isinstance(fp := case.get("runtimeFingerprint"), Mapping)
        ]
        if not prints:
            return None
        fps = [fp for _, fp in prints]
        limits = sorted({json.dumps(_mapping(fp.get("limits")), sort_keys=True) for fp in fps})
        aggregate: dict[str, Any] = {
            "protocolVersions": _distinct(fps, "protocolVersion"),
            "selectedToolHashes": _distinct(fps, "selectedToolHash"),
            "selectedToolNames": sorted(
                {n for fp in fps for n in _strings(fp.get("selectedToolNames"))}
            ),
            "maxTools": sorted(
                {as_int(fp["maxTools"]) for fp in fps if fp.get("maxTools") is not None}
            ),
            "clippedCases": sorted(name for name, fp in prints if fp.get("clipped") is True),
            "limits": [json.loads(text) for text in limits],
        }
        return {
            **aggregate,
            "cases": len(prints),
            "sha256": short_sha(aggregate),
            "boundsSha256": short_sha(aggregate["limits"]),
        }

    def row(self) -> dict[str, Any]:
        """The run as one history row (the fields ``--history`` shows)."""
        return {
            "runId": self.run_id,
            "startedAt": self.data.get("startedAt"),
            "ok": self.ok,
            "failures": self.failures,
            "cases": self.cases,
            "runKind": self.run_kind,
            "runKindInferred": self.run_kind_inferred,
            "selectedCases": self.selected_cases,
            "caseSetSha256": self.case_set_sha,
            "model": self.provider["model"],
            "stopReason": self.data.get("stopReason"),
            "recoveries": self.count("recoveries"),
            "recoveryRate": self.number("recoveryRate"),
            "recoveryCaseRuns": self.count("recoveryCaseRuns"),
            "rawMarkupFinals": self.count("rawMarkupFinals"),
            "emptyAssistantEnds": self.count("emptyAssistantEnds"),
            "toolEnvelopeFinals": self.count("toolEnvelopeFinals"),
            "errors": self.count("errors"),
            "providerErrors": self.count("providerErrors"),
            "requestLatencyMsMax": self.latency_max,
            "slowRequests": self.count("slowRequests"),
            "lifecycleFailures": self.count("lifecycleFailures"),
            "watchdogTimeouts": self.count("watchdogTimeouts"),
        }


Loaded = RunSummary | BrokenSummary


def load(run_id: str, path: Path) -> Loaded:
    """Read one summary file; any problem becomes a ``BrokenSummary`` with the reason."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        return BrokenSummary(run_id, path, f"cannot read: {exc.strerror}")
    except UnicodeDecodeError:
        return BrokenSummary(run_id, path, "not UTF-8 text")
    except json.JSONDecodeError as exc:
        return BrokenSummary(run_id, path, f"invalid JSON: {exc.msg} (line {exc.lineno})")
    problem = _shape_problem(data)
    if problem is not None:
        return BrokenSummary(run_id, path, problem)
    given = data.get("runKind")
    if isinstance(given, str) and given in schema.RUN_KINDS:
        return RunSummary(run_id, path, data, given, False)
    return RunSummary(run_id, path, data, infer_run_kind(data), True)


def summary_files(root: Path) -> list[tuple[str, Path]]:
    """``(run id, path)`` of every summary in ``root``, newest first; [] when there is no dir."""
    try:
        with os.scandir(root) as entries:
            names = [e.name for e in entries if e.is_file()]
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        raise SummaryError(f"cannot read {root}: {exc.strerror}") from None
    found = []
    for name in names:
        stamp = schema.stamp_of(name)
        if stamp is not None and name == stamp + schema.SUFFIX_SUMMARY:
            found.append((stamp, root / name))
    found.sort(key=lambda item: stamp_key(item[0]), reverse=True)
    return found


@dataclass(frozen=True)
class Selection:
    """The newest ``requested`` runs of the wanted kinds, and what the filter left out."""

    root: Path
    requested: int | None
    run_kinds: tuple[str, ...]
    runs: tuple[Loaded, ...]
    total: int
    candidates: int

    @property
    def good(self) -> list[RunSummary]:
        return [r for r in self.runs if isinstance(r, RunSummary)]

    @property
    def broken(self) -> list[BrokenSummary]:
        return [r for r in self.runs if isinstance(r, BrokenSummary)]

    def info(self) -> dict[str, Any]:
        return {
            "totalArtifacts": self.total,
            "candidateArtifacts": self.candidates,
            "filteredOutArtifacts": self.total - self.candidates,
            "filter": {"runKinds": list(self.run_kinds)},
        }


def select(root: Path, n: int | None, run_kinds: Sequence[str] = ()) -> Selection:
    """The newest ``n`` runs (all when None) whose kind is in ``run_kinds`` (any when empty).

    A broken summary's kind is unknown, so a filter never removes it: a gate over the newest
    runs then fails closed instead of passing over a run it could not read."""
    kinds = tuple(run_kinds)
    loaded = [load(stamp, path) for stamp, path in summary_files(root)]
    candidates = [
        r for r in loaded if not kinds or isinstance(r, BrokenSummary) or r.run_kind in kinds
    ]
    chosen = candidates if n is None else candidates[:n]
    return Selection(root, n, kinds, tuple(chosen), len(loaded), len(candidates))


def find_run(root: Path, run_id: str) -> Loaded:
    """The run ``run_id`` names: an exact stamp, or a pid-less ``YYYYMMDD-HHMMSS`` that is
    either an old run's whole stamp or the prefix of exactly one newer stamp."""
    if not schema.RUN_ID.match(run_id):
        raise SummaryError(f"{run_id!r} is not a run id (YYYYMMDD-HHMMSS or YYYYMMDD-HHMMSS-PID)")
    path = schema.summary_path(root, run_id)
    if path.is_file():
        return load(run_id, path)
    matches = [(s, p) for s, p in summary_files(root) if s.startswith(run_id + "-")]
    if len(matches) == 1:
        return load(*matches[0])
    if matches:
        ids = ", ".join(s for s, _ in matches)
        raise SummaryError(f"run id {run_id} is ambiguous in {root}: {ids}")
    raise SummaryError(f"no summary for run {run_id} in {root}")


def history_report(selection: Selection, require_run_kinds: Sequence[str] = ()) -> dict[str, Any]:
    """``--history`` as JSON (HISTORY_SCHEMA): one row per selected run, newest first."""
    kinds = tuple(require_run_kinds)
    violations = [r.run_id for r in selection.good if kinds and r.run_kind not in kinds]
    return {
        "schema": schema.HISTORY_SCHEMA,
        "dir": str(selection.root),
        "requested": selection.requested,
        "found": len(selection.runs),
        "history": selection.info(),
        "runs": [r.row() for r in selection.runs],
        "allOk": all(r.ok for r in selection.good) and not selection.broken,
        "parseErrors": [r.row() for r in selection.broken],
        "requireRunKinds": list(kinds),
        "runKindViolations": violations,
    }


def latest_state(root: Path, now: float | None = None) -> dict[str, Any]:
    """The compact latest-run state (STATE_SCHEMA) doctor shows; reads one file at most."""
    files = summary_files(root)
    state: dict[str, Any] = {"schema": schema.STATE_SCHEMA, "dir": str(root), "runs": len(files)}
    if not files:
        state["latest"] = None
        return state
    run = load(*files[0])
    if isinstance(run, BrokenSummary):
        state["latest"] = run.row()
        return state
    started = run.started()
    clock = time.time() if now is None else now
    state["latest"] = {
        "runId": run.run_id,
        "runKind": run.run_kind,
        "ok": run.ok,
        "failures": run.failures,
        "ageS": None if started is None else round(max(0.0, clock - started), 1),
    }
    return state
