"""``deskpilot doctor``: translates flags to ``hostclient.diagnosis`` and prints the report.

Exit status: 0 ready; 1 not ready (host unavailable, a permission not granted, or the kill switch
chord cannot be armed on this display); 3 the host
is not trustworthy (untrusted, missing or incompatible); 4 the report file could not be
written.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from deskpilot.hostclient.diagnosis import Diagnosis, diagnose, write_report
from deskpilot.kernel.sharing import desktop_sharing

EXIT_NOT_READY = 1
EXIT_UNTRUSTED = 3
EXIT_REPORT_FAILED = 4


def _smoke_state() -> dict[str, Any]:
    """The latest smoke run and its full-suite-strict trend over 3 (read-only, docs/smoke.md).

    Information only: whatever the smoke dir holds, it never fails doctor or changes its exit
    status, and with no runs it opens no file."""
    try:
        from deskpilot.smoke import gates as smoke_gates  # only doctor needs the reader
        from deskpilot.smoke import schema as smoke_schema
        from deskpilot.store.paths import data_dir

        return smoke_gates.smoke_status(smoke_schema.smoke_dir(data_dir()))
    except Exception as exc:  # a broken smoke dir is reported, never fatal to doctor
        return {"error": f"{type(exc).__name__}: {exc}"}


def _smoke_row(smoke: dict[str, Any]) -> str:
    if smoke.get("error"):
        return f"unreadable: {smoke['error']}"
    latest = smoke.get("latest")
    if not latest:
        return "no runs"
    if latest.get("parseError"):
        return f"latest {latest['runId']}: unparsable summary"
    age = latest.get("ageS")
    ago = "" if age is None else f", {age / 3600:.1f} h ago"
    gate = smoke.get("trendGate") or {}
    return (
        f"latest {latest['runId']} ({latest['runKind']}): "
        f"{'ok' if latest['ok'] else 'not ok'}, {latest['failures']} failures{ago}; "
        f"trend gate {gate.get('profile')} x{gate.get('requested')}: {gate.get('status')}"
    )


def _render(report: dict[str, Any], console: Console) -> None:
    verdict = "[green]ready[/green]" if report["ready"] else "[red]not ready[/red]"
    console.print(f"deskpilot doctor ({report['mode']}): {verdict}")
    if report.get("diagnosticCode"):
        console.print(f"  diagnostic: {report['diagnosticCode']}")
    if report.get("error"):
        console.print(f"  error: {report['error'].get('message')}")
    table = Table(show_header=True, header_style="bold")
    table.add_column("item")
    table.add_column("value")
    host = report.get("host") or {}
    table.add_row("host trusted", str(report["trusted"]))
    for key in ("available", "hostVersion", "protocolVersion", "sessionType", "startMs"):
        if key in host:
            table.add_row(f"host {key}", str(host[key]))
    if host.get("unavailableReason"):
        table.add_row("unavailable because", str(host["unavailableReason"]))
    artifact = host.get("artifact") or {}
    if artifact:
        table.add_row("artifact", f"{artifact.get('mode')} ({artifact.get('filesChecked')} files)")
    for name, state in (report.get("backends") or {}).items():
        table.add_row(f"backend {name}", str(state))
    for name, state in (report.get("permissions") or {}).items():
        table.add_row(f"permission {name}", str(state))
    sup = report.get("supervisor") or {}
    if sup:
        table.add_row("supervisor", str(sup.get("state")))
        table.add_row(
            "restart budget",
            f"{sup.get('restartBudgetPerSession')} per session; "
            f"exhausted: {', '.join(sup.get('budgetExhaustedSessions') or []) or 'none'}",
        )
    vault = report.get("vault") or {}
    if vault:
        table.add_row("vault key", f"{vault.get('keyStorage')}: {vault.get('detail')}")
    gtk2 = report.get("gtk2") or {}
    if gtk2:
        table.add_row("gtk 2 apps", f"{gtk2.get('state')}: {gtk2.get('advice')}")
    for name, value in (report.get("latenciesMs") or {}).items():
        table.add_row(f"latency {name}", "-" if value is None else f"{value:.1f} ms")
    sample = report.get("sample") or {}
    if sample.get("skipped"):
        table.add_row("sample", str(sample["skipped"]))
    if sample.get("error"):
        table.add_row("sample error", str(sample["error"].get("code")))
    ks = report.get("killSwitch") or {}
    if ks:
        chord = f" ({ks['chord']})" if ks.get("chord") else ""
        table.add_row("kill switch", f"{ks.get('state')}{chord}: {ks.get('cause')}")
    lease = report.get("desktopLease") or {}
    if lease:
        holder = lease.get("holder") or {}
        who = f" by pid {holder.get('pid')}" if holder else ""
        table.add_row("desktop lease", f"{lease.get('state')}{who}")
    if "smoke" in report:
        table.add_row("smoke", _smoke_row(report["smoke"]))
    console.print(table)


def _exit_code(report: Diagnosis) -> int:
    if not report.trusted:
        return EXIT_UNTRUSTED
    return 0 if report.ready else EXIT_NOT_READY


def doctor(
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    verify_host: bool = typer.Option(
        False,
        "--verify-host",
        help="Deployment self-check: verify and start the host, read-only, no window, no action.",
    ),
    report_path: Path | None = typer.Option(
        None, "--report", help="Also write the JSON report to this new file (mode 0600)."
    ),
    app: str | None = typer.Option(
        None,
        "--app",
        help="Measure latencies on this app (name, pid or 0x window id), not a zenity dialog.",
    ),
) -> None:
    """Readiness, backends, permissions, supervisor state and latencies of the desktop."""
    report = asyncio.run(diagnose(verify_only=verify_host, app=app))
    data = report.to_dict()
    data.update(desktop_sharing())
    data["smoke"] = _smoke_state()
    kill_switch_down = bool((data.get("killSwitch") or {}).get("blocksReady"))
    if kill_switch_down:
        data["ready"] = False
    text = json.dumps(data, indent=2, sort_keys=True)
    if json_out:
        typer.echo(text)
    else:
        _render(data, Console())
    if report_path is not None:
        try:
            write_report(report_path, text + "\n")
        except OSError as exc:
            typer.echo(f"cannot write the report to {report_path}: {exc.strerror}", err=True)
            raise typer.Exit(EXIT_REPORT_FAILED) from None
    code = _exit_code(report)
    if kill_switch_down and not code:
        code = EXIT_NOT_READY
    if code:
        raise typer.Exit(code)
