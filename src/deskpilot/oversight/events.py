"""What every dashboard page must learn at once, polled from the database for ``/events``.

The state a person must see without reloading: the pending confirmations, the halt, the
takeover hold, and a sessions revision (the newest timeline event and the latest session
update) that tells pages with session lists to refresh their parts. Every writer of these
is another process (a ``deskpilot serve`` whose kill switch fires, an agent's action that
waits for a confirmation, ``deskpilot unhalt`` in a terminal), and SQLite has no
cross-process notification, so the dashboard polls.

One :class:`LivePoller` per dashboard process polls for *every* open browser (not one loop
per tab), only while at least one browser listens, every :data:`POLL_S` (250 ms: a
notification is on the page well within a second). A poll is a handful of small reads
(:func:`read_state`); a browser is sent a state only when it changed, in its own language.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from deskpilot.kernel.halt import Halt
from deskpilot.kernel.takeover import Takeover, TakeoverRow
from deskpilot.oversight.banner import compose
from deskpilot.oversight.confirmations_view import ConfirmationsView
from deskpilot.oversight.i18n import translate
from deskpilot.store.confirmations import ConfirmationRow
from deskpilot.store.db import Database
from deskpilot.store.halts import HaltRow
from deskpilot.store.settings import Settings

log = logging.getLogger(__name__)

POLL_S = 0.25

#: the words app.js needs for what it builds itself (buttons, countdowns, outcomes)
LABEL_KEYS: dict[str, str] = {
    "approve": "confirmations.approve",
    "deny": "confirmations.deny",
    "left": "confirmations.left",
    "expired": "confirmations.expired_now",
    "notify": "confirmations.notify",
    "unhalt": "readiness.unhalt",
    "failed": "readiness.action_failed",
    "offline": "readiness.offline",
    "openSession": "readiness.takeover.open",
    "session": "confirmations.session",
}


@dataclass(frozen=True)
class LiveState:
    """One poll's rows, before any language is chosen."""

    confirmations: tuple[ConfirmationRow, ...]
    halt: HaltRow | None
    takeover: TakeoverRow | None
    chord: str
    sessions_revision: str

    @property
    def key(self) -> tuple[Any, ...]:
        """Equal keys mean nothing a browser shows has changed."""
        return (
            tuple((c.id, c.status) for c in self.confirmations),
            None if self.halt is None else self.halt.id,
            None if self.takeover is None else self.takeover.id,
            self.chord,
            self.sessions_revision,
        )

    @property
    def live_revision(self) -> str:
        """What the readiness page's live sections were drawn from (see
        :func:`live_revision`)."""
        return _live_revision(self.halt, self.takeover, self.sessions_revision)


def sessions_revision(db: Database) -> str:
    """Changes whenever a timeline event is written or a session row changes (a pause
    writes both; a bare state change at least ``updated_at``)."""
    r = db.query_one(
        "SELECT (SELECT MAX(seq) FROM timeline_events) AS seq, "
        "(SELECT MAX(updated_at) FROM sessions) AS updated, "
        "(SELECT COUNT(*) FROM sessions) AS n"
    )
    if r is None:
        return "0"
    return f"{r['seq'] or 0}:{r['updated'] or 0:.3f}:{r['n'] or 0}"


def _live_revision(halt: HaltRow | None, takeover: TakeoverRow | None, sessions: str) -> str:
    halt_id = "-" if halt is None else halt.id
    takeover_id = "-" if takeover is None else takeover.id
    return f"{halt_id}/{takeover_id}/{sessions}"


def live_revision(db: Database) -> str:
    """The halt, the takeover hold and the sessions revision as one string. The readiness
    page renders it with its live sections and compares it with every ``state`` event's
    ``liveRevision``: a change that lands between the page's render and its first event
    (an Unhalt clicked at once) still refreshes the sections, which comparing one event with
    the next would miss."""
    return _live_revision(Halt(db).active(), Takeover(db).active(), sessions_revision(db))


def read_state(db: Database, view: ConfirmationsView) -> LiveState:
    halt = Halt(db).active()
    return LiveState(
        confirmations=tuple(view.pending_rows()),
        halt=halt,
        takeover=Takeover(db).active(),
        chord=Settings.load(db).kill_switch if halt is not None else "",
        sessions_revision=sessions_revision(db),
    )


def render_state(state: LiveState, view: ConfirmationsView, locale: str) -> dict[str, Any]:
    """The ``state`` event's data for a browser in ``locale``."""
    shown = compose(state.halt, state.takeover, state.chord, locale)
    return {
        "confirmations": [view.card(row, locale).to_json() for row in state.confirmations],
        "halt": shown.halt_json(),
        "takeover": shown.takeover_json(),
        "sessionsRevision": state.sessions_revision,
        "liveRevision": state.live_revision,
        "labels": {name: translate(key, locale) for name, key in LABEL_KEYS.items()},
    }


class LivePoller:
    """Polls while someone listens; each listener gets the latest state, never a backlog."""

    def __init__(self, db: Database, *, interval_s: float = POLL_S) -> None:
        self.db = db
        self.view = ConfirmationsView(db)
        self.interval_s = interval_s
        self.polls = 0
        self._listeners: set[asyncio.Queue[LiveState]] = set()
        self._task: asyncio.Task[None] | None = None
        self._latest: LiveState | None = None
        self._closed = False

    @property
    def listeners(self) -> int:
        return len(self._listeners)

    @contextlib.asynccontextmanager
    async def subscribe(self) -> AsyncIterator[AsyncIterator[LiveState]]:
        """``async with poller.subscribe() as states: async for state in states: …`` — the
        current state first, then each change."""
        queue: asyncio.Queue[LiveState] = asyncio.Queue(maxsize=1)
        self._listeners.add(queue)
        if self._task is not None and not self._task.done():
            if self._latest is not None:  # else the loop's first read reaches everyone
                queue.put_nowait(self._latest)
        elif not self._closed:
            self._latest = None  # a new loop reads afresh and sends it to everyone
            self._task = asyncio.create_task(self._loop(), name="dashboard-live-poller")
        try:
            yield _drain(queue)
        finally:
            self._listeners.discard(queue)

    async def _loop(self) -> None:
        while self._listeners and not self._closed:
            try:
                state = await asyncio.to_thread(read_state, self.db, self.view)
            except Exception as exc:  # a locked or broken database: try again, say why once
                log.warning("the dashboard could not read the live state: %s", exc)
                await asyncio.sleep(self.interval_s * 4)
                continue
            self.polls += 1
            if self._latest is None or state.key != self._latest.key:
                self._latest = state
                for queue in list(self._listeners):
                    _offer(queue, state)
            await asyncio.sleep(self.interval_s)

    async def close(self) -> None:
        self._closed = True
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def _offer(queue: asyncio.Queue[LiveState], state: LiveState) -> None:
    """Replace what the listener has not read yet: only the newest state matters."""
    with contextlib.suppress(asyncio.QueueEmpty):
        queue.get_nowait()
    queue.put_nowait(state)


async def _drain(queue: asyncio.Queue[LiveState]) -> AsyncIterator[LiveState]:
    while True:
        yield await queue.get()
