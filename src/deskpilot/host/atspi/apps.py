"""The applications on the accessibility bus, and the process behind each bus name.

An app's name, toolkit and pid are learnt once per bus name and remembered: every snapshot
needs them (the toolkit picks how the tree is read and how names are cleaned,
docs/host-tree.md), and asking again would cost round trips each time. The pid is asked
afresh only where it is the question: whether an element is still the one observed
(docs/host-tree.md, "Staleness").

A window listing asks every app one question (``Applications.statuses``): its name when it
was never read, else a ``Peer.Ping``. An app that leaves its question unanswered past the
listing's bound — stopped (SIGSTOP), deadlocked, stuck in a long handler — is listed with
what is known of it and how long it has been silent, and the question stays asked: the next
listing does not wait for it again, and its answer, when the app runs again, fills the name
in. So one frozen app costs one listing at most that bound, and never the other apps' names.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from deskpilot.host.atspi.bus import (
    I_ACCESSIBLE,
    I_APPLICATION,
    I_PROPERTIES,
    REGISTRY,
    ROOT_PATH,
    AtspiCallError,
    Conn,
)
from deskpilot.host.atspi.model import AppInfo, ElementRef
from deskpilot.host.atspi.vocab import State, bit, state_mask

I_PEER = "org.freedesktop.DBus.Peer"


@dataclass(frozen=True, slots=True)
class AppStatus:
    """One app on the bus as a window listing knows it.

    ``info``: its name and toolkit, once it answered (now or in an earlier listing);
    ``silent_ms``: how long it has left the listing's question unanswered (None: answered).
    """

    pid: int
    bus_name: str
    info: AppInfo | None
    silent_ms: float | None


@dataclass(slots=True)
class _Question:
    """A listing's question to one app, kept until it is answered (``sent``: loop time)."""

    sent: float
    answer: asyncio.Future[object]


class Applications:
    """What is known of each app by its bus name: its ``AppInfo`` and its pid."""

    def __init__(self, bus: Conn) -> None:
        self._bus = bus
        self._apps: dict[str, AppInfo] = {}
        self._pids: dict[str, int] = {}
        #: each app's open question from a window listing (``statuses``)
        self._questions: dict[str, _Question] = {}

    async def applications(self, pid: int | None = None) -> list[AppInfo]:
        """Every app the registry lists that answers and has a pid (only ``pid``'s, when
        given: their pids are asked of the bus daemon first, so an app that does not answer
        — stopped, hung — and was never asked before delays no other process's lookup)."""
        body = await self._bus.call(REGISTRY, ROOT_PATH, I_ACCESSIBLE, "GetChildren")
        refs = [(str(b), str(p)) for b, p in body[0]]
        if pid is not None:
            pids = await asyncio.gather(*(self.pid(b) for b, _ in refs))
            refs = [r for r, p in zip(refs, pids, strict=True) if p == pid]
        infos = await asyncio.gather(*(self.info(b, p) for b, p in refs))
        return [i for i in infos if i is not None]

    async def statuses(self, wait_s: float) -> list[AppStatus]:
        """Every app the registry lists that has a pid, each as far as it answers within
        ``wait_s``: one question per app (its info when never read, else a ping), all at
        once. A question an earlier call asked and that is still unanswered is not asked
        again, and waited for only until ``wait_s`` after it was sent — so an app that does
        not answer costs one call at most ``wait_s``, and the others are never held up."""
        body = await self._bus.call(REGISTRY, ROOT_PATH, I_ACCESSIBLE, "GetChildren")
        refs = [(str(b), str(p)) for b, p in body[0]]
        pids = await asyncio.gather(*(self.pid(b) for b, _ in refs))
        on_bus = {b for b, _ in refs}
        for gone in [b for b in self._questions if b not in on_bus]:
            del self._questions[gone]
        loop = asyncio.get_running_loop()
        asked = [
            (bus, pid, self._question(bus, path, loop.time()))
            for (bus, path), pid in zip(refs, pids, strict=True)
            if pid is not None
        ]
        # wait only for questions still inside their own bound: one left unanswered past it
        # by an earlier listing is not waited for again
        now = loop.time()
        waited = [q for _, _, q in asked if not q.answer.done() and q.sent + wait_s > now]
        if waited:
            until = max(q.sent for q in waited) + wait_s
            await asyncio.wait([q.answer for q in waited], timeout=until - now)
        now = loop.time()
        return [
            AppStatus(
                pid,
                bus,
                self._apps.get(bus),
                None if q.answer.done() else round((now - q.sent) * 1000, 1),
            )
            for bus, pid, q in asked
        ]

    def _question(self, bus: str, path: str, now: float) -> _Question:
        """The app's open question, else a new one: its info when it was never read (a name
        for the listing), else a ping (does it answer at all?)."""
        question = self._questions.get(bus)
        if question is not None and not question.answer.done():
            return question
        if bus in self._apps:
            ask: Any = self._bus.call(bus, "/", I_PEER, "Ping")
        else:
            ask = self.info(bus, path)
        answer: asyncio.Future[object] = asyncio.ensure_future(ask)
        answer.add_done_callback(_retrieved)
        question = _Question(now, answer)
        self._questions[bus] = question
        return question

    def ask(self, pid: int | None, bus: str | None, since: float) -> None:
        """Leave a question open to an app that did not answer a read by its deadline
        (``bus``, else every bus name of ``pid``), counted as asked when that read began
        (``since``, loop time): the next read of it knows it is silent before it waits
        (``still_silent``), and the answer, once it runs again, clears that."""
        for name in self._names(pid, bus):
            self._question(name, ROOT_PATH, since)

    async def still_silent(
        self, pid: int | None, bus: str | None, deadline_s: float, probe_s: float
    ) -> float | None:
        """How long (ms) the app — ``bus``, else every bus name of ``pid`` — has left a
        question unanswered, when no answer comes in time; None when it answers (or has no
        question open). An app gets one deadline to answer, counted from the first question
        it left open: the answer is waited for until that question is ``deadline_s`` old —
        never less than ``probe_s``, never more than ``deadline_s``. A read that got no
        answer leaves a question dated from its start (``ask``), so a stopped app costs a
        later read ``probe_s``, not its whole deadline, every time it is looked at; a
        listing's young question (an app busy for a moment) still gets the full time."""
        names = self._names(pid, bus)
        open_ = [self._questions.get(name) for name in names]
        questions = [q for q in open_ if q is not None and not q.answer.done()]
        if not names or len(questions) < len(names):
            return None
        loop = asyncio.get_running_loop()
        first = min(q.sent for q in questions)
        wait_s = min(deadline_s, max(probe_s, first + deadline_s - loop.time()))
        done, _ = await asyncio.wait(
            [q.answer for q in questions], timeout=wait_s, return_when=asyncio.FIRST_COMPLETED
        )
        if done:
            return None
        return round((loop.time() - first) * 1000, 1)

    def _names(self, pid: int | None, bus: str | None) -> list[str]:
        if bus is not None:
            return [bus]
        if pid is None:
            return []
        return [name for name, p in self._pids.items() if p == pid]

    def known(self, bus: str) -> AppInfo | None:
        """The app's info if it was already read (no call)."""
        return self._apps.get(bus)

    async def info(self, bus: str, path: str) -> AppInfo | None:
        """The app's name, toolkit and pid; None when it does not answer or has no pid."""
        if bus in self._apps:
            return self._apps[bus]
        res = await self._bus.batch(
            [
                (bus, path, I_PROPERTIES, "Get", "ss", (I_ACCESSIBLE, "Name")),
                (bus, path, I_PROPERTIES, "Get", "ss", (I_APPLICATION, "ToolkitName")),
                (bus, path, I_PROPERTIES, "Get", "ss", (I_APPLICATION, "Version")),
            ]
        )
        if isinstance(res[0], AtspiCallError):
            return None
        pid = await self.pid(bus)
        if pid is None:
            return None

        def val(r: Any) -> str | None:
            return None if isinstance(r, AtspiCallError) else str(r[0].value)

        info = AppInfo(
            name=val(res[0]) or "",
            pid=pid,
            bus_name=bus,
            path=path,
            toolkit=val(res[1]),
            toolkit_version=val(res[2]),
        )
        self._apps[bus] = info
        if info.kit == "qt":
            self._bus.get_only.add(bus)  # Qt 6.4 crashes on Properties.GetAll
        return info

    async def pid(self, bus: str) -> int | None:
        """The pid dbus-daemon gives for the bus name; None when it has none (gone)."""
        if bus in self._pids:
            return self._pids[bus]
        try:
            body = await self._bus.call(
                "org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                "org.freedesktop.DBus",
                "GetConnectionUnixProcessID",
                "s",
                (bus,),
            )
        except AtspiCallError:
            return None
        pid = int(body[0])
        self._pids[bus] = pid
        return pid

    async def still_valid(self, element: ElementRef) -> bool:
        """The object still exists, is not defunct, and its bus name still belongs to its pid;
        an element of a popup (a menu item) is still showing: its menu has not closed.

        The two questions go out at once (the app answers one, the bus daemon the other)."""
        self._pids.pop(element.bus_name, None)
        state, pid = await asyncio.gather(
            self._bus.call(element.bus_name, element.path, I_ACCESSIBLE, "GetState"),
            self.pid(element.bus_name),
            return_exceptions=True,
        )
        if isinstance(state, BaseException):
            if isinstance(state, AtspiCallError):
                return False
            raise state
        if isinstance(pid, BaseException):
            raise pid
        mask = state_mask(state[0])
        if mask & bit(State.DEFUNCT):
            return False
        if element.popup_at is not None and not mask & bit(State.SHOWING):
            return False
        return pid is not None and pid == element.pid


def _retrieved(future: asyncio.Future[object]) -> None:
    """An answer nobody may be waiting for any more: its error is read, never logged as
    "never retrieved" (an app that left the bus answers with one)."""
    if not future.cancelled():
        future.exception()
