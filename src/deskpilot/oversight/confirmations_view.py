"""What the confirmations page and the confirmation notifications show, and the answer.

A card is one confirmation's one-time summary: what (the action kind and the kernel's
summary, which for a command is the exact command), where (the session's bound app/window,
or "no window" for a command or a launch), the risk level, why (the policy's reason code in
words) and when it expires. Answering goes through the kernel's own
:meth:`Confirmations.resolve` — the same call as ``deskpilot confirm approve|deny`` — so the
semantics are exactly the CLI's: one answer per confirmation (compare-and-set on
``pending``), an approval after the expiry does not count, and the waiting broker runs the
action once or refuses it. A refused answer comes back as :class:`AnswerRefused` with a
sentence for the person, never as a stack trace.
"""

from __future__ import annotations

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
from deskpilot.store.session_rows import SessionRepository

#: how many answered confirmations the page lists below the pending ones
RECENT_LIMIT = 20
#: who answered, as the kernel writes it into ``resolved_by``
DASHBOARD = "dashboard"


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
            "expiresAt": round(self.expires_at * 1000),
            "expiresClock": self.expires_clock,
        }


def reason_text(code: str, locale: str) -> str:
    """The policy's reason code in words (an unknown code is named, not hidden)."""
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


def _target_text(target: TargetSpec) -> str:
    parts = [target.app or "", f"pid {target.pid}" if target.pid else ""]
    if target.window_id:
        parts.append(f"window {target.window_id}")
    return ", ".join(p for p in parts if p)


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

    def where(self, row: ConfirmationRow, locale: str) -> str:
        session = self.sessions.get(row.session_id)
        short = row.session_id[:12]
        if session is None or session.target is None or not _target_text(session.target):
            return translate("confirmations.where.none", locale, session=short)
        return translate(
            "confirmations.where.target",
            locale,
            target=_target_text(session.target),
            session=short,
        )

    def card(self, row: ConfirmationRow, locale: str, now: float | None = None) -> Card:
        now = time.time() if now is None else now
        return Card(
            id=row.id,
            session_id=row.session_id,
            kind=row.action_kind,
            summary=row.summary,
            risk=row.risk_level.label,
            risk_level=int(row.risk_level),
            reason=row.reason,
            why=reason_text(row.reason, locale),
            where=self.where(row, locale),
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
