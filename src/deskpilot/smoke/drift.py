"""Drift over the newest N runs: did the provider, the case set or the runtime change under us?

A smoke trend is evidence only if the runs measured the same thing. This report lays the
identity of each run side by side (provider and model, run kind, case-set hash, the runtime
fingerprint aggregated per run: protocol versions, selected tools, ``maxTools`` and clipping,
limits) next to its quality counters, and names the identity fields whose value differs
between runs. It is observation only: fewer runs than asked for, or drift, is not a failure;
only a selected summary that cannot be parsed makes the report not ok.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from deskpilot.smoke import schema
from deskpilot.smoke.history import RunSummary, Selection

#: identity fields compared across runs (dotted paths into a drift row)
TRACKED_FIELDS = (
    "deskpilotVersion",
    "provider.endpoint",
    "provider.model",
    "provider.profile",
    "runKind",
    "caseSetSha256",
    "settings",
    "runtime.sha256",
    "runtime.boundsSha256",
    "runtime.protocolVersions",
    "runtime.selectedToolNames",
    "runtime.maxTools",
)


def drift_row(run: RunSummary) -> dict[str, Any]:
    """One run's identity and quality counters as the drift report shows it."""
    return {
        "runId": run.run_id,
        "deskpilotVersion": run.data.get("deskpilotVersion"),
        "provider": run.provider,
        "runKind": run.run_kind,
        "caseSetSha256": run.case_set_sha,
        "settings": run.data.get("settings"),
        "recoveries": run.count("recoveries"),
        "recoveryRate": run.number("recoveryRate"),
        "providerErrors": run.count("providerErrors"),
        "retryableProviderErrors": run.count("retryableProviderErrors"),
        "providerErrorCodes": run.codes("providerErrorCodes"),
        "providerErrorCategories": run.codes("providerErrorCategories"),
        "argumentValidationWarnings": run.count("argumentValidationWarnings"),
        "argumentValidationWarningCodes": run.codes("argumentValidationWarningCodes"),
        "rawMarkupFinals": run.count("rawMarkupFinals"),
        "emptyAssistantEnds": run.count("emptyAssistantEnds"),
        "lifecycleFailures": run.count("lifecycleFailures"),
        "slowRequests": run.count("slowRequests"),
        "requestLatencyMsMax": run.latency_max,
        "runtime": run.runtime(),
    }


def _at(row: dict[str, Any], path: str) -> object:
    value: object = row
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _drifted(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    drifted, stable = [], []
    for field in TRACKED_FIELDS:
        groups: dict[str, dict[str, Any]] = {}
        for row in rows:
            value = _at(row, field)
            key = json.dumps(value, sort_keys=True)
            groups.setdefault(key, {"value": value, "runIds": []})["runIds"].append(row["runId"])
        if len(groups) > 1:
            drifted.append({"field": field, "values": list(groups.values())})
        else:
            stable.append(field)
    return drifted, stable


def _totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    codes: Counter[str] = Counter()
    categories: Counter[str] = Counter()
    for row in rows:
        codes.update(row["providerErrorCodes"])
        categories.update(row["providerErrorCategories"])
    latencies = [r["requestLatencyMsMax"] for r in rows if r["requestLatencyMsMax"] is not None]
    summed = (
        "recoveries",
        "providerErrors",
        "retryableProviderErrors",
        "rawMarkupFinals",
        "emptyAssistantEnds",
        "lifecycleFailures",
        "slowRequests",
    )
    return {
        **{key: sum(r[key] for r in rows) for key in summed},
        "providerErrorCodes": dict(codes),
        "providerErrorCategories": dict(categories),
        "requestLatencyMsMax": max(latencies) if latencies else None,
    }


def drift(selection: Selection) -> dict[str, Any]:
    """The drift report (DRIFT_SCHEMA) over an already-selected set of runs."""
    rows = [drift_row(run) for run in selection.good]
    drifted, stable = _drifted(rows)
    broken = [r.row() for r in selection.broken]
    return {
        "schema": schema.DRIFT_SCHEMA,
        "dir": str(selection.root),
        "requested": selection.requested,
        "found": len(selection.runs),
        "history": selection.info(),
        "ok": not broken,
        "parseErrors": broken,
        "runs": rows,
        "drifted": drifted,
        "stableFields": stable,
        "totals": _totals(rows),
    }
