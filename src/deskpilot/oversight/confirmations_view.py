"""What the confirmations page and the confirmation notifications show, and the answer.

A card is one confirmation's one-time summary: what (the action kind and the kernel's
summary, which for a command is the exact command — its own " — L3 (…)" tail cut off, the
risk has its own column), where (the app and window of the session's bound target, else of
the observation the action was made against; "no window" only for a command or a launch),
the session (a link to its page), the risk level, why (the policy's reason code in
words) and when it expires. Answering goes through the kernel's own
:meth:`Confirmations.resolve` — the same call as ``deskpilot confirm approve|deny`` — so the
semantics are exactly the CLI's: one answer per confirmation (compare-and-set on
``pending``), an approval after the expiry does not count, and the waiting broker runs the
action once or refuses it. A refused answer comes back as :class:`AnswerRefused` with a
sentence for the person, never as a stack trace.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from deskpilot.kernel.confirmation import Confirmations
from deskpilot.kernel.session_manager import SessionManager
from deskpilot.oversight.banner import clock
from deskpilot.oversight.i18n import TABLE, translate
from deskpilot.protocol.errors import DeskpilotError
from deskpilot.protocol.wire import TargetSpec
from deskpilot.store.confirmations import ConfirmationRepository, ConfirmationRow
from deskpilot.store.db import Database
from deskpilot.store.repo import loads
from deskpilot.store.session_rows import SessionRepository
from deskpilot.store.settings import Settings

#: how many answered confirmations the page lists below the pending ones
RECENT_LIMIT = 20
#: who answered, as the kernel writes it into ``resolved_by``
DASHBOARD = "dashboard"
#: the kinds that act on no window: a governed shell command, an app launch
NO_WINDOW_KINDS = frozenset({"bash", "open_app"})
#: the kernel's summary ends with the level and the signals (kernel/broker/confirm.py)
_RISK_TAIL = re.compile(r"\s+—\s+L[0-4](?:\s+\([^()]*\))?\s*$")


class AnswerRefused(Exception):
    """An answer the kernel refused (already answered, expired, unknown): ``message`` is
    the sentence to show, ``status`` the row's status when there is a row."""

    def __init__(self, message: str, status: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass(frozen=True)
class Card:
    id: str
    session_id: str
    kind: str
    summary: str
    risk: str
    risk_level: int
    reason: str
    why: str
    where: str
    #: the signals behind the rating, as the kernel named them (cut from the summary)
    signals: str
    status: str
    status_text: str
    created_at: float
    expires_at: float
    expires_clock: str
    seconds_left: int
    resolved_at: float | None
    resolved_clock: str
    resolved_by: str

    def to_json(self) -> dict[str, Any]:
        """What a notification needs (``/events``)."""
        return {
            "id": self.id,
            "sessionId": self.session_id,
            "kind": self.kind,
            "summary": self.summary,
            "risk": self.risk,
            "riskLevel": self.risk_level,
            "reason": self.reason,
            "why": self.why,
            "where": self.where,
            "signals": self.signals,
            "sessionShort": self.session_id[:16],
            "sessionUrl": f"/sessions/{self.session_id}",
            "expiresAt": round(self.expires_at * 1000),
            "expiresClock": self.expires_clock,
        }


def threshold_words(db: Database, locale: str) -> tuple[str, str]:
    """The confirmation setting as the Settings page names it: (its label, its value)."""
    value = Settings.load(db).require_confirmation_above
    label = translate("settings.f.requireConfirmationAbove.label", locale)
    return label, translate(f"settings.choice.{value}", locale)


def intro_text(db: Database, locale: str) -> str:
    """What waits here, as it is now: by default (the setting "never ask") only launches and
    commands rated L3 or higher ask; with a level set, other actions above it ask too."""
    label, value = threshold_words(db, locale)
    off = Settings.load(db).require_confirmation_above == "off"
    key = "confirmations.intro.off" if off else "confirmations.intro.level"
    return translate(key, locale, setting=label, value=value)


def split_summary(summary: str) -> tuple[str, str]:
    """The kernel's summary without its " — L2 (signals)" tail, and the signals."""
    found = _RISK_TAIL.search(summary)
    if found is None:
        return summary, ""
    tail = found.group(0)
    signals = tail[tail.find("(") + 1 : tail.rfind(")")] if "(" in tail else ""
    return summary[: found.start()], signals


def reason_text(code: str, locale: str, db: Database | None = None) -> str:
    """The policy's reason code in words (an unknown code is named, not hidden)."""
    if code == "confirmation_required" and db is not None:
        label, value = threshold_words(db, locale)
        return translate("confirmations.reason.above_setting", locale, setting=label, value=value)
    key = f"confirmations.reason.{code}"
    if key in TABLE:
        return translate(key, locale)
    return translate("confirmations.reason.other", locale, code=code)


def status_text(status: str, locale: str) -> str:
    key = f"confirmations.status.{status}"
    return translate(key, locale) if key in TABLE else status


def by_text(by: str | None, locale: str) -> str:
    if not by:
        return ""
    key = f"confirmations.by.{by}"
    return translate(key, locale) if key in TABLE else by


def _target_text(target: TargetSpec, locale: str) -> str:
    parts = [target.app or ""]
    if target.window_id:
        parts.append(translate("confirmations.where.window", locale, id=target.window_id))
    elif target.pid:
        parts.append(f"pid {target.pid}")
    return " · ".join(p for p in parts if p)


class ConfirmationsView:
    """Reads and answers confirmations for one dashboard (one database)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.repo = ConfirmationRepository(db)
        self.kernel_side = Confirmations(db, SessionManager(db))
        self.sessions = SessionRepository(db)

    # ------------------------------------------------------------------ reading
    def pending_rows(self) -> list[ConfirmationRow]:
        """Pending and not yet expired, oldest first (what ``deskpilot confirm list`` lists)."""
        return self.kernel_side.pending()

    def recent_rows(self, limit: int = RECENT_LIMIT) -> list[ConfirmationRow]:
        """Answered (or expired) ones, the latest answer first."""
        ids = self.db.query(
            "SELECT id FROM confirmations WHERE status != 'pending' "
            "ORDER BY resolved_at DESC LIMIT ?",
            (limit,),
        )
        rows = [self.repo.get(r["id"]) for r in ids]
        return [r for r in rows if r is not None]

    def observed_where(self, action_id: str) -> TargetSpec | None:
        """The app and window of the observation the action was made against (its ledger
        row's frame, the ``observation_created`` event of that frame)."""
        action = self.db.query_one("SELECT frame_id FROM actions WHERE id = ?", (action_id,))
        if action is None or not action["frame_id"]:
            return None
        found = self.db.query_one(
            "SELECT payload_json FROM timeline_events WHERE type = 'observation_created' "
            "AND json_extract(payload_json, '$.frameId') = ? ORDER BY seq DESC LIMIT 1",
            (action["frame_id"],),
        )
        payload = loads(found["payload_json"]) if found is not None else None
        if not isinstance(payload, dict):
            return None
        app, window = payload.get("app"), payload.get("windowId")
        if not app and not window:
            return None
        return TargetSpec(app=str(app) if app else None, window_id=str(window) if window else None)

    def where(self, row: ConfirmationRow, locale: str) -> str:
        """The app and window the action acts on; "no window" only for a command or a
        launch; the focused window when nothing more is known."""
        if row.action_kind in NO_WINDOW_KINDS or row.reason.startswith(("shell_", "launch_")):
            return translate("confirmations.where.none", locale)
        session = self.sessions.get(row.session_id)
        bound = session.target if session is not None else None
        observed = self.observed_where(row.action_id)
        if bound is not None and bound.window_id:
            if observed is not None and observed.window_id == bound.window_id and not bound.app:
                bound = TargetSpec(app=observed.app, window_id=bound.window_id)
            return _target_text(bound, locale)
        if observed is not None:
            return _target_text(observed, locale)
        if bound is not None and _target_text(bound, locale):
            return _target_text(bound, locale)
        return translate("confirmations.where.focused", locale)

    def card(self, row: ConfirmationRow, locale: str, now: float | None = None) -> Card:
        now = time.time() if now is None else now
        summary, signals = split_summary(row.summary)
        return Card(
            id=row.id,
            session_id=row.session_id,
            kind=row.action_kind,
            summary=summary,
            risk=row.risk_level.label,
            risk_level=int(row.risk_level),
            reason=row.reason,
            why=reason_text(row.reason, locale, self.db),
            where=self.where(row, locale),
            signals=signals,
            status=row.status,
            status_text=status_text(row.status, locale),
            created_at=row.created_at,
            expires_at=row.expires_at,
            expires_clock=clock(row.expires_at, now),
            seconds_left=max(0, int(row.expires_at - now)),
            resolved_at=row.resolved_at,
            resolved_clock="" if row.resolved_at is None else clock(row.resolved_at, now),
            resolved_by=by_text(row.resolved_by, locale),
        )

    def pending(self, locale: str) -> list[Card]:
        return [self.card(r, locale) for r in self.pending_rows()]

    def recent(self, locale: str, limit: int = RECENT_LIMIT) -> list[Card]:
        return [self.card(r, locale) for r in self.recent_rows(limit)]

    def risk_of(self, confirmation_id: str) -> int | None:
        """The level the answer's guard checks (remote browsers: ≤ L2 only); None when there
        is no such confirmation (the guard then treats it as the strictest)."""
        row = self.repo.get(confirmation_id)
        return None if row is None else int(row.risk_level)

    # ------------------------------------------------------------------ answering
    def answer(self, confirmation_id: str, approve: bool, locale: str) -> ConfirmationRow:
        """Approve or deny once, as ``deskpilot confirm`` does; refusals in words."""
        try:
            return self.kernel_side.resolve(confirmation_id, approve, DASHBOARD)
        except DeskpilotError as exc:
            status = exc.details.get("status") if exc.details else None
            if status is None:
                message = translate("confirmations.unknown", locale, id=confirmation_id)
                raise AnswerRefused(message) from exc
            if status == "expired":
                raise AnswerRefused(translate("confirmations.expired", locale), status) from exc
            text = status_text(str(status), locale)
            message = translate("confirmations.already", locale, status=text)
            raise AnswerRefused(message, str(status)) from exc

    def answered_text(self, row: ConfirmationRow, locale: str) -> str:
        key = "confirmations.approved" if row.status == "approved" else "confirmations.denied"
        return translate(key, locale)
