"""``deskpilot smoke [...]`` and ``deskpilot smoke summary [...]``: translate to deskpilot.smoke.

The runner's options are on the group itself (``deskpilot smoke --profile quick``); the reader
of past runs is the ``summary`` sub-command (cli/smoke_summary.py).

Exit codes (docs/smoke.md)::

    0  every selected case passed (--self-test: every check passed)
    1  a case failed (or a self-test check)
    2  usage: an unknown case or profile, a missing helper (the agent command, Xvfb …)
    3  the provider preflight failed: no case ran, the summary says why
    130  interrupted (Ctrl-C or SIGTERM): the running case's agent is ended, the rest are
         skipped, the summary is written
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from deskpilot.cli import smoke_summary
from deskpilot.cli.smoke_views import console

app = typer.Typer(
    help="The live smoke suite (deskpilot agent per case against the configured endpoint) "
    "and its telemetry gates (smoke summary).",
    invoke_without_command=True,
)
app.command("summary")(smoke_summary.summary)

EXIT_USAGE = 2


def _emit(data: Any) -> None:
    sys.stdout.buffer.write((json.dumps(data, ensure_ascii=False) + "\n").encode("utf-8"))
    sys.stdout.flush()


def _names(raw: list[str] | None) -> list[str]:
    return [n.strip() for item in raw or [] for n in item.split(",") if n.strip()]


def _list_cases(as_json: bool) -> None:
    from deskpilot.smoke.cases import ALL_CASES, PROFILES, profiles_of

    if as_json:
        _emit(
            {
                "cases": [
                    {
                        "name": c.name,
                        "summary": c.summary,
                        "desktop": c.desktop,
                        "profiles": profiles_of(c.name),
                    }
                    for c in ALL_CASES
                ],
                "profiles": {k: list(v) for k, v in PROFILES.items()},
            }
        )
        return
    table = Table("case", "profiles", "what it proves")
    table.columns[0].no_wrap = True
    for c in ALL_CASES:
        table.add_row(c.name, ", ".join(profiles_of(c.name)), c.summary)
    console().print(table)


def _plan(as_json: bool) -> None:
    from deskpilot.smoke.coverage import plan

    data = plan()
    if as_json:
        _emit(data)
        return
    table = Table("tool", "coverage", "cases")
    table.columns[0].no_wrap = True
    for row in data["tools"]:
        table.add_row(row["tool"], row["coverage"], ", ".join(row["cases"] or row["offeredBy"]))
    out = console()
    out.print(table)
    out.print(
        f"{data['live']} of {len(data['tools'])} tools run in a live case; the rest are proved "
        "only by the offline tests (static) or only offered."
    )


def _progress(console: Console) -> Any:
    def show(record: dict[str, Any]) -> None:
        if record.get("skipped"):
            console.print(f"[yellow]skip[/yellow] {record['name']}: {record.get('reason')}")
            return
        life = record.get("lifecycle") or {}
        mark = "[green]pass[/green]" if record.get("ok") else "[red]FAIL[/red]"
        console.print(f"{mark} {record['name']}  {life.get('elapsedSeconds', '?')} s")
        for failure in record.get("failures") or []:
            console.print(f"     {failure['code']}: {failure['message']}")

    return show


def _self_test(cases: list[Any], as_json: bool) -> int:
    from deskpilot.smoke.selftest import self_test

    checks = self_test(cases, os.environ)
    ok = all(c.ok for c in checks)
    if as_json:
        _emit(
            {
                "schema": "deskpilot.smoke-self-test.v1",
                "ok": ok,
                "checks": [c.to_json() for c in checks],
            }
        )
    else:
        out = console()
        for c in checks:
            mark = "[green]ok[/green]" if c.ok else "[red]FAILED[/red]"
            out.print(f"{mark}  {c.name}: {c.detail}")
    return 0 if ok else 1


@app.callback()
def smoke(
    ctx: typer.Context,
    profile: Annotated[
        list[str] | None,
        typer.Option(help="quick | full-suite | desktop | extension-low-risk (repeatable)."),
    ] = None,
    case: Annotated[
        list[str] | None, typer.Option(help="Cases to run, comma-separated (with --profile too).")
    ] = None,
    list_cases: Annotated[bool, typer.Option("--list-cases", help="List the cases.")] = False,
    plan: Annotated[
        bool, typer.Option("--plan", help="Which model-callable tools the cases cover.")
    ] = False,
    self_test: Annotated[
        bool,
        typer.Option("--self-test", help="Prove the runner against a scripted model, offline."),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    case_timeout: Annotated[
        float, typer.Option(help="Watchdog per case, seconds.", min=5, max=3600)
    ] = 240.0,
    request_timeout_ms: Annotated[
        int, typer.Option(help="Per model request.", min=1000, max=600_000)
    ] = 180_000,
    max_output_tokens: Annotated[
        int, typer.Option(help="Output tokens per model request.", min=16, max=131_072)
    ] = 1024,
    keep_going: Annotated[
        bool, typer.Option("--keep-going", help="Run on after a provider error.")
    ] = False,
    no_preflight: Annotated[
        bool, typer.Option("--no-preflight", help="Skip the provider health preflight.")
    ] = False,
) -> None:
    """Run the smoke suite against the configured endpoint (docs/smoke.md)."""
    if ctx.invoked_subcommand is not None:
        return
    from deskpilot.smoke.cases import SelectionError, select

    if list_cases:
        _list_cases(as_json)
        raise typer.Exit(0)
    if plan:
        _plan(as_json)
        raise typer.Exit(0)
    for flag, given in (("--case", case), ("--profile", profile)):
        if given is not None and not _names(given):
            typer.echo(f"error: {flag} needs at least one name (see --list-cases)", err=True)
            raise typer.Exit(EXIT_USAGE)
    try:
        cases = select(_names(profile), _names(case))
    except SelectionError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    if self_test:
        raise typer.Exit(_self_test(cases, as_json))
    raise typer.Exit(
        _run(
            cases,
            profile=",".join(_names(profile)) or None,
            as_json=as_json,
            case_timeout=case_timeout,
            request_timeout_ms=request_timeout_ms,
            max_output_tokens=max_output_tokens,
            keep_going=keep_going,
            preflight=not no_preflight,
        )
    )


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _run(cases: list[Any], *, profile: str | None, as_json: bool, **knobs: Any) -> int:
    from deskpilot.smoke.runner import MissingHelper, Options, run

    out = console(stderr=as_json)
    options = Options(
        cases=cases,
        profile=profile,
        case_timeout_s=knobs["case_timeout"],
        request_timeout_ms=knobs["request_timeout_ms"],
        max_output_tokens=knobs["max_output_tokens"],
        stop_on_provider_error=not knobs["keep_going"],
        preflight=knobs["preflight"],
        progress=_progress(out),
    )
    previous = signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM ends the run like Ctrl-C
    try:
        outcome = run(options)
    except MissingHelper as exc:
        typer.echo(f"error: {exc}", err=True)
        return EXIT_USAGE
    finally:
        signal.signal(signal.SIGTERM, previous)
    s = outcome.summary
    if as_json:
        _emit(
            {
                "schema": "deskpilot.smoke-run.v1",
                "summaryPath": str(outcome.summary_path),
                "exitCode": outcome.exit_code,
                "summary": s,
            }
        )
    else:
        health = s["providerHealth"]
        t = s["totals"]
        if not health.get("ok"):
            error = health.get("error") or {}
            out.print(
                f"[red]preflight failed[/red] ({error.get('code')}: {error.get('message')}): "
                f"no case ran; run {s['runId']}"
            )
        else:
            out.print(
                f"{s['runKind']} run {s['runId']}: {t['passed']}/{t['cases']} passed"
                + (f", {t['skipped']} skipped" if t["skipped"] else "")
                + f", {t['recoveries']} recoveries, {t['providerErrors']} provider errors, "
                f"stop: {s['stopReason'] or 'none'}"
            )
            gate = s.get("summaryGate") or {}
            for failure in gate.get("failures") or []:
                out.print(f"[red]gate[/red] {failure['check']}: {failure['message']}")
        out.print(f"summary: {outcome.summary_path}")
    return outcome.exit_code
