"""``deskpilot unhalt``, ``deskpilot confirm …`` and ``deskpilot settings …``: the person's side
of the kernel's controls. Each command only translates to :mod:`deskpilot.kernel` /
:mod:`deskpilot.store` and works from any terminal while a server runs (state is in the
database)."""

from __future__ import annotations

import json
import time
from typing import Any

import typer

from deskpilot.kernel.confirmation import Confirmations
from deskpilot.kernel.halt import Halt
from deskpilot.kernel.session_manager import SessionManager
from deskpilot.protocol.errors import DeskpilotError
from deskpilot.store.db import Database
from deskpilot.store.settings import Settings

confirm_app = typer.Typer(help="One-time confirmations that waiting actions ask you for.")
settings_app = typer.Typer(help="deskpilot settings (stored in the data dir's database).")


def _fail(exc: DeskpilotError) -> None:
    typer.echo(f"error: {exc.code.value}: {exc.message}", err=True)
    raise typer.Exit(1)


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def unhalt() -> None:
    """Lift the halt the kill switch left: agents may act again (stopped sessions stay
    stopped)."""
    halt = Halt(Database())
    active = halt.active()
    if active is None:
        typer.echo("no halt is engaged")
        return
    halt.lift("cli")
    typer.echo(
        f"halt lifted (engaged {_when(active.engaged_at)} by {active.reason}); agents may act "
        "again — canceled sessions stay canceled"
    )


@confirm_app.command("list")
def confirm_list(as_json: bool = typer.Option(False, "--json", help="JSON output")) -> None:
    """Pending confirmations, oldest first."""
    db = Database()
    rows = Confirmations(db, SessionManager(db)).pending()
    if as_json:
        typer.echo(
            json.dumps(
                [
                    {
                        "id": r.id,
                        "sessionId": r.session_id,
                        "actionId": r.action_id,
                        "kind": r.action_kind,
                        "risk": r.risk_level.label,
                        "reason": r.reason,
                        "summary": r.summary,
                        "expiresAt": r.expires_at,
                    }
                    for r in rows
                ],
                indent=2,
            )
        )
        return
    if not rows:
        typer.echo("nothing waits for a confirmation")
        return
    now = time.time()
    for r in rows:
        typer.echo(
            f"{r.id}  {r.risk_level.label}  {r.summary}  [{r.reason}; "
            f"{max(0, int(r.expires_at - now))} s left]"
        )
    typer.echo(
        "approve with `deskpilot confirm approve ID`, refuse with `deskpilot confirm deny ID`"
    )


def _resolve(confirmation_id: str, approve: bool) -> None:
    db = Database()
    try:
        row = Confirmations(db, SessionManager(db)).resolve(confirmation_id, approve, "cli")
    except DeskpilotError as exc:
        _fail(exc)
        return
    typer.echo(f"{row.id} {row.status}: {row.summary}")


@confirm_app.command("approve")
def confirm_approve(confirmation_id: str) -> None:
    """Let that one action run (once)."""
    _resolve(confirmation_id, True)


@confirm_app.command("deny")
def confirm_deny(confirmation_id: str) -> None:
    """Refuse that action; the agent is told it was refused."""
    _resolve(confirmation_id, False)


@settings_app.command("show")
def settings_show() -> None:
    """Every setting with its current value (defaults included)."""
    typer.echo(
        json.dumps(Settings.load(Database()).model_dump(mode="json", by_alias=True), indent=2)
    )


def _parse(value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


@settings_app.command("set")
def settings_set(name: str, value: str) -> None:
    """Set one setting, e.g. "requireConfirmationAbove L2" or "killSwitch ctrl+alt+k"."""
    try:
        model = Settings.update(Database(), **{name: _parse(value)})
    except DeskpilotError as exc:
        _fail(exc)
        return
    typer.echo(json.dumps(model.model_dump(mode="json", by_alias=True), indent=2))


@settings_app.command("reset")
def settings_reset(names: list[str] = typer.Argument(None)) -> None:
    """Back to the defaults (the named settings, or all)."""
    try:
        model = Settings.reset(Database(), *(names or []))
    except DeskpilotError as exc:
        _fail(exc)
        return
    typer.echo(json.dumps(model.model_dump(mode="json", by_alias=True), indent=2))
