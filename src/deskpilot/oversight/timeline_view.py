"""A session's timeline folded into the cards a person reads.

The store keeps every event (``timeline_events``); shown raw, an action is two or three lines
and the observations between actions drown everything. The rules here (seed 003 §12.2, the
fixed version):

* **one card per action**: its ``action_requested`` folded with its terminal event
  (``action_executed`` — ``noop`` when the ledger says it changed nothing —,
  ``action_failed``, ``action_blocked``), showing the kind, the risk level (L0–L4), the
  policy's decision and reason code, how it ran, how long it took, the error code with the
  error table's sentence, and the checks of its ``expect``; an action still in flight is
  ``pending`` and its card is updated in place when it ends;
* **observations** are cards of their own, hidden unless the person asks for them;
* pauses, resumes (and hand backs), takeovers, target changes, hand-offs, confirmations
  (requested and resolved folded by confirmation id) and the session's start and end are
  lines of their own;
* a delegated task's **verifications** (``verifications`` rows: each check and its verdict)
  are cards; an action's own checks sit on that action's card;
* **snapshots** stored for the session are cards placed where they were taken in time, with
  a preview URL the caller issues (oversight/previews.py).

Nothing here holds typed text, UI values or pixels: payloads carry codes, ids, levels and
names only (store/timeline.py), and verification specs are the criteria the agent wrote.

:class:`TimelineFolder` folds incrementally, so the live page (SSE) can feed it the events
after the last one it saw and re-render only the cards that changed.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from deskpilot.oversight.confirmations_view import by_text, split_summary
from deskpilot.oversight.error_table import describe, link
from deskpilot.oversight.i18n import TABLE, translate
from deskpilot.protocol.session import EventType
from deskpilot.store.db import Database
from deskpilot.store.repo import loads
from deskpilot.store.snapshots import SnapshotRepository, SnapshotRow
from deskpilot.store.timeline import TimelineEventRow, TimelineRepository
from deskpilot.store.verifications import VerificationRepository, VerificationRow

#: events read per query while loading a whole timeline
READ_BATCH = 2_000
#: a timeline longer than this shows its newest events only (with a note saying so)
MAX_EVENTS = 50_000
MAX_SPEC_TEXT = 60

_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_-]")

#: what the ledger's terminal statuses become on a card
_TERMINAL = {
    EventType.ACTION_EXECUTED: "executed",
    EventType.ACTION_FAILED: "failed",
    EventType.ACTION_BLOCKED: "blocked",
}
_FINISHED = frozenset({"noop", "executed", "failed", "blocked"})
#: attempts refused before anything ran (the kernel's newer event; compared by its value so
#: this module also loads against a protocol that does not define it yet)
ACTION_REFUSED = "action_refused"
_STATE_EVENTS = {
    EventType.SESSION_STARTED: "started",
    EventType.SESSION_PAUSED: "paused",
    EventType.SESSION_RESUMED: "resumed",
    EventType.TARGET_BOUND: "target_bound",
    EventType.HANDOFF_REQUIRED: "handoff",
    EventType.SESSION_COMPLETED: "completed",
    EventType.SESSION_FAILED: "failed",
    EventType.SESSION_CANCELED: "canceled",
}


def dom_id(prefix: str, raw: object) -> str:
    return f"{prefix}-{_UNSAFE_ID.sub('_', str(raw))[:80]}"


def error_sentence(code: str | None, locale: str) -> str | None:
    """The error table's sentence for ``code`` (oversight/error_table.py); None for none."""
    if not code:
        return None
    return describe(code, locale).sentence


def error_next_step(code: str | None, locale: str) -> str | None:
    return describe(code, locale).next_step if code else None


def target_text(target: object, locale: str = "en") -> str:
    """A bound target (``{"windowId", "pid", "app"}``, a ``title`` when the kernel records
    one) as one short line: ``“Calculator” (0x1600003) · gnome-calculator``."""
    if not isinstance(target, dict):
        return ""
    parts = []
    window, title = target.get("windowId"), target.get("title")
    if window and title:
        parts.append(translate("sessions.card.titled_window", locale, title=title, id=window))
    elif window:
        parts.append(translate("sessions.card.window", locale, id=window))
    if target.get("app"):
        parts.append(str(target["app"]))
    if target.get("pid") is not None and not window:
        parts.append(f"pid {target['pid']}")
    return " · ".join(parts)


def _short(value: object) -> str:
    text = str(value)
    return text if len(text) <= MAX_SPEC_TEXT else text[: MAX_SPEC_TEXT - 1] + "…"


def _get(spec: dict[str, Any], *names: str) -> Any:
    """A spec field by its wire name or its Python name (``notStates`` / ``not_states``)."""
    for name in names:
        if spec.get(name) not in (None, "", [], {}):
            return spec[name]
    return None


def _quoted(value: object) -> str:
    return f"“{_short(value)}”"


def selector_text(selector: object, locale: str = "en") -> str:
    """An element selector in words: ``a textField that is not readonly, inside a dialog
    named “Save”``."""
    if not isinstance(selector, dict):
        return translate("sessions.check.element", locale)
    role = _get(selector, "role")
    text = (
        translate("sessions.check.role", locale, role=_short(role))
        if role
        else translate("sessions.check.element", locale)
    )
    name = _get(selector, "name")
    if name:
        text += translate("sessions.check.named", locale, name=_quoted(name))
    contains = _get(selector, "nameContains", "name_contains")
    if contains:
        text += translate("sessions.check.name_contains", locale, name=_quoted(contains))
    states = _get(selector, "states")
    if isinstance(states, list) and states:
        text += translate("sessions.check.states", locale, states=", ".join(map(str, states)))
    not_states = _get(selector, "notStates", "not_states")
    if isinstance(not_states, list) and not_states:
        joined = ", ".join(map(str, not_states))
        text += translate("sessions.check.not_states", locale, states=joined)
    inside = _get(selector, "inside")
    if isinstance(inside, dict):
        text += translate("sessions.check.inside", locale, of=selector_text(inside, locale))
    return text


def check_text(spec: dict[str, Any], locale: str = "en") -> str:
    """One verification spec in words (protocol/verification.py's kinds); a kind this
    version does not know is named with its assertion, never shown as a repr."""
    kind = str(spec.get("kind") or "check")
    assertion = str(spec.get("assertion") or "")
    key = f"sessions.check.{kind}.{assertion}"
    fields: dict[str, object] = {}
    if kind == "accessibility":
        fields["sel"] = selector_text(spec.get("selector"), locale)
        fields["expected"] = _quoted(spec.get("expected") or "")
        match = str(spec.get("match") or "any")
        if match in ("all", "only") and key in TABLE:
            sentence = translate(key, locale, **fields)
            return translate(f"sessions.check.match.{match}", locale, check=sentence)
    elif kind == "visual":
        fields["text"] = _quoted(spec.get("text") or "")
    elif kind == "application_state":
        app = spec.get("app")
        fields["app"] = _short(app) if app else translate("sessions.check.target_app", locale)
        fields["text"] = _quoted(spec.get("text") or "")
        if spec.get("expected") is False and key in TABLE:
            sentence = translate(key, locale, **fields)
            return translate("sessions.check.negated", locale, check=sentence)
    elif kind == "file":
        fields["path"] = _short(spec.get("path") or "?")
        fields["text"] = _quoted(spec.get("text") or "")
        fields["digest"] = str(spec.get("expected") or "")[:12]
    elif kind == "dom":
        fields["expected"] = _quoted(spec.get("expected") or "")
    elif kind == "external_readback":
        argv = spec.get("argv")
        command = str(argv[0]) if isinstance(argv, list) and argv else "?"
        code = _get(spec, "expectExit", "expect_exit") or 0
        text = translate("sessions.check.external_readback", locale, command=command, code=code)
        out = _get(spec, "stdoutContains", "stdout_contains")
        if out:
            text += translate("sessions.check.stdout_contains", locale, text=_quoted(out))
        same = _get(spec, "stdoutEquals", "stdout_equals")
        if same is not None:
            text += translate("sessions.check.stdout_equals", locale, text=_quoted(same))
        return text
    if key in TABLE:
        return translate(key, locale, **fields)
    return translate("sessions.check.other", locale, kind=kind, assertion=assertion or "?")


@dataclass(frozen=True, slots=True)
class LedgerFacts:
    """What a card needs of an action's ledger row (``actions``): read as five columns, not
    the whole row — a long timeline reads hundreds of them per page."""

    status: str
    error_code: str | None
    risk: str
    decision: str
    reason: str
    #: the observation the action was made against (its app and window are on the timeline)
    frame_id: str | None = None
    target_kind: str = ""
    #: where the host says it aimed (``outcome.target_bounds``), once the action ran
    bounds: dict[str, Any] | None = None


_LEDGER_SQL = (
    "SELECT id, status, error_code, risk_level, decision, reason, frame_id, target_kind, "
    "json_extract(outcome_json, '$.target_bounds') AS bounds FROM actions WHERE "
)


def _facts(r: Any) -> LedgerFacts:
    bounds = loads(r["bounds"]) if r["bounds"] else None
    return LedgerFacts(
        r["status"],
        r["error_code"],
        f"L{int(r['risk_level'])}",
        r["decision"],
        r["reason"],
        r["frame_id"],
        r["target_kind"] or "",
        bounds if isinstance(bounds, dict) else None,
    )


#: who did something, as the kernel writes ``by``; anything else is shown as written
ACTORS = frozenset({"person", "agent", "dashboard", "cli", "kernel", "operator", "tray"})


def actor_text(by: str | None, locale: str) -> str:
    """Who, in words: ``person`` is "the person" / 用户, ``agent`` "the agent" / 智能体 …"""
    if not by:
        return translate("sessions.actor.unknown", locale)
    if by in ACTORS:
        return translate(f"sessions.actor.{by}", locale)
    return by


def answerer_text(by: str | None, locale: str) -> str:
    """Who answered a confirmation (or why nobody did: ``timeout``, ``session_ended``)."""
    if by in ACTORS:
        return actor_text(by, locale)
    return by_text(by, locale) or translate("sessions.actor.unknown", locale)


def bounds_text(kind: str, bounds: dict[str, Any] | None, locale: str) -> str:
    """Where a positional or element action aimed, from the host's ``target_bounds``."""
    if not bounds:
        return ""
    try:
        x, y = int(bounds["x"]), int(bounds["y"])
        w, h = int(bounds.get("width", 1)), int(bounds.get("height", 1))
    except (KeyError, TypeError, ValueError):
        return ""
    if kind == "coordinates" or (w <= 1 and h <= 1):
        return translate("sessions.card.target.point", locale, x=x, y=y)
    return translate("sessions.card.target.box", locale, x=x, y=y, w=w, h=h)


def _label_of(summary: str) -> str:
    """The element part of a confirmation summary (``click on button "X" in app``)."""
    what, _ = split_summary(summary)
    _, on, rest = what.partition(" on ")
    if not on:
        return ""
    label, _, _ = rest.rpartition(" in ")
    return label or rest


@dataclass
class CheckLine:
    verification_id: str
    check: str
    passed: bool | None
    reason: str


@dataclass
class Card:
    """One line of the timeline. ``pos`` orders the cards (the first event's seq; snapshot
    cards take the half step after the event before them)."""

    id: str
    kind: str
    pos: float
    at: float


@dataclass
class ActionCard(Card):
    action_id: str = ""
    action_kind: str = "action"
    risk: str = ""
    decision: str = ""
    reason: str = ""
    effect: str = ""
    target_kind: str = ""
    #: pending (requested or in flight), executed, noop, failed, blocked
    status: str = "pending"
    method: str = ""
    error_code: str | None = None
    error_text: str | None = None
    error_next: str | None = None
    #: where the errors page explains the code
    error_link: str | None = None
    duration_s: float | None = None
    confirmation: str | None = None
    checks: list[CheckLine] = field(default_factory=list)
    #: what it acted on: the element (role and name, when a confirmation named it), else
    #: where the host aimed; never typed text
    target: str = ""
    #: the app and window of the observation it was made against
    where: str = ""


@dataclass
class RefusedCard(Card):
    """Attempts the kernel refused before anything ran (``action_refused``): the kind, the
    code with the error table's words, and how many attempts the event stands for."""

    action_kind: str = "action"
    code: str = ""
    reason: str = ""
    count: int = 1
    #: who holds the session back (who paused it, who took over), when the kernel knows
    by: str = ""
    error_text: str | None = None
    error_link: str | None = None


@dataclass
class ObservationCard(Card):
    app: str = ""
    window_id: str = ""
    element_count: int | None = None
    tree_version: str = ""


@dataclass
class StateCard(Card):
    #: started, paused, resumed, target_bound, handoff, completed, failed, canceled
    event: str = ""
    by: str = ""
    takeover: bool = False
    hand_back: bool = False
    reason: str = ""
    detail: str = ""
    from_state: str = ""
    #: a start's session mode (atomic, delegated)
    mode: str = ""


@dataclass
class ApprovalCard(Card):
    confirmation_id: str = ""
    risk: str = ""
    reason: str = ""
    summary: str = ""
    expires_at: float | None = None
    #: pending, approved, denied, expired
    outcome: str = "pending"
    by: str = ""


@dataclass
class VerificationCard(Card):
    verification_id: str = ""
    source: str = "task"
    check: str = ""
    passed: bool | None = None
    reason: str = ""


@dataclass
class SnapshotCard(Card):
    snapshot_id: str = ""
    width: int | None = None
    height: int | None = None
    app: str = ""
    url: str | None = None
    expires_at: float | None = None


#: a snapshot's preview URL and its expiry, or None when previews are not available
PreviewIssuer = Callable[[SnapshotRow], tuple[str, float] | None]


class TimelineFolder:
    """Folds one session's events into cards, all at once (:meth:`load`) or as they come
    (:meth:`poll`, which returns the cards that are new or changed)."""

    def __init__(
        self,
        db: Database,
        session_id: str,
        locale: str = "en",
        *,
        previews: PreviewIssuer | None = None,
    ) -> None:
        self.db = db
        self.session_id = session_id
        self.locale = locale
        self.previews = previews
        self._timeline = TimelineRepository(db)
        self._verifications = VerificationRepository(db)
        self._snapshots = SnapshotRepository(db) if previews is not None else None
        self._cards: dict[str, Card] = {}
        self._by_action: dict[str, ActionCard] = {}
        self._approvals: dict[str, ApprovalCard] = {}
        self._seen_snapshots: set[str] = set()
        self._ledger: dict[str, LedgerFacts] = {}
        self._checks: dict[str, VerificationRow] = {}
        #: frame id -> "app · window" of each observation folded so far
        self._frames: dict[str, str] = {}
        #: the refused card a next refusal of the same kind and code adds to
        self._last_refused: RefusedCard | None = None
        self._times: list[float] = []
        self._seqs: list[int] = []
        self.last_seq = 0
        self.observations = 0
        self.events = 0
        #: events left out because the timeline is longer than MAX_EVENTS
        self.omitted = 0

    # -- reading
    def load(self) -> list[Card]:
        """Fold the whole timeline (its newest MAX_EVENTS events) and the snapshots."""
        self._load(None)
        self._add_snapshots()
        return self.cards()

    def load_until(self, seq: int) -> None:
        """Fold the events up to ``seq`` (what a page rendered already) without issuing
        previews, so :meth:`poll` returns what changed after it — an action requested
        before ``seq`` that ended after it comes back as a changed card."""
        self._load(seq)
        if self._snapshots is not None:
            upto = self._times[-1] if self._times else 0.0
            for row in self._snapshots.recent(
                session_id=self.session_id, kind="app_snapshot", limit=500
            ):
                if row.created_at <= upto:
                    self._seen_snapshots.add(row.id)

    def _load(self, until: int | None) -> None:
        where = "session_id = ?"
        params: list[object] = [self.session_id]
        if until is not None:
            where += " AND seq <= ?"
            params.append(until)
        total_row = self.db.query_one(
            f"SELECT COUNT(*) AS n FROM timeline_events WHERE {where}", tuple(params)
        )
        total = int(total_row["n"]) if total_row is not None else 0
        after = 0
        if total > MAX_EVENTS:
            self.omitted = total - MAX_EVENTS
            skip = self.db.query_one(
                "SELECT seq FROM timeline_events WHERE session_id = ? ORDER BY seq "
                "LIMIT 1 OFFSET ?",
                (self.session_id, self.omitted - 1),
            )
            after = int(skip["seq"]) if skip is not None else 0
        self._ledger = {
            r["id"]: _facts(r)
            for r in self.db.query(_LEDGER_SQL + "session_id = ?", (self.session_id,))
        }
        self._checks = {r.id: r for r in self._verifications.list(self.session_id)}
        while True:
            batch = self._timeline.list(self.session_id, after_seq=after, limit=READ_BATCH)
            if until is not None:
                batch = [e for e in batch if e.seq <= until]
            if not batch:
                break
            self._fold(batch)
            after = batch[-1].seq
            if len(batch) < READ_BATCH:
                break

    def poll(self) -> list[Card]:
        """The events written since the last read, folded; returns the changed cards."""
        changed: dict[str, Card] = {}
        while True:
            batch = self._timeline.list(self.session_id, after_seq=self.last_seq, limit=READ_BATCH)
            if not batch:
                break
            for card in self._fold(batch):
                changed[card.id] = card
            if len(batch) < READ_BATCH:
                break
        for card in self._add_snapshots():
            changed[card.id] = card
        return sorted(changed.values(), key=lambda c: c.pos)

    def cards(self) -> list[Card]:
        return sorted(self._cards.values(), key=lambda c: c.pos)

    # -- folding
    def _fold(self, events: Iterable[TimelineEventRow]) -> list[Card]:
        changed: dict[str, Card] = {}
        for event in events:
            if event.seq <= self.last_seq:
                continue
            self.last_seq = event.seq
            self.events += 1
            self._times.append(event.created_at)
            self._seqs.append(event.seq)
            card = self._one(event)
            if card is not None:
                if card.kind not in ("refused", "observation"):
                    self._last_refused = None  # something else happened: a new run starts
                self._cards[card.id] = card
                changed[card.id] = card
        return list(changed.values())

    def _one(self, e: TimelineEventRow) -> Card | None:
        p = e.payload
        t = e.type
        if t is EventType.OBSERVATION_CREATED:
            self.observations += 1
            count = p.get("elementCount")
            if p.get("frameId"):
                self._frames[str(p["frameId"])] = self._where(p.get("app"), p.get("windowId"))
            return ObservationCard(
                id=dom_id("obs", e.seq),
                kind="observation",
                pos=e.seq,
                at=e.created_at,
                app=str(p.get("app") or ""),
                window_id=str(p.get("windowId") or ""),
                element_count=int(count) if isinstance(count, int) else None,
                tree_version=str(p.get("treeVersion") or "")[:16],
            )
        if t is EventType.ACTION_REQUESTED:
            return self._requested(e)
        if t in _TERMINAL:
            return self._terminal(e)
        if t is EventType.APPROVAL_REQUESTED:
            return self._approval_requested(e)
        if t is EventType.APPROVAL_RESOLVED:
            return self._approval_resolved(e)
        if t is EventType.VERIFICATION_COMPLETED:
            return self._verified(e)
        if t is EventType.VERIFICATION_STARTED:
            return None  # folded: the completed event (written with it) carries the verdict
        if t in _STATE_EVENTS:
            return self._state(e)
        if str(t) == ACTION_REFUSED:
            return self._refused(e)
        return None

    def _where(self, app: object, window: object) -> str:
        parts = [str(app)] if app else []
        if window:
            parts.append(translate("sessions.card.window", self.locale, id=window))
        return " · ".join(parts)

    def _place(self, card: ActionCard, row: LedgerFacts | None) -> None:
        """What the card acted on and in which window, from what the ledger recorded."""
        if row is None:
            return
        if row.frame_id and row.frame_id in self._frames:
            card.where = self._frames[row.frame_id]
        if card.confirmation and card.confirmation in self._approvals:
            label = _label_of(self._approvals[card.confirmation].summary)
            if label:
                card.target = label
                return
        kind = card.target_kind or row.target_kind
        aimed = bounds_text(kind, row.bounds, self.locale)
        if aimed:
            card.target = aimed
        elif kind == "window":
            card.target = translate("sessions.card.target.window", self.locale)

    def _refused(self, e: TimelineEventRow) -> RefusedCard:
        """One card per run of refusals: the kernel writes one event per session and code
        every few seconds with the repeats in between counted (``count``); consecutive events
        of the same kind and code (nothing but observations between them) add up on one
        card."""
        p = e.payload
        code = str(p.get("code") or "")
        raw = p.get("count")
        count = raw if isinstance(raw, int) and raw > 0 else 1
        kind = str(p.get("kind") or "action")
        last = self._last_refused
        if last is not None and last.code == code and last.action_kind == kind:
            last.count += count
            return last
        card = RefusedCard(
            id=dom_id("rf", e.seq),
            kind="refused",
            pos=e.seq,
            at=e.created_at,
            action_kind=kind,
            code=code,
            reason=str(p.get("reason") or ""),
            count=count,
            by=str(p.get("by") or ""),
        )
        if code:
            card.error_text = describe(code, self.locale).sentence
            card.error_link = link(code)
        self._last_refused = card
        return card

    def _action_card(self, e: TimelineEventRow) -> ActionCard:
        aid = e.action_id or f"seq{e.seq}"
        card = self._by_action.get(aid)
        if card is None:
            card = ActionCard(
                id=dom_id("act", aid), kind="action", pos=e.seq, at=e.created_at, action_id=aid
            )
            self._by_action[aid] = card
        return card

    def _ledger_row(self, aid: str, *, fresh: bool = False) -> LedgerFacts | None:
        facts = None if fresh else self._ledger.get(aid)
        if facts is None:
            found = self.db.query_one(_LEDGER_SQL + "id = ?", (aid,))
            if found is not None:
                facts = self._ledger[aid] = _facts(found)
        return facts

    def _requested(self, e: TimelineEventRow) -> ActionCard:
        p = e.payload
        card = self._action_card(e)
        card.action_kind = str(p.get("kind") or card.action_kind)
        card.risk = str(p.get("risk") or "")
        card.decision = str(p.get("decision") or "")
        card.reason = str(p.get("reason") or "")
        card.effect = str(p.get("effect") or "")
        card.target_kind = str(p.get("targetKind") or "")
        row = self._ledger_row(card.action_id)
        if row is not None:
            card.risk = card.risk or row.risk
            card.decision = card.decision or row.decision
            card.reason = card.reason or row.reason
        self._place(card, row)
        return card

    def _terminal(self, e: TimelineEventRow) -> ActionCard:
        p = e.payload
        card = self._action_card(e)
        status = _TERMINAL[e.type]
        row = self._ledger_row(card.action_id)
        if row is None or row.status not in _FINISHED:
            row = self._ledger_row(card.action_id, fresh=True)  # cached before it ended
        if row is not None and row.status in _FINISHED:
            # the ledger knows what the event does not say: an executed action that changed
            # nothing is a no-op
            status = row.status if e.type is EventType.ACTION_EXECUTED else status
        if p.get("kind"):
            card.action_kind = str(p["kind"])
        if p.get("risk") and not card.risk:
            card.risk = str(p["risk"])
        if p.get("method"):
            card.method = str(p["method"])
        card.status = status
        if e.type is EventType.ACTION_FAILED:
            card.error_code = str(p.get("code") or (row.error_code if row else "") or "")
        elif e.type is EventType.ACTION_BLOCKED:
            card.error_code = str(
                p.get("code") or (row.error_code if row else None) or "action_blocked"
            )
            if p.get("reason"):
                card.reason = str(p["reason"])
        if card.error_code:
            words = describe(card.error_code, self.locale)
            card.error_text, card.error_next = words.sentence, words.next_step
            card.error_link = link(card.error_code)
        card.duration_s = max(0.0, e.created_at - card.at)
        self._place(card, row)
        return card

    def _approval_requested(self, e: TimelineEventRow) -> ApprovalCard:
        p = e.payload
        cid = str(p.get("confirmationId") or f"seq{e.seq}")
        expires = p.get("expiresAt")
        card = ApprovalCard(
            id=dom_id("cf", cid),
            kind="approval",
            pos=e.seq,
            at=e.created_at,
            confirmation_id=cid,
            risk=str(p.get("risk") or ""),
            reason=str(p.get("reason") or ""),
            summary=split_summary(str(p.get("summary") or ""))[0],
            expires_at=float(expires) if isinstance(expires, int | float) else None,
        )
        self._approvals[cid] = card
        if e.action_id and e.action_id in self._by_action:
            self._by_action[e.action_id].confirmation = cid
        return card

    def _approval_resolved(self, e: TimelineEventRow) -> ApprovalCard:
        p = e.payload
        cid = str(p.get("confirmationId") or "")
        card = self._approvals.get(cid)
        if card is None:
            card = ApprovalCard(
                id=dom_id("cf", cid or f"seq{e.seq}"),
                kind="approval",
                pos=e.seq,
                at=e.created_at,
                confirmation_id=cid,
            )
            self._approvals[cid] = card
        card.outcome = str(p.get("outcome") or "expired")
        card.by = str(p.get("by") or "")
        return card

    def _verified(self, e: TimelineEventRow) -> Card:
        p = e.payload
        vid = str(p.get("verificationId") or f"seq{e.seq}")
        row = self._checks.get(vid) or self._verifications.get(vid)
        spec = row.spec if row is not None else {"kind": p.get("kind")}
        passed_raw = p.get("passed", row.passed if row else None)
        passed = None if passed_raw is None else bool(passed_raw)
        reason = str(p.get("reason") or (row.reason if row else "") or "")
        if e.action_id:
            card = self._action_card(e)
            card.checks.append(CheckLine(vid, check_text(spec, self.locale), passed, reason))
            return card
        return VerificationCard(
            id=dom_id("vf", vid),
            kind="verification",
            pos=e.seq,
            at=e.created_at,
            verification_id=vid,
            source=str(p.get("source") or (row.source if row else "task")),
            check=check_text(spec, self.locale),
            passed=passed,
            reason=reason,
        )

    def _state(self, e: TimelineEventRow) -> StateCard:
        p = e.payload
        event = _STATE_EVENTS[e.type]
        detail = ""
        if e.type in (EventType.TARGET_BOUND, EventType.SESSION_STARTED):
            detail = target_text(p.get("target"), self.locale)
        elif p.get("note"):
            detail = str(p["note"])[:200]
        return StateCard(
            id=dom_id("ev", e.seq),
            kind="state",
            pos=e.seq,
            at=e.created_at,
            event=event,
            by=str(p.get("by") or ""),
            takeover=bool(p.get("takeover")),
            hand_back=bool(p.get("handBack")),
            reason=str(p.get("reason") or ""),
            detail=detail,
            from_state=str(p.get("from") or ""),
            mode=str(p.get("mode") or ""),
        )

    # -- snapshots
    def _add_snapshots(self) -> list[Card]:
        if self._snapshots is None or self.previews is None:
            return []
        added: list[Card] = []
        rows = self._snapshots.recent(session_id=self.session_id, kind="app_snapshot", limit=500)
        for row in sorted(rows, key=lambda r: r.created_at):
            if row.id in self._seen_snapshots:
                continue
            self._seen_snapshots.add(row.id)
            issued = self.previews(row)
            app = row.app or {}
            where = bisect.bisect_right(self._times, row.created_at)
            before = self._seqs[where - 1] if where > 0 else 0
            card = SnapshotCard(
                id=dom_id("snap", row.id),
                kind="snapshot",
                pos=before + 0.5,
                at=row.created_at,
                snapshot_id=row.id,
                width=row.width,
                height=row.height,
                app=str(app.get("name") or app.get("executable") or ""),
                url=issued[0] if issued else None,
                expires_at=issued[1] if issued else None,
            )
            self._cards[card.id] = card
            added.append(card)
        return added


def fold(db: Database, session_id: str, locale: str = "en") -> list[Card]:
    """The whole timeline's cards (no snapshots): for callers that only read."""
    return TimelineFolder(db, session_id, locale).load()


__all__ = [
    "ActionCard",
    "ApprovalCard",
    "Card",
    "CheckLine",
    "ObservationCard",
    "PreviewIssuer",
    "RefusedCard",
    "SnapshotCard",
    "StateCard",
    "TimelineFolder",
    "VerificationCard",
    "actor_text",
    "answerer_text",
    "check_text",
    "dom_id",
    "error_next_step",
    "error_sentence",
    "fold",
    "target_text",
]
