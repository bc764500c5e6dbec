"""A case's record and a run's summary (docs/smoke.md, "The run summary": the contract).

Everything here is counted from artifacts — the agent's events, the provider's debug log, the
lifecycle record — never from what the runner believes happened, so a summary rebuilt from the
same files is the same summary.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from deskpilot import __version__
from deskpilot.smoke.case_model import Case, Failure, Observation
from deskpilot.smoke.checks import offered_tools, raw_markup, reason_codes, tool_envelope
from deskpilot.smoke.lifecycle import Lifecycle
from deskpilot.smoke.schema import CASE_SCHEMA, SLOW_REQUEST_MS, SUMMARY_SCHEMA


def sha256(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def case_set(names: Sequence[str]) -> dict[str, Any]:
    """Sorted, de-duplicated names and their hash: the same set is the same fingerprint
    whatever order the cases were asked for in."""
    canon = sorted(set(names))
    return {"names": canon, "sha256": hashlib.sha256("\n".join(canon).encode()).hexdigest()}


def latency(values: Sequence[float]) -> dict[str, Any]:
    if not values:
        return {"max": None, "avg": None, "count": 0}
    return {
        "max": round(max(values), 1),
        "avg": round(sum(values) / len(values), 1),
        "count": len(values),
    }


def _latencies(obs: Observation) -> list[float]:
    out: list[float] = []
    for record in obs.debug:
        if record.get("event") in ("response", "error.provider"):
            value = (record.get("data") or {}).get("request_latency_ms")
            if isinstance(value, int | float):
                out.append(float(value))
    return out


def runtime_fingerprint(obs: Observation) -> dict[str, Any]:
    """What shaped the model's view in this case: protocol, the tools shown, the limits."""
    starts = obs.debug_of("turn.start")
    protocols = sorted(
        {str(s.get("protocol_version")) for s in starts if s.get("protocol_version")}
    )
    hashes = sorted(
        {str(s.get("selected_tool_hash")) for s in starts if s.get("selected_tool_hash")}
    )
    names = sorted({str(n) for s in starts for n in s.get("selected_tool_names") or []})
    bounds: dict[str, Any] = next(
        (s["runtime_bounds"] for s in starts if isinstance(s.get("runtime_bounds"), dict)), {}
    )
    core = {
        "protocolVersion": protocols[0] if len(protocols) == 1 else protocols,
        "selectedToolHash": hashes[0] if len(hashes) == 1 else hashes,
        "selectedToolNames": names,
        "maxTools": bounds.get("maxTools"),
        "clipped": any(bool(s.get("tool_selection_clipped")) for s in starts),
        "omittedCount": max(
            (int(s.get("tool_selection_omitted_count") or 0) for s in starts), default=0
        ),
        "promptSources": sorted({str(s.get("tool_selection_prompt_source")) for s in starts}),
        "limits": bounds,
    }
    return {**core, "sha256": sha256(core), "boundsSha256": sha256(bounds)}


def case_record(
    case: Case,
    obs: Observation,
    lifecycle: Lifecycle,
    failures: Sequence[Failure],
    *,
    stalled: bool = False,
) -> dict[str, Any]:
    """One ``caseResults`` entry (also written alone as ``<stamp>-<case>.case.json``)."""
    runs = obs.tool_runs()
    final = obs.final()
    recoveries = [d for d in obs.debug if str(d.get("event", "")).startswith("recovery.")]
    provider_errors = list(obs.debug_of("error.provider"))
    if stalled:  # the endpoint never answered the last request: a provider timeout in effect
        provider_errors.append(
            {"errorCode": "request_stalled", "errorCategory": "timeout", "retryable": True}
        )
    unended = lifecycle.agent_end_s is None and (lifecycle.timed_out or lifecycle.interrupted)
    warnings = obs.debug_of("argument_validation.warning")
    lat = _latencies(obs)
    semantic = [f for f in failures if f.code != "process_lifecycle"]
    tools = offered_tools(obs)
    return {
        "schema": CASE_SCHEMA,
        "name": case.name,
        "ok": not failures,
        "skipped": False,
        "failures": [f.to_json() for f in failures],
        "semanticFlowOk": not semantic,
        "processLifecycleOk": lifecycle.ok,
        "turns": len(obs.of("turn_end")),
        "requests": len(obs.debug_of("request")),
        "toolCalls": [r.name for r in runs],
        "readPaths": [r.path for r in runs if r.name == "read" and r.path is not None],
        "recoveries": len(recoveries),
        "recoveryCodes": dict(Counter(str((d.get("data") or {}).get("code")) for d in recoveries)),
        "providerErrorCodes": [str(e.get("errorCode")) for e in provider_errors],
        "providerErrorCategories": [str(e.get("errorCategory")) for e in provider_errors],
        "retryableProviderErrors": sum(1 for e in provider_errors if e.get("retryable")),
        "errors": len(obs.of("error")),
        "errorCodes": [str(e.get("code")) for e in obs.of("error")],
        "rawMarkupFinal": bool(final) and raw_markup(final or ""),
        "toolEnvelopeFinal": bool(final) and tool_envelope(final or "", tools),
        # a task that failed with an error has no answer; that is the error, not an empty end
        "emptyAssistantEnd": not (final or "").strip() and not obs.of("error") and not unended,
        "finalChars": len(final or ""),
        "requestLatencyMs": latency(lat),
        "slowRequests": sum(1 for v in lat if v >= SLOW_REQUEST_MS),
        "argumentValidationWarnings": sum(
            int(w.get("argument_validation_warning_count") or 0) for w in warnings
        ),
        "argumentValidationWarningCodes": dict(
            Counter(
                str(c) for w in warnings for c in w.get("argument_validation_warning_codes") or []
            )
        ),
        "toolSelectionReasonCodes": dict(
            reason_codes(obs.debug_of("turn.start"), "selected")
            + reason_codes(obs.debug_of("turn.start"), "omitted")
        ),
        "selectedToolSelectionReasonCodes": dict(
            reason_codes(obs.debug_of("turn.start"), "selected")
        ),
        "omittedToolSelectionReasonCodes": dict(
            reason_codes(obs.debug_of("turn.start"), "omitted")
        ),
        "lifecycle": {k: v for k, v in lifecycle.to_json().items() if k != "schema"},
        "runtimeFingerprint": runtime_fingerprint(obs),
    }


def skipped_record(name: str, reason: str) -> dict[str, Any]:
    return {"schema": CASE_SCHEMA, "name": name, "ok": False, "skipped": True, "reason": reason}


def _sum(records: Sequence[Mapping[str, Any]], key: str) -> int:
    return sum(int(r.get(key) or 0) for r in records)


def _counts(records: Sequence[Mapping[str, Any]], key: str) -> dict[str, int]:
    total: Counter[str] = Counter()
    for r in records:
        value = r.get(key)
        if isinstance(value, dict):
            total.update({str(k): int(v) for k, v in value.items()})
        elif isinstance(value, list):
            total.update(str(v) for v in value)
    return dict(total)


def _lat(record: Mapping[str, Any]) -> dict[str, Any]:
    value = record.get("requestLatencyMs")
    return value if isinstance(value, dict) else {"max": None, "avg": None, "count": 0}


def totals(records: Sequence[Mapping[str, Any]], selected: int) -> dict[str, Any]:
    ran = [r for r in records if not r.get("skipped")]
    requests = _sum(ran, "requests")
    recoveries = _sum(ran, "recoveries")
    lats = [_lat(r) for r in ran]
    lat_max = [x["max"] for x in lats if x.get("max") is not None]
    lat_count = sum(int(x.get("count") or 0) for x in lats)
    lat_total = sum((x.get("avg") or 0) * int(x.get("count") or 0) for x in lats)
    lifecycle = [r["lifecycle"] for r in ran if isinstance(r.get("lifecycle"), dict)]
    return {
        "cases": selected,
        "casesRun": len(ran),
        "passed": sum(1 for r in ran if r.get("ok")),
        "failed": sum(1 for r in ran if not r.get("ok")),
        "skipped": selected - len(ran),
        "turns": _sum(ran, "turns"),
        "requests": requests,
        "toolCalls": sum(len(r.get("toolCalls") or []) for r in ran),
        "recoveries": recoveries,
        "recoveryRate": round(recoveries / requests, 4) if requests else 0.0,
        "recoveryCaseRuns": sum(1 for r in ran if int(r.get("recoveries") or 0) > 0),
        "recoveryCodes": _counts(ran, "recoveryCodes"),
        "rawMarkupFinals": sum(1 for r in ran if r.get("rawMarkupFinal")),
        "toolEnvelopeFinals": sum(1 for r in ran if r.get("toolEnvelopeFinal")),
        "emptyAssistantEnds": sum(1 for r in ran if r.get("emptyAssistantEnd")),
        "errors": _sum(ran, "errors"),
        "providerErrors": sum(len(r.get("providerErrorCodes") or []) for r in ran),
        "retryableProviderErrors": _sum(ran, "retryableProviderErrors"),
        "providerErrorCodes": _counts(ran, "providerErrorCodes"),
        "providerErrorCategories": _counts(ran, "providerErrorCategories"),
        "requestLatencyMs": {
            "max": max(lat_max) if lat_max else None,
            "avg": round(lat_total / lat_count, 1) if lat_count else None,
            "count": lat_count,
        },
        "slowRequests": _sum(ran, "slowRequests"),
        "slowRequestThresholdMs": SLOW_REQUEST_MS,
        "argumentValidationWarnings": _sum(ran, "argumentValidationWarnings"),
        "argumentValidationWarningCodes": _counts(ran, "argumentValidationWarningCodes"),
        "lifecycleFailures": sum(1 for life in lifecycle if not life.get("processLifecycleOk")),
        "watchdogTimeouts": sum(1 for life in lifecycle if life.get("timedOutByWatchdog")),
        "toolSelectionReasonCodes": _counts(ran, "toolSelectionReasonCodes"),
        "selectedToolSelectionReasonCodes": _counts(ran, "selectedToolSelectionReasonCodes"),
        "omittedToolSelectionReasonCodes": _counts(ran, "omittedToolSelectionReasonCodes"),
    }


def run_kind(selected: Sequence[str], full_suite: Sequence[str], preflight_ok: bool) -> str:
    if not preflight_ok:
        return "preflight-failed"
    if not selected:
        return "empty"
    return "full-suite" if set(selected) == set(full_suite) else "targeted"


def build_summary(
    *,
    run_id: str,
    started_at: str,
    ended_at: str,
    elapsed_s: float,
    provider: Mapping[str, Any],
    self_test: bool,
    profile: str | None,
    selected: Sequence[str],
    full_suite: Sequence[str],
    settings: Mapping[str, Any],
    health: Mapping[str, Any],
    stop_reason: str | None,
    records: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    preflight_failed = stop_reason == "preflight_failed"
    failed = sum(1 for r in records if not r.get("ok") and not r.get("skipped"))
    failures = failed + (1 if preflight_failed else 0)
    counted = totals(records, len(selected))
    error = health.get("error")
    if preflight_failed and isinstance(error, Mapping):  # the preflight's error is a provider error
        counted["providerErrors"] += 1
        for key, field in (("providerErrorCodes", "code"), ("providerErrorCategories", "category")):
            name = str(error.get(field))
            counted[key][name] = counted[key].get(name, 0) + 1
        if error.get("retryable"):
            counted["retryableProviderErrors"] += 1
    return {
        "schema": SUMMARY_SCHEMA,
        "runId": run_id,
        "startedAt": started_at,
        "endedAt": ended_at,
        "elapsedS": round(elapsed_s, 2),
        "deskpilotVersion": __version__,
        "provider": dict(provider),
        "selfTest": self_test,
        "profile": profile,
        "runKind": run_kind(selected, full_suite, not preflight_failed),
        "cases": list(selected),
        "caseSet": case_set(selected),
        "settings": dict(settings),
        "providerHealth": dict(health),
        "stopReason": stop_reason,
        # a case that could not run here is not a pass: the run is not ok either
        "ok": failures == 0 and stop_reason is None and not any(r.get("skipped") for r in records),
        "failures": failures,
        "totals": counted,
        "caseResults": [{k: v for k, v in r.items() if k != "schema"} for r in records],
    }
