"""Knowing when an app has finished reacting: AT-SPI events going quiet.

Semantic presses fired faster than an app processes them are lost (gnome-calculator showed
"12×7" instead of "84" with 0.1 s between presses). GTK buttons also answer ``DoAction`` at
once but emit ``clicked`` only after a 250 ms "activate" animation. So an action waits until
the app's events go quiet:

* wait up to ``first_ms`` (600 ms) for the first event from the app after the action (covers the
  activate delay); none at all means nothing visible changed (or the app reports nothing);
* once events flow, wait until none arrived for ``quiet_ms`` (50 ms);
* never longer than ``max_ms``: the result then says "not settled" and the caller goes on.

atk-bridge apps only emit events someone registered for, so the watcher registers the event
classes it counts with the registry once, at start.

The same events tell the tree cache (:mod:`.tree_cache`) what changed: per sender, every event
gets a sequence number, and the last ``CHANGE_LOG`` of them are kept as (number, object path,
kind) so a cached tree knows which of its nodes to read again, or that it cannot know.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import time
from collections import deque
from typing import Final, NamedTuple

from dbus_fast import Message, MessageType
from dbus_fast.aio import MessageBus

from deskpilot.host.atspi.bus import REGISTRY

_EVENT_IFACES: Final = (
    "org.a11y.atspi.Event.Object",
    "org.a11y.atspi.Event.Window",
    "org.a11y.atspi.Event.Document",
)
_REGISTERED_EVENTS: Final = (
    "object:text-changed",
    "object:state-changed",
    "object:children-changed",
    "object:property-change",
    "object:visible-data-changed",
    "object:active-descendant-changed",
    # for the tree cache: a table's cells change state with these and no event of their own
    # (a GTK 3 tree view's selection), and rows come and go without children-changed
    "object:selection-changed",
    "object:row-inserted",
    "object:row-deleted",
    "object:row-reordered",
    "object:column-inserted",
    "object:column-deleted",
    "object:column-reordered",
    "object:model-changed",
    "window:",
    "document:load-complete",
    # a page load that ended without completing, and one started by a reload (page_loads)
    "document:load-stopped",
    "document:reload",
)
#: the event kinds that say a page load started or ended (``EventWatcher.page_load``)
_LOAD_KINDS: Final = frozenset({"StateChanged:busy", "Reload:", "LoadComplete:", "LoadStopped:"})
_NAME_GONE_RULE: Final = (
    "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',"
    "member='NameOwnerChanged'"
)
_POLL_S: Final = 0.01
#: the rule's two numbers (see the module docstring)
FIRST_EVENT_S: Final = 0.6
EVENT_QUIET_S: Final = 0.05
#: arrival times kept per sender, to find the first event after a moment (one action's
#: reaction is a few to a few hundred events; older ones only matter while it settles)
_RECENT_EVENTS: Final = 1024
#: changes kept per sender for the tree cache; more since a cached read = an overflow (the
#: cache reads that tree in full)
CHANGE_LOG: Final = 512


class Change(NamedTuple):
    """One event as the tree cache needs it: which object, and what kind of change."""

    seq: int
    path: str
    #: ``Member:detail``, e.g. ``PropertyChange:accessible-name``, ``StateChanged:focused``,
    #: ``ChildrenChanged:add``, ``Activate:`` (window events), ``LoadComplete:`` (document)
    kind: str


class PageLoad(NamedTuple):
    """What an app's events said of its page loads since a moment (host/page_loads.py)."""

    #: a load started (an object went busy, a reload) since then
    started: bool
    #: a load ended (an object stopped being busy, a document loaded or stopped) since then
    ended: bool
    #: the last word of its events is a load under way (busy, and not yet ended)
    loading: bool


class EventWatcher:
    """Records, per sending connection, when its accessibility events arrived."""

    def __init__(self, bus: MessageBus) -> None:
        self._bus = bus
        self._last: dict[str, float] = {}
        #: when the sender's last page load started and ended (busy, load-complete …)
        self._load_started: dict[str, float] = {}
        self._load_ended: dict[str, float] = {}
        self._recent: dict[str, deque[float]] = {}
        #: set by every event of that sender; a settle loop waits on it instead of polling
        self._arrived: dict[str, asyncio.Event] = {}
        self._seq: dict[str, int] = {}
        self._changes: dict[str, deque[Change]] = {}
        self._started = False
        #: registration with the registry finished (whether each event class was accepted)
        self.registered = False
        self._registered_seq: dict[str, int] = {}

    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        self._bus.add_message_handler(self._on_message)
        # the apps' events, and (a long-lived host sees many apps come and go) the names
        # that leave the bus, so that an app's records leave with it
        rules = [f"type='signal',interface='{iface}'" for iface in _EVENT_IFACES]
        for rule in (*rules, _NAME_GONE_RULE):
            await self._bus.call(
                Message(
                    destination="org.freedesktop.DBus",
                    path="/org/freedesktop/DBus",
                    interface="org.freedesktop.DBus",
                    member="AddMatch",
                    signature="s",
                    body=[rule],
                )
            )
        for event in _REGISTERED_EVENTS:
            await self._register(event)
        self._registered_seq = dict(self._seq)
        self.registered = True

    async def _register(self, event: str) -> None:
        for sig, body in (("s", [event]), ("sas", [event, []]), ("sass", [event, [], ""])):
            with contextlib.suppress(Exception):
                reply = await self._bus.call(
                    Message(
                        destination=REGISTRY,
                        path="/org/a11y/atspi/registry",
                        interface="org.a11y.atspi.Registry",
                        member="RegisterEvent",
                        signature=sig,
                        body=body,
                    )
                )
                if reply is not None and reply.message_type != MessageType.ERROR:
                    return

    def _on_message(self, msg: Message) -> bool:
        if (
            msg.message_type == MessageType.SIGNAL
            and msg.member == "NameOwnerChanged"
            and msg.sender == "org.freedesktop.DBus"
        ):
            name, _old, new = msg.body
            if not new and str(name).startswith(":"):
                self.forget(str(name))
            return False
        if msg.message_type == MessageType.SIGNAL and msg.interface in _EVENT_IFACES and msg.sender:
            now = time.monotonic()
            sender = msg.sender
            self._last[sender] = now
            recent = self._recent.get(sender)
            if recent is None:
                recent = self._recent[sender] = deque(maxlen=_RECENT_EVENTS)
            recent.append(now)
            seq = self._seq[sender] = self._seq.get(sender, 0) + 1
            changes = self._changes.get(sender)
            if changes is None:
                changes = self._changes[sender] = deque(maxlen=CHANGE_LOG)
            kind = _kind(msg)
            changes.append(Change(seq, msg.path or "", kind))
            if kind in _LOAD_KINDS:
                self._page_load(sender, kind, msg, now)
            arrived = self._arrived.get(sender)
            if arrived is not None:
                arrived.set()
        return False  # never consume: other handlers may want it

    def _page_load(self, sender: str, kind: str, msg: Message, now: float) -> None:
        if kind == "StateChanged:busy":
            busy = len(msg.body) > 1 and bool(msg.body[1])
            (self._load_started if busy else self._load_ended)[sender] = now
        elif kind == "Reload:":
            self._load_started[sender] = now
        else:  # LoadComplete, LoadStopped
            self._load_ended[sender] = now

    def page_load(self, sender: str, since: float) -> PageLoad:
        """What ``sender``'s events said of page loads since ``since`` (monotonic)."""
        started = self._load_started.get(sender, 0.0)
        ended = self._load_ended.get(sender, 0.0)
        return PageLoad(started > since, ended > since, started > ended)

    def forget(self, sender: str) -> None:
        """Drop what is kept of a sender that left the bus (its unique name is never reused,
        so nothing of it can be asked for again). A waiter on its next event is woken."""
        tables = (
            self._last,
            self._recent,
            self._seq,
            self._changes,
            self._registered_seq,
            self._load_started,
            self._load_ended,
        )
        for table in tables:
            table.pop(sender, None)
        arrived = self._arrived.pop(sender, None)
        if arrived is not None:
            arrived.set()

    @property
    def senders(self) -> int:
        """How many senders have records here (tests: records do not pile up)."""
        return len(self._seq.keys() | self._recent.keys() | self._arrived.keys())

    def last_event(self, sender: str) -> float:
        return self._last.get(sender, 0.0)

    def seq(self, sender: str) -> int:
        """How many events ``sender`` has sent since the watcher started (0: none yet)."""
        return self._seq.get(sender, 0)

    def heard_since_registration(self, sender: str) -> bool:
        """Whether ``sender`` sent an event after our registration finished: the sign that
        it emits events to us at all (atk-bridge emits only once it has learnt of a
        listener; an app may emit none)."""
        return self.registered and self._seq.get(sender, 0) > self._registered_seq.get(sender, 0)

    async def barrier(self, sender: str) -> bool:
        """A round trip to ``sender`` over the bus its events come on: once it returns, every
        event the app sent before answering has been handled (D-Bus keeps one sender's
        messages in order). False when the app is no longer on the bus."""
        reply = await self._bus.call(
            Message(
                destination=sender,
                path="/",
                interface="org.freedesktop.DBus.Peer",
                member="Ping",
            )
        )
        if reply is None:
            return False
        # an error from the app itself (say, no Peer interface) still orders its messages;
        # one from the bus daemon means the name has no owner any more
        return reply.message_type != MessageType.ERROR or reply.sender == sender

    def changes_since(self, sender: str, seq: int) -> list[Change] | None:
        """``sender``'s events numbered after ``seq``, oldest first; None when some of them
        are no longer kept (more than ``CHANGE_LOG`` since)."""
        last = self._seq.get(sender, 0)
        if last <= seq:
            return []
        changes = self._changes.get(sender)
        if not changes or changes[0].seq > seq + 1:
            return None
        return [c for c in changes if c.seq > seq]

    def shown_paths(self, sender: str, limit: int = 16) -> list[str]:
        """The objects ``sender`` said became showing or hidden (``StateChanged:showing``)
        among its kept events, newest first, each once: where a popup that is no child of
        its application (Qt's menus) can be found."""
        out: list[str] = []
        for change in reversed(self._changes.get(sender, ())):
            if change.kind == "StateChanged:showing" and change.path not in out:
                out.append(change.path)
                if len(out) >= limit:
                    break
        return out

    def first_event_after(self, sender: str, since: float) -> float | None:
        """When the first event of ``sender`` after ``since`` (monotonic) arrived; None if none
        did. Past the kept window (more than ``_RECENT_EVENTS`` events since), the oldest kept
        one: a later time, never an earlier one."""
        recent = self._recent.get(sender)
        if not recent or recent[-1] <= since:
            return None
        return recent[bisect.bisect_right(recent, since)]

    async def next_event(self, sender: str, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for ``sender``'s next event; True if one came."""
        arrived = self._arrived.get(sender)
        if arrived is None:
            arrived = self._arrived[sender] = asyncio.Event()
        arrived.clear()
        if timeout <= 0:
            return False
        try:
            async with asyncio.timeout(timeout):
                await arrived.wait()
        except TimeoutError:
            return False
        return True

    def went_quiet(
        self,
        sender: str,
        since: float,
        now: float,
        *,
        quiet_s: float = EVENT_QUIET_S,
        first_s: float = FIRST_EVENT_S,
    ) -> bool:
        """The rule itself: after ``since``, events came and then none for ``quiet_s``, or
        none came at all for ``first_s`` (nothing the app reports happened)."""
        last = self._last.get(sender, 0.0)
        if last <= since:
            return now - since >= first_s
        return now - last >= quiet_s

    async def wait_quiet(
        self,
        sender: str,
        since: float,
        *,
        first_ms: float = FIRST_EVENT_S * 1000,
        quiet_ms: float = EVENT_QUIET_S * 1000,
        max_ms: float = 1500.0,
    ) -> bool:
        """True once ``sender`` went quiet after ``since`` (monotonic); False on ``max_ms``."""
        deadline = since + max_ms / 1000.0
        while True:
            now = time.monotonic()
            if self.went_quiet(
                sender, since, now, quiet_s=quiet_ms / 1000.0, first_s=first_ms / 1000.0
            ):
                return True
            if now >= deadline:
                return False
            await asyncio.sleep(_POLL_S)


def _kind(msg: Message) -> str:
    """``Member:detail`` of an event signal (the detail is the body's first string)."""
    detail = ""
    body = msg.body
    if body and isinstance(body[0], str):
        detail = body[0]
    return f"{msg.member}:{detail}"
