"""The sessions list as a person reads it: every computer-use session, newest first, paged.

One summary per session — atomic (an agent's own clicks) or delegated (a goal handed to the
operator) — with its state, the budget it has used against its contract (steps, runtime,
consecutive no-ops; a delegated task's contract is tighter than an atomic session's, so the
limits are read from each row, never assumed), its target, when it started and ended, and
how long it ran.

The badge is the session's *state*, read from its row and the takeover hold — never from its
last timeline event (seed 003 §12.2: a card that took its badge from the last event showed a
paused session as "running"). A paused session whose desktop the person holds is shown as
``taken_over``; once they hand back it is whatever state the kernel moved it to.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal, get_args

from deskpilot.kernel.takeover import Takeover
from deskpilot.oversight.i18n import translate
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import TERMINAL_STATES, SessionState
from deskpilot.store.db import Database
from deskpilot.store.repo import loads
from deskpilot.store.session_rows import SessionRepository, SessionRow

PER_PAGE = 50
MAX_PER_PAGE = 200
#: what the list may be narrowed to: every session, the ones still running, the ended ones
Filter = Literal["all", "live", "ended"]
FILTERS: tuple[Filter, ...] = get_args(Filter)
#: the badge a held takeover shows instead of ``paused``
TAKEN_OVER = "taken_over"

_TERMINAL_SQL = ",".join(f"'{s.value}'" for s in sorted(TERMINAL_STATES))
_WHERE: dict[Filter, str] = {
    "all": "",
    "live": f"WHERE state NOT IN ({_TERMINAL_SQL})",
    "ended": f"WHERE state IN ({_TERMINAL_SQL})",
}


@dataclass(frozen=True, slots=True)
class Budget:
    """How much of its contract a session has used (the contract's own limits)."""

    steps: int
    max_steps: int
    runtime_s: float
    max_runtime_s: float
    noops: int
    max_noops: int

    @property
    def steps_pct(self) -> int:
        return min(100, round(100 * self.steps / self.max_steps)) if self.max_steps else 0

    @property
    def runtime_pct(self) -> int:
        if not self.max_runtime_s:
            return 0
        return min(100, round(100 * self.runtime_s / self.max_runtime_s))


@dataclass(frozen=True, slots=True)
class SessionSummary:
    id: str
    mode: str
    state: str
    #: what the badge shows: the state, or ``taken_over`` while the person holds the desktop
    badge: str
    live: bool
    #: a delegated task's goal (the person's or agent's words; never typed text)
    objective: str
    target: str
    budget: Budget
    started_at: float
    ended_at: float | None
    duration_s: float
    cancel_reason: str | None
    paused_by: str | None
    held_by: str | None
    agent_session_id: str


@dataclass(frozen=True, slots=True)
class SessionPage:
    items: list[SessionSummary]
    page: int
    pages: int
    total: int
    filter: Filter
    per_page: int


def badge_of(row: SessionRow, held: bool) -> str:
    """The badge: the session's state, ``taken_over`` while its takeover hold is live."""
    if held and row.state == SessionState.PAUSED:
        return TAKEN_OVER
    return row.state.value


def parse_filter(value: str | None) -> Filter:
    if value in (None, ""):
        return "all"
    for f in FILTERS:
        if value == f:
            return f
    raise DeskpilotError(
        ErrorCode.INVALID_REQUEST,
        f"unknown sessions filter {value!r}; use one of {', '.join(FILTERS)}",
        details={"filter": str(value)[:40]},
    )


def parse_page(value: str | None) -> int:
    if value in (None, ""):
        return 1
    assert value is not None
    if not value.isdigit() or int(value) < 1 or len(value) > 7:
        raise DeskpilotError(
            ErrorCode.INVALID_REQUEST,
            f"page must be a whole number from 1, not {value[:20]!r}",
            details={"page": value[:20]},
        )
    return int(value)


def _target(row: SessionRow, seen: dict[str, object] | None, locale: str = "en") -> str:
    """The app/window a session works on, as one thing: its bound window (with the app when
    the binding or an observation of that same window names it); else its bound app; else,
    following the focused window, what it last observed. A window observed before a change
    of window is never joined to the new one."""
    spec = row.target
    seen = seen or {}
    seen_app, seen_window = seen.get("app"), seen.get("windowId")

    def window(wid: object) -> str:
        return translate("sessions.target.window", locale, id=wid)

    if spec is not None and spec.window_id:
        same = bool(seen_window) and str(seen_window).lower() == spec.window_id.lower()
        app = spec.app or (str(seen_app) if same and seen_app else "")
        return " · ".join(p for p in (window(spec.window_id), app) if p)
    if spec is not None and (spec.app or spec.pid is not None):
        parts = [spec.app or "", f"pid {spec.pid}" if spec.pid is not None else ""]
        return " · ".join(p for p in parts if p)
    parts = [str(seen_app) if seen_app else "", window(seen_window) if seen_window else ""]
    return " · ".join(p for p in parts if p)


def last_observed(db: Database, session_id: str) -> dict[str, object] | None:
    """The payload of the session's newest observation (app, window, elementCount)."""
    r = db.query_one(
        "SELECT payload_json FROM timeline_events WHERE session_id = ? "
        "AND type = 'observation_created' ORDER BY seq DESC LIMIT 1",
        (session_id,),
    )
    if r is None:
        return None
    found = loads(r["payload_json"])
    return found if isinstance(found, dict) else None


def summarize(
    db: Database,
    row: SessionRow,
    *,
    held_by: str | None = None,
    now: float | None = None,
    locale: str = "en",
) -> SessionSummary:
    now = time.time() if now is None else now
    end = row.ended_at if row.ended_at is not None else now
    runtime = max(0.0, end - row.created_at)
    c = row.contract
    return SessionSummary(
        id=row.id,
        mode=row.mode,
        state=row.state.value,
        badge=badge_of(row, held_by is not None),
        live=not row.terminal,
        objective=c.objective,
        target=_target(row, last_observed(db, row.id), locale),
        budget=Budget(
            steps=row.steps,
            max_steps=c.max_steps,
            runtime_s=runtime,
            max_runtime_s=c.max_runtime_ms / 1000,
            noops=row.consecutive_noops,
            max_noops=c.max_consecutive_noops,
        ),
        started_at=row.created_at,
        ended_at=row.ended_at,
        duration_s=runtime,
        cancel_reason=row.cancel_reason,
        paused_by=row.paused_by,
        held_by=held_by,
        agent_session_id=row.agent_session_id,
    )


def holds(db: Database) -> dict[str, str]:
    """Live takeover holds: session id -> who holds the desktop."""
    return {h.session_id: h.held_by for h in Takeover(db).holds()}


def list_sessions(
    db: Database,
    *,
    filter: Filter = "all",
    page: int = 1,
    per_page: int = PER_PAGE,
    now: float | None = None,
    locale: str = "en",
) -> SessionPage:
    """One page of sessions, newest first. A page past the last shows the last one."""
    if not 1 <= per_page <= MAX_PER_PAGE:
        raise DeskpilotError(
            ErrorCode.INVALID_REQUEST, f"per_page must be 1..{MAX_PER_PAGE}, not {per_page}"
        )
    where = _WHERE[filter]
    count = db.query_one(f"SELECT COUNT(*) AS n FROM sessions {where}")
    total = int(count["n"]) if count is not None else 0
    pages = max(1, -(-total // per_page))
    page = min(max(1, page), pages)
    ids = db.query(
        f"SELECT id FROM sessions {where} ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?",
        (per_page, (page - 1) * per_page),
    )
    repo = SessionRepository(db)
    held = holds(db)
    items: list[SessionSummary] = []
    for r in ids:
        row = repo.get(r["id"])
        if row is not None:
            items.append(summarize(db, row, held_by=held.get(row.id), now=now, locale=locale))
    return SessionPage(items, page, pages, total, filter, per_page)


def session_row(db: Database, session_id: str) -> SessionRow:
    """The session's row, or ``session_not_found`` (a typed error the page shows)."""
    if not session_id or len(session_id) > 80:
        raise DeskpilotError(ErrorCode.SESSION_NOT_FOUND, "no such session")
    row = SessionRepository(db).get(session_id)
    if row is None:
        raise DeskpilotError(ErrorCode.SESSION_NOT_FOUND, f"no computer-use session {session_id!r}")
    return row


def session_summary(
    db: Database, session_id: str, *, now: float | None = None, locale: str = "en"
) -> SessionSummary:
    row = session_row(db, session_id)
    hold = Takeover(db).of_session(row.id)
    return summarize(db, row, held_by=hold.held_by if hold else None, now=now, locale=locale)


def clock(ts: float | None) -> str:
    """Local wall-clock time, to the second (what a person compares with their own clock)."""
    if ts is None:
        return ""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def duration_text(seconds: float | None, locale: str) -> str:
    """A duration read at a glance: ``850 ms``, ``12.3 s``, ``4 min 05 s``, ``2 h 03 min``."""
    if seconds is None:
        return ""
    s = max(0.0, float(seconds))
    if s < 1:
        return translate("sessions.dur.ms", locale, n=round(s * 1000))
    if s < 60:
        return translate("sessions.dur.s", locale, n=f"{s:.1f}")
    if s < 3600:
        m, rest = divmod(int(s), 60)
        return translate("sessions.dur.m", locale, m=m, s=f"{rest:02d}")
    h, rest = divmod(int(s), 3600)
    return translate("sessions.dur.h", locale, h=h, m=f"{rest // 60:02d}")


__all__ = [
    "FILTERS",
    "PER_PAGE",
    "TAKEN_OVER",
    "Budget",
    "Filter",
    "SessionPage",
    "SessionSummary",
    "badge_of",
    "clock",
    "duration_text",
    "holds",
    "last_observed",
    "list_sessions",
    "parse_filter",
    "parse_page",
    "session_row",
    "session_summary",
    "summarize",
]
