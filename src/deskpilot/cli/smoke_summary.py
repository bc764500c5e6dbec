"""``deskpilot smoke summary``: read past smoke runs (history, compare, drift, gates, retention).

The command only translates: it checks the flags, calls ``deskpilot.smoke`` (history, compare,
drift, gates, retention, summary_selftest) and prints the result, as versioned JSON with
``--json`` or as tables. Exit status: 0 ok; 1 a gate failed (or the run read directly is not
ok); 2 a usage error, an unknown run id, or a selected summary that cannot be parsed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from deskpilot.cli import smoke_views
from deskpilot.smoke import schema

if TYPE_CHECKING:  # the reader is imported when the command runs, not at every start-up
    from deskpilot.smoke import retention

EXIT_USAGE = 2
_CODE = re.compile(r"^[a-z0-9_]+$")
_GATE = "Gate options (--trend-gate, --latest, --run-id)"
_KEEP = "Retention policy (--retention-report)"
_MODES = (
    "--latest",
    "--run-id",
    "--history",
    "--compare",
    "--drift",
    "--trend-gate",
    "--retention-report",
    "--self-test",
)


class UsageError(Exception):
    """Flags that do not make sense together, or a value that is not what the flag takes."""


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(EXIT_USAGE)


def _list(
    value: str | None, flag: str, valid: Callable[[str], bool] | None = None
) -> tuple[str, ...]:
    if value is None:
        return ()
    items = tuple(part.strip() for part in value.split(",") if part.strip())
    if not items:
        raise UsageError(f"{flag} needs a comma-separated list")
    bad = [item for item in items if valid is not None and not valid(item)]
    if bad:
        raise UsageError(f"{flag}: not a valid name: {', '.join(bad)}")
    return items


def _reason_code(text: str) -> bool:
    return bool(_CODE.match(text))


def _kinds(value: str | None, flag: str) -> tuple[str, ...]:
    kinds = _list(value, flag)
    unknown = [k for k in kinds if k not in schema.RUN_KINDS]
    if unknown:
        raise UsageError(
            f"{flag}: unknown run kind {', '.join(unknown)} (known: {', '.join(schema.RUN_KINDS)})"
        )
    return kinds


def _print_json(value: dict[str, Any]) -> None:
    typer.echo(json.dumps(value, indent=2, sort_keys=True))


def _gate_overrides(given: dict[str, Any]) -> dict[str, Any]:
    """The gate options given on the command line as ``GateOptions`` fields; lists parsed."""
    overrides: dict[str, Any] = {}
    for name, value in given.items():
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_reason_codes", "_selection_reason_codes").replace("_", "-")
        if name == "expect_case_names":
            value = _list(value, flag, schema.valid_case_name)
        elif name == "require_run_kinds":
            value = _kinds(value, "--require-run-kind")
        elif name.endswith("_reason_codes"):
            value = _list(value, flag, _reason_code)
        overrides[name] = value
    return overrides


def _check_usage(
    mode: str,
    overrides: dict[str, Any],
    profile: str | None,
    keep: dict[str, int | None],
    kinds: tuple[str, ...] | None,
) -> None:
    """Refuse flags the chosen mode would silently ignore."""
    if profile is not None and profile not in schema.GATE_PROFILES:
        known = ", ".join(schema.GATE_PROFILES)
        raise UsageError(f"unknown --profile {profile!r} (known: {known})")
    gate_modes = ("--latest", "--run-id", "--trend-gate")
    gate_flags = set(overrides) - ({"require_run_kinds"} if mode == "--history" else set())
    if (gate_flags or profile is not None) and mode not in gate_modes:
        flags = "--profile, --expect-*, --max-*, --require-*, --forbid-*, --fail-on-*"
        raise UsageError(f"gate options ({flags}) apply to {', '.join(gate_modes)}, not {mode}")
    if any(v is not None for v in keep.values()) and mode != "--retention-report":
        raise UsageError(f"--keep-* options apply only to --retention-report, not {mode}")
    if kinds is not None and mode not in ("--latest", "--history", "--drift", "--trend-gate"):
        raise UsageError(f"--run-kind does not apply to {mode}")


@dataclass(frozen=True)
class _Request:
    """The checked flags: one mode, where to read, and what the gate should ask for."""

    mode: str
    root: Path
    run_kinds: tuple[str, ...] | None
    profile: str | None
    overrides: dict[str, Any]
    require_run_kinds: tuple[str, ...]
    policy: retention.KeepPolicy


def _run(request: _Request, value: Any) -> tuple[dict[str, Any], int]:
    """Do the mode; the JSON document and the exit status."""
    from deskpilot.smoke import compare, drift, gates, history, retention, summary_selftest
    from deskpilot.smoke.history import BrokenSummary, RunSummary, SummaryError

    root, mode = request.root, request.mode
    if mode in ("--latest", "--run-id", "--compare") and not root.is_dir():
        raise SummaryError(f"no smoke run summary in {root}: the directory does not exist")
    if mode == "--self-test":
        result = summary_selftest.run_selftest().to_json()
        return result, 0 if result["ok"] else 1
    if mode == "--retention-report":
        return retention.report(root, request.policy), 0
    if mode == "--history":
        report = history.history_report(
            history.select(root, value, request.run_kinds or ()), request.require_run_kinds
        )
        return report, EXIT_USAGE if report["parseErrors"] else (
            1 if report["runKindViolations"] else 0
        )
    if mode == "--drift":
        report = drift.drift(history.select(root, value, request.run_kinds or ()))
        return report, 0 if report["ok"] else EXIT_USAGE
    if mode == "--trend-gate":
        gate = gates.trend_gate(
            root,
            value,
            profile=request.profile,
            overrides=request.overrides,
            run_kinds=request.run_kinds,
        )
        return gate.to_json(), gate.exit_code()
    if mode == "--compare":
        pair = [history.find_run(root, run_id) for run_id in value]
        if pair[0].run_id == pair[1].run_id:
            raise SummaryError(f"--compare needs two different runs (both are {pair[0].run_id})")
        for run in pair:
            if isinstance(run, BrokenSummary):
                raise SummaryError(f"the summary of run {run.run_id} cannot be parsed: {run.error}")
        good = [run for run in pair if isinstance(run, RunSummary)]
        return compare.compare(good[0], good[1]), 0
    if mode == "--run-id":
        run = history.find_run(root, value)
    else:
        latest = history.select(root, 1, request.run_kinds or ()).runs
        if not latest:
            kinds = f" of kind {', '.join(request.run_kinds)}" if request.run_kinds else ""
            raise SummaryError(f"no smoke run summary{kinds} in {root}")
        run = latest[0]
    if isinstance(run, BrokenSummary):
        view: dict[str, Any] = {
            "schema": schema.RUN_VIEW_SCHEMA,
            "runId": run.run_id,
            "path": str(run.path),
            "parseError": run.error,
        }
        return view, EXIT_USAGE
    gate = gates.gate_run(run, profile=request.profile, overrides=request.overrides)
    view = {
        "schema": schema.RUN_VIEW_SCHEMA,
        "runId": run.run_id,
        "path": str(run.path),
        "row": run.row(),
        "runtime": run.runtime(),
        "gate": gate.to_json(),
        "summary": dict(run.data),
    }
    return view, gate.exit_code()


def summary(
    directory: Path | None = typer.Argument(
        None, metavar="DIR", help="The smoke dir (same as --dir).", show_default=False
    ),
    latest: bool = typer.Option(False, "--latest", help="The newest run (the default mode)."),
    run_id: str | None = typer.Option(
        None, "--run-id", metavar="ID", help="One run by id (YYYYMMDD-HHMMSS[-PID])."
    ),
    history_n: int | None = typer.Option(
        None, "--history", metavar="N", min=1, help="The newest N runs."
    ),
    compare_ids: tuple[str, str] | None = typer.Option(
        None, "--compare", metavar="A B", help="Run B against run A."
    ),
    drift_n: int | None = typer.Option(
        None, "--drift", metavar="N", min=1, help="Provider/runtime drift over N runs."
    ),
    trend_n: int | None = typer.Option(
        None, "--trend-gate", metavar="N", min=1, help="Gate the newest N runs."
    ),
    retention_report: bool = typer.Option(
        False, "--retention-report", help="Read-only keep/archive report."
    ),
    self_test: bool = typer.Option(
        False, "--self-test", help="Prove the gates fail on bad samples."
    ),
    run_kind: str | None = typer.Option(
        None, "--run-kind", metavar="LIST", help="Only runs of these kinds."
    ),
    dir_opt: Path | None = typer.Option(
        None, "--dir", metavar="DIR", help="The smoke dir (default: <data dir>/smoke)."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print versioned JSON."),
    profile: str | None = typer.Option(
        None,
        "--profile",
        help=f"A gate profile: {', '.join(schema.GATE_PROFILES)}.",
        rich_help_panel=_GATE,
    ),
    expect_cases: int | None = typer.Option(None, "--expect-cases", min=0, rich_help_panel=_GATE),
    expect_case_names: str | None = typer.Option(
        None, "--expect-case-names", metavar="A,B", rich_help_panel=_GATE
    ),
    max_recoveries: int | None = typer.Option(
        None, "--max-recoveries", min=0, rich_help_panel=_GATE
    ),
    max_recovery_rate: float | None = typer.Option(
        None, "--max-recovery-rate", min=0, rich_help_panel=_GATE
    ),
    max_recovery_case_runs: int | None = typer.Option(
        None, "--max-recovery-case-runs", min=0, rich_help_panel=_GATE
    ),
    max_request_latency_ms: float | None = typer.Option(
        None, "--max-request-latency-ms", min=0, rich_help_panel=_GATE
    ),
    max_slow_requests: int | None = typer.Option(
        None, "--max-slow-requests", min=0, rich_help_panel=_GATE
    ),
    max_empty_assistant_ends: int | None = typer.Option(
        None, "--max-empty-assistant-ends", min=0, rich_help_panel=_GATE
    ),
    max_raw_markup_finals: int | None = typer.Option(
        None, "--max-raw-markup-finals", min=0, rich_help_panel=_GATE
    ),
    require_run_kind: str | None = typer.Option(
        None,
        "--require-run-kind",
        metavar="LIST",
        help="Also with --history.",
        rich_help_panel=_GATE,
    ),
    fail_on_recovery_increase: bool = typer.Option(
        False, "--fail-on-recovery-increase", rich_help_panel=_GATE
    ),
    require_stable_runtime: bool = typer.Option(
        False, "--require-stable-runtime", help="Both stability checks.", rich_help_panel=_GATE
    ),
    require_stable_runtime_fingerprint: bool = typer.Option(
        False, "--require-stable-runtime-fingerprint", rich_help_panel=_GATE
    ),
    require_stable_runtime_bounds: bool = typer.Option(
        False, "--require-stable-runtime-bounds", rich_help_panel=_GATE
    ),
    require_tool_codes: str | None = typer.Option(
        None, "--require-tool-selection-reason-codes", metavar="LIST", rich_help_panel=_GATE
    ),
    require_selected_codes: str | None = typer.Option(
        None,
        "--require-selected-tool-selection-reason-codes",
        metavar="LIST",
        rich_help_panel=_GATE,
    ),
    require_omitted_codes: str | None = typer.Option(
        None, "--require-omitted-tool-selection-reason-codes", metavar="LIST", rich_help_panel=_GATE
    ),
    forbid_tool_codes: str | None = typer.Option(
        None, "--forbid-tool-selection-reason-codes", metavar="LIST", rich_help_panel=_GATE
    ),
    forbid_selected_codes: str | None = typer.Option(
        None, "--forbid-selected-tool-selection-reason-codes", metavar="LIST", rich_help_panel=_GATE
    ),
    forbid_omitted_codes: str | None = typer.Option(
        None, "--forbid-omitted-tool-selection-reason-codes", metavar="LIST", rich_help_panel=_GATE
    ),
    keep_full_suite: int | None = typer.Option(
        None, "--keep-full-suite", min=0, rich_help_panel=_KEEP
    ),
    keep_targeted: int | None = typer.Option(None, "--keep-targeted", min=0, rich_help_panel=_KEEP),
    keep_preflight_failed: int | None = typer.Option(
        None, "--keep-preflight-failed", min=0, rich_help_panel=_KEEP
    ),
    keep_empty: int | None = typer.Option(None, "--keep-empty", min=0, rich_help_panel=_KEEP),
) -> None:
    """Read the smoke runs under the data dir (docs/smoke.md, "Reading runs")."""
    values: dict[str, Any] = {
        "--latest": latest or None, "--run-id": run_id, "--history": history_n,
        "--compare": compare_ids, "--drift": drift_n, "--trend-gate": trend_n,
        "--retention-report": retention_report or None, "--self-test": self_test or None,
    }  # fmt: skip
    chosen = [mode for mode in _MODES if values[mode] is not None]
    if len(chosen) > 1:
        raise _fail(f"choose one mode, not {' and '.join(chosen)}")
    mode = chosen[0] if chosen else "--latest"
    keep = {
        "full_suite": keep_full_suite,
        "targeted": keep_targeted,
        "preflight_failed": keep_preflight_failed,
        "empty": keep_empty,
    }
    given = {
        "expect_cases": expect_cases,
        "expect_case_names": expect_case_names,
        "max_recoveries": max_recoveries,
        "max_recovery_rate": max_recovery_rate,
        "max_recovery_case_runs": max_recovery_case_runs,
        "max_request_latency_ms": max_request_latency_ms,
        "max_slow_requests": max_slow_requests,
        "max_empty_assistant_ends": max_empty_assistant_ends,
        "max_raw_markup_finals": max_raw_markup_finals,
        "require_run_kinds": require_run_kind,
        "fail_on_recovery_increase": fail_on_recovery_increase,
        "require_stable_runtime_fingerprint": require_stable_runtime
        or require_stable_runtime_fingerprint,
        "require_stable_runtime_bounds": require_stable_runtime or require_stable_runtime_bounds,
        "require_tool_reason_codes": require_tool_codes,
        "require_selected_tool_reason_codes": require_selected_codes,
        "require_omitted_tool_reason_codes": require_omitted_codes,
        "forbid_tool_reason_codes": forbid_tool_codes,
        "forbid_selected_tool_reason_codes": forbid_selected_codes,
        "forbid_omitted_tool_reason_codes": forbid_omitted_codes,
    }
    from deskpilot.smoke import gates, retention
    from deskpilot.smoke.history import SummaryError
    from deskpilot.store import paths

    try:
        overrides = _gate_overrides(given)
        kinds = _kinds(run_kind, "--run-kind") if run_kind is not None else None
        _check_usage(mode, overrides, profile, keep, kinds)
        if directory is not None and dir_opt is not None and directory != dir_opt:
            raise UsageError(f"two different dirs: {directory} and --dir {dir_opt}")
        root = directory or dir_opt or schema.smoke_dir(paths.data_dir())
        if root.exists() and not root.is_dir():
            raise UsageError(f"{root} is not a directory")
        given_dir = directory is not None or dir_opt is not None
        if given_dir and not root.exists() and mode != "--self-test":
            # a dir named on the command line that is not there is a typo, not "no runs yet"
            raise UsageError(f"{root} does not exist")
        policy = retention.KeepPolicy(**{k: v for k, v in keep.items() if v is not None})
        required = overrides.get("require_run_kinds", ())
        request = _Request(mode, root, kinds, profile, overrides, required, policy)
        result, code = _run(request, values[mode])
    except (UsageError, SummaryError, gates.GateUsageError) as exc:
        raise _fail(str(exc)) from None
    except OSError as exc:
        raise _fail(f"cannot read {exc.filename or 'the smoke dir'}: {exc.strerror}") from None
    if json_out:
        _print_json(result)
    else:
        smoke_views.render(mode, result)
    if code:
        raise typer.Exit(code)
