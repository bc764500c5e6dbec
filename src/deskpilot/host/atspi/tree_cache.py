"""The host's event-driven tree cache: what was read of each window, and whether it still holds.

A snapshot of a big page costs a full read (145 ms for Chromium's 1,751 nodes) though an agent
mostly re-observes a window that did not change, or changed in one label. The apps' AT-SPI
events say what changed (:mod:`.events` numbers them per sender and keeps the last ones with
their object paths), so each snapshot's nodes are kept here with the number of the sender's
last event before the read, and the next snapshot of the same window is planned from the
events since:

* none → ``hit``: the kept snapshot is served (its few extents are read again);
* changes of kept nodes' own properties, states or text → ``patched``: those nodes are read
  again (:mod:`.tree_patch`) and the tree rendered anew; children added or removed, or a node
  shown or hidden, under a kept node → that subtree is read again and spliced in (not for
  Chromium, and not where a removed node may have gone elsewhere: see :mod:`.tree_patch`);
  where a field is named by the label beside it (found from extents), or is unnamed with
  labels around it, a hit or patch first reads the kept extents again, and any that moved
  mean a full read (GTK 3 lays a window out on its frame clock, after the events of the
  change); a subtree re-read is spliced in only where its parent still lists its kept
  children in the kept order (a GTK 3 widget moved away and back says only "showing");
* anything the cache cannot place — a window (de)activated (Chromium's document then gains
  or loses FOCUSED without an event of its own), a node it does not hold outside what is read
  again, an event class it does not know — → ``full``: a full read;
* any change at all in a GTK 4 window → ``full``: GTK 4.8 adds a widget the accessibility
  side has not seen before with no event for it (gnome-text-editor's "•" of unsaved changes
  appears beside the title with only the text view's own TextChanged), and its full read is
  one ``Cache.GetItems`` call, as cheap as a patch of its small trees (a window with no event
  at all is still a hit).

Chromium's tree was seen to change shape without any event (a check box added to a container
in the same task as other changes, found by the randomized test), so a hit or patch of a
Chromium window first checks the kept nodes are still exactly the tree's
(``tree_patch.same_shape``: one ``Collection.GetMatches``), and that its tabs keep their
names (Chromium renames a tab with no event: its memory use, shown while the pointer rests on
the tab strip).

It is never trusted where it cannot be (``off``, and ``cache_note`` says why):

* before the app has sent us one event since we registered (atk-bridge emits only once it
  learnt of a listener; some apps emit none) — except Chromium: every hit and patch of it
  checks the tree's shape anyway, and its events do reach a listener registered after its
  page loaded (tests/host/test_tree_cache_random.py), so a quiet page is not read in full on
  every look;
* after the app changed its tree without an event (found by a full read that every
  ``verify_every``-th cached read does instead, and compares);
* for Qt's own bridge (not atk-bridge), at all: a field Qt names after a label takes the
  label's new text with no event for the field (the randomized test found it), and Qt hands
  a text edit's focus on to its viewport silently;

and a full read follows an event log that overflowed or a connection to the app opened again.

Correctness of "no event → unchanged" rests on one more thing: before a plan, a round trip to
the app over the bus its events come on (``Peer.Ping``); D-Bus keeps one sender's messages in
order, so every event the app sent before answering has been handled by then.

``treeVersion`` stays the hash of the rendered text: a cached read and a fresh one of the same
UI give the same text and the same version.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Final, Literal

from deskpilot.host.atspi.app_events import AppEvents
from deskpilot.host.atspi.bus import Conn
from deskpilot.host.atspi.collect import RawNode, virtual
from deskpilot.host.atspi.events import CHANGE_LOG, Change
from deskpilot.host.atspi.model import TreeSnapshot
from deskpilot.host.atspi.vocab import State, bit

_B_FOCUSED: Final = bit(State.FOCUSED)
#: windows kept (least recently read dropped first)
MAX_ENTRIES: Final = 32
#: a cached read after this many in a row is a full one instead, compared with the cache
VERIFY_EVERY: Final = 16
#: more dirty nodes than this are read in full rather than one by one
MAX_DIRTY: Final = 64
#: more changed subtrees than this: a full read
MAX_SUBTREES: Final = 8

#: property changes a re-read of the node itself covers
_NODE_PROPERTIES: Final = frozenset(
    {"accessible-name", "accessible-description", "accessible-value", "accessible-help-text"}
)
#: state changes that change which nodes are read or shown: the node's subtree is read again
_SHAPE_STATES: Final = frozenset({"visible", "showing"})
#: event members that concern the node's own text, states or selection
_NODE_MEMBERS: Final = frozenset(
    {
        "StateChanged",
        "TextChanged",
        "TextCaretMoved",
        "TextSelectionChanged",
        "TextAttributesChanged",
        "AttributesChanged",
        "VisibleDataChanged",  # GTK 3 on a relabelled label; the re-read checks its shape
    }
)
#: events that say the node's subtree changed: it is read again (its children's states, rows)
_SHAPE_MEMBERS: Final = frozenset(
    {
        "ChildrenChanged",
        "SelectionChanged",  # a GTK 3 tree view's cells change SELECTED with no event
        "ActiveDescendantChanged",
        "RowInserted",
        "RowDeleted",
        "RowReordered",
        "ColumnInserted",
        "ColumnDeleted",
        "ColumnReordered",
        "ModelChanged",
        # GTK 4 (gnome-calculator's history appearing after "=") sends only this when a
        # list with its rows shows up; atk-bridge apps do not send it (not registered)
        "BoundsChanged",
    }
)
#: a node removed or moved: it must lie in a subtree read again
_MOVES: Final = frozenset({"StateChanged:defunct", "PropertyChange:accessible-parent"})
#: events that change nothing the tree shows (none yet: see ``BoundsChanged`` above)
_IGNORED_MEMBERS: Final = frozenset[str]()

CacheState = Literal["hit", "patched", "full", "off"]

NOTE_NO_EVENTS: Final = (
    "the app has sent no accessibility events since the host registered for them: its tree "
    "is read in full every time"
)
NOTE_SILENT_CHANGE: Final = (
    "the app changed its tree without sending events: its tree is read in full from now on"
)
NOTE_QT: Final = (
    "Qt changes names without sending events (a field named after a label takes the label's "
    "new text silently): its tree is read in full every time"
)
NOTE_GTK2: Final = (
    "GTK 2 says no menu item is showing, so an open menu is found by asking its menu bar, "
    "not from events: its tree is read in full every time"
)
NOTE_OVERFLOW: Final = f"more than {CHANGE_LOG} events since the last read: read in full"
NOTE_RECONNECT: Final = "the connection to the app was opened again: read in full"
NOTE_NOT_REGISTERED: Final = "the host is not registered for accessibility events yet"
NOTE_SWITCHED_OFF: Final = (
    "turned off by DESKPILOT_TREE_CACHE: every read is a full read (for diagnosis)"
)


@dataclass(eq=False)
class Entry:
    """One window's last read: its nodes (after details) and what the cache knows of them."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    snapshot: TreeSnapshot | None = None
    nodes: list[RawNode] = field(default_factory=list)
    #: node index by object path (events name objects by path)
    index: dict[str, int] = field(default_factory=dict)
    #: the nodes whose details were read (``snapshot._detail_candidates``)
    candidates: frozenset[int] = frozenset()
    #: node indexes of the shown secure fields
    secure: list[int] = field(default_factory=list)
    #: some node's name or value was derived from other nodes (labels, combo items)
    derived: bool = False
    #: the sender's last event number before the read
    seq: int = 0
    conn: Conn | None = None
    #: cached reads (hits and patches) since the last full one
    since_full: int = 0

    def drop(self) -> None:
        """Forget the read (after a failure half way through a patch)."""
        self.snapshot = None
        self.nodes = []
        self.index = {}


@dataclass(frozen=True, slots=True)
class Plan:
    """How the next snapshot of a window is read."""

    kind: CacheState
    note: str | None = None
    #: ``patched``: what to read again
    dirt: Dirt | None = None
    #: the sender's last event number at planning time: the new read's starting point
    seq: int = 0
    #: a full read standing in for a hit: a different text means the app changed without
    #: an event (it is distrusted from then on)
    verify: bool = False


Key = tuple[str, str, int, int, int]


@dataclass(eq=False)
class FreshRead:
    """What a full read hands the cache besides its snapshot (filled as the read goes)."""

    nodes: list[RawNode] = field(default_factory=list)
    candidates: frozenset[int] = frozenset()
    derived: bool = False
    #: node indexes of the shown secure fields (their extents are sensitive regions)
    secure: list[int] = field(default_factory=list)


class TreeCache:
    """The kept reads by window (bus name, path and render limits), and the apps not trusted."""

    def __init__(self, events: AppEvents, *, verify_every: int = VERIFY_EVERY) -> None:
        self._events = events
        self._entries: OrderedDict[Key, Entry] = OrderedDict()
        self._distrusted: dict[str, str] = {}
        self.verify_every = verify_every
        #: off switch (tests compare with uncached reads through it)
        self.enabled = True
        #: what an ``off`` read says while ``enabled`` is False (the host's setting says so;
        #: a test's switch says nothing)
        self.disabled_note: str | None = None
        #: diagnostics: the first event that made the last planned read a full one
        self.last_full = ""

    def entry(self, key: Key) -> Entry:
        e = self._entries.get(key)
        if e is None:
            e = self._entries[key] = Entry()
            while len(self._entries) > MAX_ENTRIES:
                self._entries.popitem(last=False)
        else:
            self._entries.move_to_end(key)
        return e

    def distrust(self, bus: str, note: str) -> None:
        """Read this app in full from now on (``note`` says why, on every read)."""
        if self._distrusted.get(bus) == note:
            return
        self._distrusted[bus] = note
        for key, e in self._entries.items():
            if key[0] == bus:
                e.drop()

    async def plan(
        self,
        entry: Entry,
        bus: str,
        conn: Conn,
        *,
        shape_checked: bool = False,
        patches: bool = True,
        after_action: bool = False,
    ) -> Plan:
        """Hit, patch, full or off for the next read of ``entry``'s window (see the module
        docstring). ``shape_checked``: the caller checks every hit's and patch's shape
        against the app (Chromium): the app is trusted before its first event.
        ``patches``: False when any change means a full read (GTK 4, see the module
        docstring). ``after_action``: the read that shows an action's effect is never served
        on the strength of events alone (a GTK 3 box packs a child with no event at all:
        the tree kept would show the action as having done nothing); without events it is
        the check a would-be hit gets (a mismatch distrusts the app), else a full read."""
        if not self.enabled:
            return Plan("off", self.disabled_note, seq=self._events.seq(bus))
        if not self._events.registered:
            return Plan("off", NOTE_NOT_REGISTERED, seq=self._events.seq(bus))
        if not await self._events.barrier(bus):
            entry.drop()
            return Plan("full", None, seq=self._events.seq(bus))
        seq = self._events.seq(bus)
        note = self._distrusted.get(bus)
        if note is not None:
            return Plan("off", note, seq=seq)
        if not shape_checked and not self._events.heard_since_registration(bus):
            return Plan("off", NOTE_NO_EVENTS, seq=seq)
        if entry.snapshot is None:
            return Plan("full", None, seq=seq)
        if entry.conn is not conn:
            return Plan("full", NOTE_RECONNECT, seq=seq)
        changes = self._events.changes_since(bus, entry.seq)
        if changes is None:
            return Plan("full", NOTE_OVERFLOW, seq=seq)
        changes = [c for c in changes if c.seq <= seq]
        if after_action and not shape_checked:
            return Plan("full", None, seq=seq, verify=not changes)
        verify_due = entry.since_full + 1 >= self.verify_every
        if not changes:
            if verify_due:  # a full read instead of a hit, and a check of the app's events
                return Plan("full", None, seq=seq, verify=True)
            return Plan("hit", None, seq=seq)
        if not patches:
            self.last_full = "no patches for this toolkit"
            return Plan("full", None, seq=seq)
        dirt = classify(changes, entry.index)
        if dirt is not None:
            dirt = lift_virtual(dirt, entry.nodes)
        if (
            dirt is None
            or len(dirt.nodes) > MAX_DIRTY
            or len(dirt.subtrees) > MAX_SUBTREES
            or verify_due
        ):
            self.last_full = _why_full(changes, entry.index) if dirt is None else "many"
            return Plan("full", None, seq=seq)
        if any(c.kind == "StateChanged:focused" for c in changes):
            # focus moved: the nodes that had it are read again too (Chromium's document
            # was seen to lose FOCUSED without an event of its own)
            had = [i for i, n in enumerate(entry.nodes) if n.states & _B_FOCUSED]
            dirt = dataclasses.replace(dirt, nodes=tuple(sorted({*dirt.nodes, *had})))
        return Plan("patched", None, dirt=dirt, seq=seq)

    def also(self, plan: Plan, nodes: tuple[int, ...]) -> Plan:
        """``plan`` with these kept nodes read again too (a hit becomes a patch)."""
        dirt = plan.dirt or Dirt()
        more = tuple(sorted({*dirt.nodes, *nodes}))
        return dataclasses.replace(plan, kind="patched", dirt=dataclasses.replace(dirt, nodes=more))

    async def store(
        self,
        entry: Entry,
        plan: Plan,
        bus: str,
        conn: Conn,
        snapshot: TreeSnapshot,
        fresh: FreshRead,
    ) -> str | None:
        """Keep a full read of the window (``plan``: the one it was read under). A partial
        read is not kept: its unread parts would be served as if read; nor is one read while
        the cache was ``off`` — the app was not (yet) known to announce its changes, so what
        it changes before its first event would later pass for a hit. Returns the note of a
        verification that found the app silent (the app is distrusted then)."""
        if (
            not self.enabled
            or plan.kind == "off"
            or snapshot.partial is not None
            or not fresh.nodes
        ):
            entry.drop()
            return None
        if plan.verify and entry.snapshot is not None and entry.snapshot.text != snapshot.text:
            # silent only if no event came for it since the plan either (Chromium's events
            # trail its tree: one may be on its way)
            await self._events.barrier(bus)
            if self._events.seq(bus) == plan.seq:
                self.distrust(bus, NOTE_SILENT_CHANGE)
                return NOTE_SILENT_CHANGE
        nodes = fresh.nodes
        entry.snapshot = snapshot
        entry.nodes = nodes
        entry.index = {n.path: i for i, n in enumerate(nodes)}
        entry.candidates = fresh.candidates
        entry.derived = fresh.derived
        entry.secure = fresh.secure
        entry.seq = plan.seq
        entry.conn = conn
        entry.since_full = 0
        return None

    def served(self, entry: Entry, plan: Plan, snapshot: TreeSnapshot) -> None:
        """A hit or a patch was served: the kept read now stands as of ``plan``."""
        entry.snapshot = snapshot
        entry.seq = plan.seq
        entry.since_full += 1


def _why_full(changes: list[Change], index: dict[str, int]) -> str:
    for c in changes:
        if classify([c], index) is None:
            return f"{c.kind} {'kept' if c.path in index else 'unknown'} node"
    return ""


@dataclass(frozen=True, slots=True)
class Dirt:
    """What events say changed in a kept tree."""

    #: kept nodes whose own properties (name, states, text …) changed
    nodes: tuple[int, ...] = ()
    #: kept nodes whose subtree changed shape (children added or removed, shown or hidden)
    subtrees: tuple[int, ...] = ()
    #: objects that must lie in a subtree read again, before or after (a node removed, moved
    #: to another parent, or not kept yet and changed)
    loose: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.nodes or self.subtrees or self.loose)


def lift_virtual(dirt: Dirt, nodes: list[RawNode]) -> Dirt:
    """``dirt`` with every change of a virtual container or below it made a change of the
    container's subtree: what is on screen of it is read as a whole (a cell's text is read
    with the table's, not by a node's own re-read; Calc says ``visible-data-changed`` of
    the sheet when a value on it changed), and it has no kept subtrees of its own."""
    owner: dict[int, int] = {}

    def container(i: int) -> int | None:
        # the outermost virtual container at or above node i
        p = i
        found = None
        while p >= 0:
            if virtual(nodes[p]):
                found = p
            p = nodes[p].parent
        return found

    for i in (*dirt.nodes, *dirt.subtrees):
        top = container(i)
        if top is not None:
            owner[i] = top
    if not owner:
        return dirt
    return Dirt(
        tuple(i for i in dirt.nodes if i not in owner),
        tuple(sorted({owner.get(i, i) for i in dirt.subtrees} | set(owner.values()))),
        dirt.loose,
    )


def classify(changes: list[Change], index: dict[str, int]) -> Dirt | None:
    """What these events changed in the kept tree; None when one of them is of a kind the
    cache cannot place (a full read is needed)."""
    nodes: set[int] = set()
    subtrees: set[int] = set()
    loose: set[str] = set()
    for c in changes:
        member, _, detail = c.kind.partition(":")
        if member in _IGNORED_MEMBERS:
            continue
        i = index.get(c.path)
        if member in _SHAPE_MEMBERS or (member == "StateChanged" and detail in _SHAPE_STATES):
            if i is None:
                loose.add(c.path)
            else:
                subtrees.add(i)
        elif c.kind in _MOVES:
            loose.add(c.path)
        elif (member == "PropertyChange" and detail in _NODE_PROPERTIES) or (
            member in _NODE_MEMBERS
        ):
            if i is None:
                loose.add(c.path)
            else:
                nodes.add(i)
        else:
            return None  # window events too: Chromium's document loses FOCUSED without one
    return Dirt(tuple(sorted(nodes)), tuple(sorted(subtrees)), frozenset(loose))
