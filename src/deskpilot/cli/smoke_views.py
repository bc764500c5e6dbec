"""How ``deskpilot smoke summary`` shows its results to a person: one renderer per mode.

The JSON documents (``--json``) are the results themselves; these tables are a view of the
same dicts, so nothing is computed here that the JSON lacks.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table


def console(*, stderr: bool = False) -> Console:
    """Piped output is not cut at 80 columns (run ids and case names must stay whole)."""
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, width=None if stream.isatty() else 160)


def _table(*columns: str) -> Table:
    table = Table(
        show_header=True, header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1)
    )
    for i, name in enumerate(columns):
        table.add_column(name, no_wrap=i == 0, min_width=len(name), overflow="fold")
    return table


def _verdict(ok: bool, good: str = "ok", bad: str = "FAILED") -> str:
    return f"[green]{good}[/green]" if ok else f"[red]{bad}[/red]"


#: the quality counters a history row shows, when non-zero, as ``label=count``
_SIGNALS = (
    ("raw", "rawMarkupFinals"),
    ("empty", "emptyAssistantEnds"),
    ("envelope", "toolEnvelopeFinals"),
    ("errors", "errors"),
    ("provider", "providerErrors"),
    ("slow", "slowRequests"),
    ("lifecycle", "lifecycleFailures"),
    ("watchdog", "watchdogTimeouts"),
)


def _runs_table(rows: list[dict[str, Any]]) -> Table:
    table = _table("run id", "kind", "ok", "fail", "cases", "rec", "rate", "ms", "signals")
    for row in rows:
        if "parseError" in row:
            table.add_row(row["runId"], f"[red]parse error: {row['parseError']}[/red]")
            continue
        signals = [f"{label}={row[key]}" for label, key in _SIGNALS if row.get(key)]
        latency = row.get("requestLatencyMsMax")
        table.add_row(
            row["runId"],
            row["runKind"] + ("*" if row.get("runKindInferred") else ""),
            _verdict(bool(row["ok"]), "yes", "no"),
            str(row["failures"]),
            str(row["cases"]),
            str(row["recoveries"]),
            f"{row['recoveryRate']:.2f}",
            "-" if latency is None else f"{latency:.0f}",
            " ".join(signals) or "-",
        )
    return table


def _gate_failures(console: Console, result: dict[str, Any]) -> None:
    if not result["failures"]:
        return
    table = _table("check", "runs", "message")
    for failure in result["failures"]:
        table.add_row(failure["check"], ", ".join(failure["runIds"]) or "-", failure["message"])
    console.print(table)


def _render_gate(console: Console, result: dict[str, Any]) -> None:
    profile = f" ({result['profile']})" if result["profile"] else ""
    info = result["history"] or {}
    console.print(
        f"trend gate{profile}: {_verdict(result['ok'], 'passed')} — {result['found']} of "
        f"{result['requested']} runs; {info.get('filteredOutArtifacts', 0)} filtered out"
    )
    console.print(_runs_table(result["runs"]))
    _gate_failures(console, result)


def _render_run(console: Console, view: dict[str, Any]) -> None:
    row, gate = view["row"], view["gate"]
    console.print(f"run {view['runId']} ({row['runKind']}): gate {_verdict(gate['ok'], 'passed')}")
    console.print(_runs_table([row]))
    _gate_failures(console, gate)


def _render_history(console: Console, result: dict[str, Any]) -> None:
    console.print(f"{result['found']} runs, newest first (* = runKind inferred)")
    console.print(_runs_table(result["runs"]))
    if result["runKindViolations"]:
        kinds = ", ".join(result["requireRunKinds"])
        ids = ", ".join(result["runKindViolations"])
        console.print(f"[red]not of kind {kinds}: {ids}[/red]")


def _render_compare(console: Console, result: dict[str, Any]) -> None:
    a, b = result["a"], result["b"]
    console.print(
        f"compare {a['runId']} → {b['runId']}" + (" (identical)" if result["identical"] else "")
    )
    table = _table("field", "a", "b", "delta")
    table.add_row("ok", str(a["ok"]), str(b["ok"]), "changed" if result["ok"]["changed"] else "")
    for field, row in result["overall"].items():
        table.add_row(
            field, str(row["a"]), str(row["b"]), "" if not row["delta"] else f"{row['delta']:+}"
        )
    console.print(table)
    if result["cases"]:
        cases = _table("case", "presence", "changes")
        for row in result["cases"]:
            changes = "; ".join(f"{k}: {v['a']} → {v['b']}" for k, v in row["changes"].items())
            cases.add_row(row["name"], row["presence"], changes)
        console.print(cases)


def _render_drift(console: Console, result: dict[str, Any]) -> None:
    console.print(f"drift over {result['found']} of {result['requested']} runs")
    table = _table("run id", "model", "kind", "case set", "runtime", "bounds", "recov", "prov")
    for row in result["runs"]:
        runtime = row["runtime"] or {}
        table.add_row(
            row["runId"], str(row["provider"]["model"]), row["runKind"], row["caseSetSha256"][:12],
            runtime.get("sha256", "-"), runtime.get("boundsSha256", "-"),
            str(row["recoveries"]), str(row["providerErrors"]),
        )  # fmt: skip
    console.print(table)
    for broken in result["parseErrors"]:
        console.print(f"[red]{broken['runId']}: parse error: {broken['parseError']}[/red]")
    for item in result["drifted"]:
        groups = "; ".join(
            f"{json.dumps(v['value'])}: {', '.join(v['runIds'])}" for v in item["values"]
        )
        console.print(f"[yellow]drifted[/yellow] {item['field']}: {groups}")
    if not result["drifted"]:
        console.print("no drift in " + ", ".join(result["stableFields"]))


def _render_retention(console: Console, result: dict[str, Any]) -> None:
    totals = result["totals"]
    console.print(
        f"retention (read-only) of {result['dir']}: {totals['runs']} runs, {totals['keep']} keep, "
        f"{totals['archiveCandidates']} archive candidates, {totals['orphans']} orphans, "
        f"{totals['unrecognised']} unrecognised"
    )
    table = _table("run id", "kind", "files", "bytes", "decision", "why kept")
    for row in result["runs"]:
        decision = row["decision"] if row["decision"] == "keep" else "[yellow]archive?[/yellow]"
        kind = row["runKind"] or "[red]unparsable[/red]"
        table.add_row(
            row["runId"],
            kind,
            str(len(row["files"])),
            str(row["bytes"]),
            decision,
            ", ".join(row["keepReasons"]),
        )
    console.print(table)
    for orphan in result["orphans"]:
        console.print(f"orphan {orphan['runId']}: {', '.join(orphan['files'])}")
    for name in result["unrecognisedFiles"]:
        console.print(f"unrecognised: {name}")


def _render_selftest(console: Console, result: dict[str, Any]) -> None:
    counts = f"{result['passed']} passed, {result['failed']} failed, {result['elapsedS']} s"
    console.print(f"summary self-test: {_verdict(result['ok'], 'passed')} ({counts})")
    table = _table("check", "result")
    for check in result["checks"]:
        table.add_row(check["name"], _verdict(check["ok"], "passed", check["detail"]))
    console.print(table)


def render(mode: str, result: dict[str, Any]) -> None:
    """Print ``result`` of ``mode`` for a person (``--json`` prints it as it is)."""
    out = console()
    if "parseError" in result and mode in ("--latest", "--run-id"):
        typer.echo(
            f"error: the summary of run {result['runId']} cannot be parsed: {result['parseError']}",
            err=True,
        )
        return
    renderers: dict[str, Callable[[Console, dict[str, Any]], None]] = {
        "--latest": _render_run,
        "--run-id": _render_run,
        "--history": _render_history,
        "--compare": _render_compare,
        "--drift": _render_drift,
        "--trend-gate": _render_gate,
        "--retention-report": _render_retention,
        "--self-test": _render_selftest,
    }
    renderers[mode](out, result)
