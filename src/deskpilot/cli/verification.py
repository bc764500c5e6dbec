"""``deskpilot verification show ID`` and ``deskpilot verification list TASK_ID``.

Verdicts are rows in the store (the data dir's SQLite file), written when a check is decided,
so they are read here straight from the store: no runtime, no host, no desktop. That is what
lets a person (or a script) check a task's result in a new process after it ended.
"""

from __future__ import annotations

import json
import time
from typing import Any

import typer

from deskpilot.store.db import Database
from deskpilot.store.session_rows import SessionRepository
from deskpilot.store.verifications import VerificationRepository, VerificationRow

app = typer.Typer(help="Verification results of delegated tasks and action expectations.")


def _repo() -> VerificationRepository:
    return VerificationRepository(Database())


def _when(ts: float | None) -> str:
    return "-" if ts is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def _verdict(row: VerificationRow) -> str:
    if row.passed is None:
        return "undecidable"
    return "passed" if row.passed else "failed"


def _spec_line(spec: dict[str, Any]) -> str:
    return json.dumps(spec, ensure_ascii=False, sort_keys=True)


def _print_row(row: VerificationRow) -> None:
    typer.echo(f"{row.id}  {_verdict(row)}  ({row.reason or '-'})")
    typer.echo(f"  task:      {row.session_id}")
    typer.echo(
        f"  source:    {row.source}" + (f" (action {row.action_id})" if row.action_id else "")
    )
    typer.echo(f"  spec:      {_spec_line(row.spec)}")
    typer.echo(f"  decided:   {_when(row.completed_at)}")
    if row.evidence:
        typer.echo(f"  evidence:  {json.dumps(row.evidence, ensure_ascii=False, sort_keys=True)}")


@app.command("show")
def show(
    verification_id: str = typer.Argument(..., help="The id, e.g. from session_completed."),
    as_json: bool = typer.Option(False, "--json", help="Print the row as JSON."),
) -> None:
    """One verification: its spec, verdict, reason and evidence."""
    row = _repo().get(verification_id)
    if row is None:
        typer.echo(f"error: no verification {verification_id!r} in this data dir", err=True)
        raise typer.Exit(1)
    if as_json:
        typer.echo(json.dumps(row.to_json(), ensure_ascii=False, indent=2))
        return
    _print_row(row)


@app.command("list")
def list_(
    task_id: str = typer.Argument(..., help="The task's id (its session id)."),
    as_json: bool = typer.Option(False, "--json", help="Print the rows as a JSON list."),
) -> None:
    """Every verification of one task (and its actions' expectations), oldest first."""
    repo = _repo()
    if SessionRepository(repo.db).get(task_id) is None:
        typer.echo(f"error: no task or session {task_id!r} in this data dir", err=True)
        raise typer.Exit(1)
    rows = repo.list(task_id)
    if as_json:
        typer.echo(json.dumps([r.to_json() for r in rows], ensure_ascii=False, indent=2))
        return
    if not rows:
        typer.echo(f"no verifications for {task_id}")
        return
    for row in rows:
        typer.echo(
            f"{row.id}  {_verdict(row)}  {row.source}  {row.spec.get('kind')}  "
            f"({row.reason or '-'})"
        )
