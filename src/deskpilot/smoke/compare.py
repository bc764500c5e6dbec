"""Compare two runs: what moved between run A and run B, in the fields that mean something.

A regression hunt starts with "what changed since the last good run". The overall deltas cover
the quality counters; the case-level deltas look only at stable fields (turns, the tool-call
sequence, recoveries, the error / raw-markup / empty / tool-envelope flags, provider error codes,
process lifecycle), never at the final text's length, which drifts every run and would bury a
real change in noise. Observation only: a comparison never fails.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deskpilot.smoke import schema
from deskpilot.smoke.history import RunSummary

#: the overall counters compared (``cases`` is the run's case count, the rest are totals)
OVERALL_FIELDS = (
    "failures",
    "cases",
    "recoveries",
    "recoveryRate",
    "rawMarkupFinals",
    "emptyAssistantEnds",
    "toolEnvelopeFinals",
    "errors",
    "providerErrors",
    "lifecycleFailures",
    "watchdogTimeouts",
)
#: the per-case fields compared; deliberately without ``finalChars``
CASE_FIELDS = (
    "ok",
    "skipped",
    "turns",
    "toolCalls",
    "recoveries",
    "errors",
    "rawMarkupFinal",
    "emptyAssistantEnd",
    "toolEnvelopeFinal",
    "providerErrorCodes",
    "processLifecycleOk",
)


def _overall(run: RunSummary, field: str) -> float:
    if field == "cases":
        return run.cases
    if field == "failures":
        return run.failures
    return run.number(field) if field == "recoveryRate" else run.count(field)


def _case_value(case: Mapping[str, Any], field: str) -> object:
    value = case.get(field)
    if field == "providerErrorCodes":
        # the set of codes matters, not the order the cases met them in
        return sorted(str(v) for v in value) if isinstance(value, list) else []
    if field == "toolCalls":
        return [str(v) for v in value] if isinstance(value, list) else []
    return value


def _cases(run: RunSummary) -> dict[str, Mapping[str, Any]]:
    return {str(c.get("name")): c for c in run.case_results if c.get("name") is not None}


def _side(run: RunSummary) -> dict[str, Any]:
    return {
        "runId": run.run_id,
        "runKind": run.run_kind,
        "ok": run.ok,
        "caseSetSha256": run.case_set_sha,
        "model": run.provider["model"],
    }


def compare(a: RunSummary, b: RunSummary) -> dict[str, Any]:
    """Run B against run A (COMPARE_SCHEMA); a delta is ``b - a``."""
    overall: dict[str, dict[str, Any]] = {}
    for field in OVERALL_FIELDS:
        va, vb = _overall(a, field), _overall(b, field)
        delta = round(vb - va, 6) if field == "recoveryRate" else int(vb - va)
        overall[field] = {"a": va, "b": vb, "delta": delta}
    changed = [f for f, row in overall.items() if row["delta"]]
    if a.ok != b.ok:
        changed.insert(0, "ok")
    cases_a, cases_b = _cases(a), _cases(b)
    names = list(cases_a) + [n for n in cases_b if n not in cases_a]
    case_rows: list[dict[str, Any]] = []
    for name in names:
        ca, cb = cases_a.get(name), cases_b.get(name)
        if ca is None or cb is None:
            presence = "b-only" if ca is None else "a-only"
            case_rows.append({"name": name, "presence": presence, "changes": {}})
            continue
        changes = {
            field: {"a": _case_value(ca, field), "b": _case_value(cb, field)}
            for field in CASE_FIELDS
            if _case_value(ca, field) != _case_value(cb, field)
        }
        if changes:
            case_rows.append({"name": name, "presence": "both", "changes": changes})
    return {
        "schema": schema.COMPARE_SCHEMA,
        "a": _side(a),
        "b": _side(b),
        "ok": {"a": a.ok, "b": b.ok, "changed": a.ok != b.ok},
        "overall": overall,
        "changedOverall": changed,
        "caseSetChanged": a.case_set_sha != b.case_set_sha,
        "cases": case_rows,
        "unchangedCases": len(names) - len(case_rows),
        "identical": not changed and not case_rows and a.case_set_sha == b.case_set_sha,
    }
