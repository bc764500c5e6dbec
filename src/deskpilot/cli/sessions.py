"""``deskpilot session list | pause | takeover | resume | stop | bind ID``: the person's
controls of any session on this data dir, from any terminal.

A session is driven by the process that created it (``deskpilot serve``, ``deskpilot run``);
these commands ask that process through a control request and print the state it answers
(kernel/control_requests.py). ``takeover`` means the person has the desktop: every agent
action of every session is refused until ``resume`` hands it back. A session whose process
has ended can still be stopped (in the database); nothing else can be done to it.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import typer

from deskpilot.kernel.control_requests import ControlClient
from deskpilot.kernel.takeover import Takeover
from deskpilot.protocol.errors import DeskpilotError
from deskpilot.store.db import Database
from deskpilot.store.session_rows import SessionRepository, SessionRow

app = typer.Typer(help="Sessions on this data dir: list them, pause, take over, resume, stop.")

_BY = typer.Option("cli", "--by", help="Who asks (recorded with the control).")
_TIMEOUT = typer.Option(5.0, "--timeout", help="Seconds to wait for the owning process.")


def _when(ts: float | None) -> str:
    return "-" if ts is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def _row_json(row: SessionRow, client: ControlClient, held: set[str]) -> dict[str, Any]:
    return {
        "id": row.id,
        "mode": row.mode,
        "state": row.state.value,
        "agentSessionId": row.agent_session_id,
        "ownerPid": row.owner_pid,
        "ownerAlive": None if row.terminal else client.owner_alive(row),
        "takenOver": row.id in held,
        "steps": row.steps,
        "target": None if row.target is None else row.target.wire(),
        "cancelReason": row.cancel_reason,
        "createdAt": row.created_at,
        "endedAt": row.ended_at,
    }


@app.command("list")
def list_sessions(
    as_json: bool = typer.Option(False, "--json", help="JSON output"),
    all_: bool = typer.Option(False, "--all", help="Ended sessions too (the latest 50)."),
) -> None:
    """Live sessions (with --all, the latest ones, ended too), newest first."""
    db = Database()
    client = ControlClient(db)
    repo = SessionRepository(db)
    rows = repo.list_recent(50) if all_ else list(reversed(repo.list_active()))
    takeover = Takeover(db)
    held = {h.session_id for h in takeover.holds()}
    if as_json:
        data = {
            "sessions": [_row_json(r, client, held) for r in rows],
            "takeover": takeover.state(),
        }
        typer.echo(json.dumps(data, indent=2))
        return
    if not rows:
        typer.echo("no live session" if not all_ else "no session")
        return
    for r in rows:
        owner = "" if r.terminal else (" owner gone" if not client.owner_alive(r) else "")
        mark = "  [taken over]" if r.id in held else ""
        why = f" ({r.cancel_reason})" if r.cancel_reason else ""
        typer.echo(
            f"{r.id}  {r.mode:9}  {r.state.value}{why}{mark}  pid {r.owner_pid or '-'}{owner}  "
            f"steps {r.steps}  since {_when(r.created_at)}"
        )
    state = takeover.state()
    if state["held"]:
        typer.echo(
            f"the person ({state['by']}) holds the desktop for {state['sessionId']}: agent "
            f"actions are refused until `deskpilot session resume {state['sessionId']}`"
        )


def _send(session_id: str, verb: str, args: dict[str, Any] | None, by: str, timeout: float) -> None:
    client = ControlClient(Database())
    try:
        row = asyncio.run(client.send(session_id, verb, args, by=by, timeout_s=timeout))
    except DeskpilotError as exc:
        typer.echo(f"error: {exc.code.value}: {exc.message}", err=True)
        raise typer.Exit(1) from None
    why = f" ({row.cancel_reason})" if row.cancel_reason else ""
    bound = ""
    if verb == "bind_target" and row.target is not None and row.target.window_id:
        bound = f", bound to window {row.target.window_id}"
    typer.echo(f"{row.id} {row.state.value}{why}{bound}")


@app.command("pause")
def pause(session_id: str, by: str = _BY, timeout: float = _TIMEOUT) -> None:
    """Hard pause: what it has in flight ends, its operator stops; resume continues."""
    _send(session_id, "pause", None, by, timeout)


@app.command("takeover")
def takeover(session_id: str, by: str = _BY, timeout: float = _TIMEOUT) -> None:
    """Take the desktop: agent actions are refused until `session resume ID`.

    The session pauses and every action of every agent session is refused with
    handoff_required until you hand back."""
    _send(session_id, "takeover", None, by, timeout)


@app.command("resume")
def resume(session_id: str, by: str = _BY, timeout: float = _TIMEOUT) -> None:
    """Resume a paused session; after a takeover, hand the desktop back.

    The agent's next result says what changed while you had the desktop."""
    _send(session_id, "resume", None, by, timeout)


@app.command("stop")
def stop(
    session_id: str,
    note: str | None = typer.Option(None, "--note", help="Why (kept in the timeline)."),
    by: str = _BY,
    timeout: float = _TIMEOUT,
) -> None:
    """End the session for good (it works even when its process has ended)."""
    _send(session_id, "stop", {"note": note} if note else None, by, timeout)


@app.command("bind")
def bind(
    session_id: str,
    window: str = typer.Option(..., "--window", help="The X11 window id (0x…) to bind."),
    by: str = _BY,
    timeout: float = _TIMEOUT,
) -> None:
    """Change the session's target window (only while it is paused)."""
    _send(session_id, "bind_target", {"windowId": window}, by, timeout)
