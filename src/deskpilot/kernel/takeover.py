"""The takeover hold: while the person has the desktop, no agent acts on it.

A takeover (``Controls.pause(takeover=True)``, the MCP ``takeover`` tool, the dashboard's
Take over) pauses its session *and* engages a hold that is desktop-wide: every action of
every session of this data dir — clicks, typing, app launches, governed shell commands —
is refused by the broker with ``handoff_required`` (details ``reason=taken_over``,
``takenOverBy``, ``since`` in epoch ms, ``sessionId``) before anything is rated, written or
dispatched; observing still works. Refused, not queued: the agent is told to wait for the
person to hand back.

The hold ends when the person hands back (a resume of the session that holds it), when that
session is stopped, and — so a hold can never outlive the process that could hand it back —
whenever its session has ended (any terminal state) or the process that owns it is gone;
those are found at the next read and recorded (``ended_by`` ``session_ended`` /
``owner_gone``). It lives in the database (``takeovers``), so every kernel process, the
dashboard and the CLI see the same hold.
"""

from __future__ import annotations

import time
from typing import Any

from deskpilot.kernel.owners import owner_alive
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.store.db import Database
from deskpilot.store.session_rows import SessionRepository
from deskpilot.store.takeovers import TakeoverRepository, TakeoverRow

__all__ = ["TAKEN_OVER", "Takeover", "TakeoverRow", "taken_over_error", "taken_over_words"]

#: the reason code in a refusal's details (the runtime's advice table keys on it)
TAKEN_OVER = "taken_over"
SESSION_ENDED = "session_ended"
OWNER_GONE = "owner_gone"


class Takeover:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.repo = TakeoverRepository(db)
        self._sessions = SessionRepository(db)

    def engage(self, session_id: str, by: str) -> TakeoverRow:
        """Hold the desktop for the person, on behalf of this session (idempotent)."""
        return self.repo.engage(session_id, by)

    def end(self, session_id: str, by: str) -> TakeoverRow | None:
        """Hand back: the session's hold ends (the ended row; None when it held none)."""
        return self.repo.end(session_id, by)

    def holds(self) -> list[TakeoverRow]:
        """Every live hold, newest first; a hold whose session ended or whose owning process
        is gone is ended on the way (module docstring)."""
        live = self.repo.live()
        if not live:
            return live
        kept: list[TakeoverRow] = []
        for hold in live:
            row = self._sessions.get(hold.session_id)
            if row is None or row.terminal:
                self.repo.end(hold.session_id, SESSION_ENDED)
            elif not owner_alive(row):
                self.repo.end(hold.session_id, OWNER_GONE)
            else:
                kept.append(hold)
        return kept

    def active(self) -> TakeoverRow | None:
        """The hold in force (the newest, when several sessions were taken over)."""
        holds = self.holds()
        return holds[0] if holds else None

    def of_session(self, session_id: str) -> TakeoverRow | None:
        """This session's own live hold (another session's does not count)."""
        return next((h for h in self.holds() if h.session_id == session_id), None)

    def check(self) -> None:
        """Refuse an agent action while any hold is in force."""
        hold = self.active()
        if hold is not None:
            raise taken_over_error(hold)

    def state(self, session_id: str | None = None) -> dict[str, Any]:
        """JSON: ``held``, ``by``, ``since`` (epoch ms), ``sessionId``; with ``session_id``,
        that session's own hold only."""
        hold = self.active() if session_id is None else self.of_session(session_id)
        if hold is None:
            return {"held": False, "by": None, "since": None, "sessionId": None}
        return {
            "held": True,
            "by": hold.held_by,
            "since": int(hold.started_at * 1000),
            "sessionId": hold.session_id,
        }


def taken_over_words(by: str | None) -> str:
    """Who has the desktop, in words: the agent's own ``takeover`` (by ``agent``) handed it
    to the person; anyone else is the person, named by where they took it (``dashboard``,
    ``cli``) unless that is just ``person``."""
    if by == "agent":
        return "The agent handed the desktop to the person"
    if not by or by == "person":
        return "The person took over the desktop"
    return f"The person ({by}) took over the desktop"


def taken_over_error(hold: TakeoverRow) -> DeskpilotError:
    when = time.strftime("%H:%M:%S", time.localtime(hold.started_at))
    return DeskpilotError(
        ErrorCode.HANDOFF_REQUIRED,
        f"{taken_over_words(hold.held_by)} at {when} (session "
        f"{hold.session_id}): every agent action is refused until they hand it back; nothing "
        "was done. Observing still works. Do not retry now: wait for the person to hand the "
        "desktop back, then observe again before acting.",
        retryable=False,
        details={
            "reason": TAKEN_OVER,
            "takenOverBy": hold.held_by,
            "since": int(hold.started_at * 1000),
            "sessionId": hold.session_id,
        },
    )
