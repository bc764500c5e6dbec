"""Gates over runs: is the newest N a trend worth trusting, and does one run pass the bar?

One clean run proves little; the trend gate asks for N runs and fails when fewer exist. By
default every selected run must be ok with no failures, errors, provider errors, empty
assistant ends, raw-markup or tool-envelope finals, or lifecycle failures. Options add bounds
(case count and names, recoveries, latency, run kind, reason codes, a stable runtime); a
profile is a named bundle of options, and an option given explicitly wins over the profile.

The same checks gate one run read directly (``--latest`` / ``--run-id``). A selected summary
that cannot be parsed fails the gate (``parse-error``): a gate never passes over what it could
not read. Each failure names its check and the run ids that failed it, with their values.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deskpilot.smoke import history, schema
from deskpilot.smoke.history import BrokenSummary, Loaded, RunSummary, Selection

EXIT_OK, EXIT_FAILED, EXIT_UNREADABLE = 0, 1, 2

#: the reason-code totals a gate can require or forbid codes in, by option label
REASON_TOTALS = (
    ("tool", "toolSelectionReasonCodes"),
    ("selected-tool", "selectedToolSelectionReasonCodes"),
    ("omitted-tool", "omittedToolSelectionReasonCodes"),
)


class GateUsageError(ValueError):
    """A gate was asked for something that does not exist (an unknown profile)."""


@dataclass(frozen=True)
class GateOptions:
    """What a gate checks beyond the defaults; None means "not checked"."""

    expect_cases: int | None = None
    expect_case_names: tuple[str, ...] | None = None
    max_recoveries: int | None = None
    max_recovery_rate: float | None = None
    max_recovery_case_runs: int | None = None
    max_request_latency_ms: float | None = None
    max_slow_requests: int | None = None
    max_empty_assistant_ends: int = 0
    max_raw_markup_finals: int = 0
    require_run_kinds: tuple[str, ...] = ()
    fail_on_recovery_increase: bool = False
    require_stable_runtime_fingerprint: bool = False
    require_stable_runtime_bounds: bool = False
    require_tool_reason_codes: tuple[str, ...] = ()
    require_selected_tool_reason_codes: tuple[str, ...] = ()
    require_omitted_tool_reason_codes: tuple[str, ...] = ()
    forbid_tool_reason_codes: tuple[str, ...] = ()
    forbid_selected_tool_reason_codes: tuple[str, ...] = ()
    forbid_omitted_tool_reason_codes: tuple[str, ...] = ()

    def reason_codes(self, mode: str, label: str) -> tuple[str, ...]:
        value: tuple[str, ...] = getattr(self, f"{mode}_{label.replace('-', '_')}_reason_codes")
        return value

    def to_json(self) -> dict[str, Any]:
        def camel(name: str) -> str:
            head, *rest = name.split("_")
            return head + "".join(part.title() for part in rest)

        return {
            camel(f.name): list(v) if isinstance(v := getattr(self, f.name), tuple) else v
            for f in dataclasses.fields(self)
        }


@dataclass(frozen=True)
class Profile:
    """A named bundle of gate options and the run kinds a trend gate selects from."""

    name: str
    run_kinds: tuple[str, ...]
    options: Mapping[str, Any]


_STRICT: dict[str, Any] = {
    "expect_cases": len(schema.FULL_SUITE_CASES),
    "expect_case_names": schema.FULL_SUITE_CASES,
    "require_run_kinds": ("full-suite",),
    "max_empty_assistant_ends": 0,
    "max_raw_markup_finals": 0,
    # bounded local repair: an occasional repaired reply is fine, a habit of them is not
    "max_recoveries": 2,
    "max_recovery_rate": 0.15,
    "max_recovery_case_runs": 3,
}
PROFILES = {
    p.name: p
    for p in (
        Profile("full-suite-strict", ("full-suite",), _STRICT),
        Profile(
            "full-suite-runtime-strict",
            ("full-suite",),
            {
                **_STRICT,
                "require_stable_runtime_fingerprint": True,
                "require_stable_runtime_bounds": True,
            },
        ),
        Profile(
            "full-suite-ranking-strict",
            ("full-suite",),
            {
                **_STRICT,
                # the agent pins its core tools, so a ranked selection always carries this
                "require_tool_reason_codes": ("caller_pinned",),
                "require_selected_tool_reason_codes": ("caller_pinned",),
                # no full-suite prompt says "only use X"; seeing it means ranking leaked
                "forbid_tool_reason_codes": ("prompt_tool_exclusive",),
            },
        ),
    )
}


if tuple(PROFILES) != schema.GATE_PROFILES:  # the command's help lists schema's names
    raise RuntimeError("schema.GATE_PROFILES is out of date with gates.PROFILES")


def resolve(
    profile: str | None, overrides: Mapping[str, Any] | None = None
) -> tuple[GateOptions, tuple[str, ...]]:
    """The effective options (profile, then explicit overrides) and the profile's run kinds."""
    base: Mapping[str, Any] = {}
    kinds: tuple[str, ...] = ()
    if profile is not None:
        if profile not in PROFILES:
            known = ", ".join(PROFILES)
            raise GateUsageError(f"unknown gate profile {profile!r} (known: {known})")
        base, kinds = PROFILES[profile].options, PROFILES[profile].run_kinds
    return dataclasses.replace(GateOptions(), **{**base, **(overrides or {})}), kinds


@dataclass(frozen=True)
class GateFailure:
    """One failed check: which, why, and the offending value per run id."""

    check: str
    message: str
    values: Mapping[str, object]

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "message": self.message,
            "runIds": list(self.values),
            "values": dict(self.values),
        }


#: a check on one run: the offending value, or None when the run passes
Probe = Callable[[RunSummary], object | None]


def _above(get: Callable[[RunSummary], float], limit: float) -> Probe:
    def probe(run: RunSummary) -> object | None:
        value = get(run)
        return value if value > limit else None

    return probe


def _total(key: str, limit: float) -> Probe:
    return _above(lambda run: run.count(key), limit)


def _equals(get: Callable[[RunSummary], object], want: object) -> Probe:
    return lambda run: None if (value := get(run)) == want else value


def _names(want: tuple[str, ...]) -> Probe:
    def probe(run: RunSummary) -> object | None:
        got = run.case_names
        if got == want:
            return None
        return {"missing": sorted(set(want) - set(got)), "unexpected": sorted(set(got) - set(want))}

    return probe


def _reason(key: str, code: str, require: bool) -> Probe:
    def probe(run: RunSummary) -> object | None:
        count = run.codes(key).get(code, 0)
        if require:
            return None if count > 0 else count
        return count if count > 0 else None

    return probe


def _run_checks(o: GateOptions) -> list[tuple[str, str, Probe]]:
    """Every per-run check the options ask for, as (check, message, probe)."""
    checks: list[tuple[str, str, Probe]] = [
        ("ok", "the run must be ok", _equals(lambda r: r.ok, True)),
        ("failures", "failures must be 0", _above(lambda r: r.failures, 0)),
        ("errors", "errors must be 0", _total("errors", 0)),
        ("provider-errors", "providerErrors must be 0", _total("providerErrors", 0)),
        ("tool-envelope-finals", "toolEnvelopeFinals must be 0", _total("toolEnvelopeFinals", 0)),
        ("lifecycle-failures", "lifecycleFailures must be 0", _total("lifecycleFailures", 0)),
    ]
    bounded: list[tuple[str, str, float | None]] = [
        ("empty-assistant-ends", "emptyAssistantEnds", o.max_empty_assistant_ends),
        ("raw-markup-finals", "rawMarkupFinals", o.max_raw_markup_finals),
        ("max-recoveries", "recoveries", o.max_recoveries),
        ("max-recovery-case-runs", "recoveryCaseRuns", o.max_recovery_case_runs),
        ("max-slow-requests", "slowRequests", o.max_slow_requests),
    ]
    checks += [
        (check, f"{key} must be <= {limit}", _total(key, limit))
        for check, key, limit in bounded
        if limit is not None
    ]
    if o.max_recovery_rate is not None:
        rate = o.max_recovery_rate
        message = f"recoveryRate must be <= {rate}"
        checks.append(
            ("max-recovery-rate", message, _above(lambda r: r.number("recoveryRate"), rate))
        )
    if o.max_request_latency_ms is not None:
        ms = o.max_request_latency_ms
        message = f"the slowest request must take <= {ms} ms"
        checks.append(
            ("max-request-latency-ms", message, _above(lambda r: r.latency_max or 0.0, ms))
        )
    if o.expect_cases is not None:
        n = o.expect_cases
        checks.append(
            ("expect-cases", f"the run must have {n} cases", _equals(lambda r: r.cases, n))
        )
    if o.expect_case_names is not None:
        want = tuple(sorted(set(o.expect_case_names)))
        checks.append(
            ("expect-case-names", "the case set must be exactly the expected names", _names(want))
        )
    if o.require_run_kinds:
        kinds = o.require_run_kinds
        message = f"runKind must be one of {', '.join(kinds)}"
        checks.append(
            ("require-run-kind", message, lambda r: None if r.run_kind in kinds else r.run_kind)
        )
    for label, key in REASON_TOTALS:
        for mode, verb in (("require", "must"), ("forbid", "must not")):
            for code in o.reason_codes(mode, label):
                check = f"{mode}-{label}-selection-reason-codes:{code}"
                probe = _reason(key, code, mode == "require")
                checks.append((check, f"{key} {verb} count {code!r}", probe))
    return checks


def _stability(good: Sequence[RunSummary], key: str) -> dict[str, list[str]]:
    """Run ids grouped by their runtime hash (``missing`` when a run has no fingerprint)."""
    groups: dict[str, list[str]] = {}
    for run in good:
        runtime = run.runtime()
        groups.setdefault(runtime[key] if runtime else "missing", []).append(run.run_id)
    return groups


@dataclass(frozen=True)
class GateResult:
    """A gate's verdict over its selected runs (GATE_SCHEMA)."""

    profile: str | None
    options: GateOptions
    requested: int
    runs: tuple[Loaded, ...]
    failures: tuple[GateFailure, ...]
    observations: Mapping[str, Any]
    selection: Selection | None = None

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def found(self) -> int:
        return len(self.runs)

    def exit_code(self) -> int:
        """0 passed, 1 a check failed, 2 a selected summary could not be parsed."""
        if any(isinstance(r, BrokenSummary) for r in self.runs):
            return EXIT_UNREADABLE
        return EXIT_OK if self.ok else EXIT_FAILED

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": schema.GATE_SCHEMA,
            "ok": self.ok,
            "profile": self.profile,
            "requested": self.requested,
            "found": self.found,
            "dir": None if self.selection is None else str(self.selection.root),
            "history": None if self.selection is None else self.selection.info(),
            "runs": [r.row() for r in self.runs],
            "thresholds": self.options.to_json(),
            "failures": [f.to_json() for f in self.failures],
            **self.observations,
        }


def evaluate(
    runs: Sequence[Loaded], options: GateOptions, requested: int, profile: str | None = None
) -> GateResult:
    """Run every check the options ask for over ``runs`` (newest first)."""
    failures: list[GateFailure] = []
    if len(runs) < requested:
        message = f"found {len(runs)} of the {requested} runs asked for"
        failures.append(GateFailure("enough-runs", message, {r.run_id: None for r in runs}))
    broken = {r.run_id: r.error for r in runs if isinstance(r, BrokenSummary)}
    if broken:
        failures.append(GateFailure("parse-error", "a selected summary cannot be parsed", broken))
    good = [r for r in runs if isinstance(r, RunSummary)]
    for check, message, probe in _run_checks(options):
        bad = {r.run_id: v for r in good if (v := probe(r)) is not None}
        if bad:
            failures.append(GateFailure(check, message, bad))
    delta = None
    if len(good) >= 2:
        latest, previous = good[0], good[1]
        more = latest.count("recoveries") - previous.count("recoveries")
        faster = round(latest.number("recoveryRate") - previous.number("recoveryRate"), 6)
        delta = {
            "latest": latest.run_id,
            "previous": previous.run_id,
            "recoveries": more,
            "recoveryRate": faster,
        }
        if options.fail_on_recovery_increase and (more > 0 or faster > 0):
            message = f"recoveries rose from {previous.run_id} to {latest.run_id}"
            values: dict[str, object] = {
                r.run_id: {
                    "recoveries": r.count("recoveries"),
                    "recoveryRate": r.number("recoveryRate"),
                }
                for r in (latest, previous)
            }
            failures.append(GateFailure("recovery-increase", message, values))
    stability = {
        "fingerprint": _stability(good, "sha256"),
        "bounds": _stability(good, "boundsSha256"),
    }
    for wanted, kind in (
        (options.require_stable_runtime_fingerprint, "fingerprint"),
        (options.require_stable_runtime_bounds, "bounds"),
    ):
        groups = stability[kind]
        if wanted and good and (len(groups) > 1 or "missing" in groups):
            shown = "; ".join(f"{sha}: {', '.join(ids)}" for sha, ids in groups.items())
            by_run: dict[str, object] = {
                run_id: sha for sha, ids in groups.items() for run_id in ids
            }
            failures.append(
                GateFailure(f"stable-runtime-{kind}", f"runtime {kind} differs ({shown})", by_run)
            )
    recovering: Counter[str] = Counter(
        str(case.get("name"))
        for run in good
        for case in run.case_results
        if history.as_int(case.get("recoveries")) > 0
    )
    observations = {
        "recoveryDelta": delta,
        "repeatedRecoveryCases": {name: n for name, n in recovering.items() if n > 1},
        "runtimeStability": stability,
    }
    return GateResult(profile, options, requested, tuple(runs), tuple(failures), observations)


def trend_gate(
    root: Path,
    n: int,
    *,
    profile: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    run_kinds: Sequence[str] | None = None,
) -> GateResult:
    """The newest ``n`` runs (of ``run_kinds``, else the profile's kinds) through the gate."""
    options, profile_kinds = resolve(profile, overrides)
    selection = history.select(root, n, profile_kinds if run_kinds is None else run_kinds)
    result = evaluate(selection.runs, options, n, profile)
    return dataclasses.replace(result, selection=selection)


def gate_run(
    run: Loaded, *, profile: str | None = None, overrides: Mapping[str, Any] | None = None
) -> GateResult:
    """One run read directly, through the same checks."""
    options, _ = resolve(profile, overrides)
    return evaluate([run], options, 1, profile)


def smoke_status(root: Path, n: int = 3, profile: str = "full-suite-strict") -> dict[str, Any]:
    """The compact state doctor shows: the latest run and the ``profile`` trend over ``n``.

    ``trendGate.status`` is ``ok``, ``failed`` or ``not-enough-runs``; with no runs at all it
    is None and no summary is opened."""
    state = history.latest_state(root)
    if not state["runs"]:
        state["trendGate"] = None
        return state
    result = trend_gate(root, n, profile=profile)
    status = "not-enough-runs" if result.found < n else ("ok" if result.ok else "failed")
    state["trendGate"] = {
        "profile": profile,
        "requested": n,
        "found": result.found,
        "status": status,
        "failedChecks": [f.check for f in result.failures],
    }
    return state
