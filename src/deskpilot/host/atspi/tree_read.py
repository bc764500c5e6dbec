"""How each app's tree is read — cache, Collection or a walk — chosen per app and remembered.

The strategies and why each app gets the one it gets are in docs/host-tree.md ("How the tree
is read"). Remembering the choice saves the probing calls on every later snapshot, and keeps
an app whose cache once missed part of its tree on Collection from then on.
"""

from __future__ import annotations

import asyncio

from deskpilot.host.atspi import collect, on_screen
from deskpilot.host.atspi.apps import Applications
from deskpilot.host.atspi.bus import AtspiCallError, Conn
from deskpilot.host.atspi.collect import RawNode
from deskpilot.host.atspi.model import NodeRef

#: most subtrees the cache missed that are walked and grafted in (beyond: another strategy)
MAX_GRAFTS = 64
#: most objects a Collection read of an app other than Chromium asks for: one that gets
#: this many may have gone into a virtual container the app did not have before
COLLECTION_PROBE = 4000


class TreeReader:
    """The strategy each app's tree is read with (by bus name), as learnt."""

    def __init__(self, apps: Applications) -> None:
        self._apps = apps
        self._strategy: dict[str, str] = {}
        #: the apps a read found a virtual container in: never read with Collection again
        self._virtual: set[str] = set()

    async def read(
        self,
        conn: Conn,
        root: NodeRef,
        limit: int,
        max_children: int,
        deadline: float | None = None,
    ) -> tuple[list[RawNode], str]:
        """Cache when it covers the subtree; else Collection or a walk; then what is on
        screen of the virtual containers read (:mod:`.on_screen`).

        What a cache misses is read per subtree: GTK4 exports objects lazily (a walk of the
        missing part exports them, so the next snapshot is served from the cache alone).
        atk-bridge leaves a virtual container's children out of its cache, which is what the
        read wants (:func:`.collect.virtual`: they are never asked for). An atk-bridge app
        whose cache missed part of its tree is not trusted with it again (the cache lags
        behind the app's changes).

        Collection (``GetMatches``) descends into every child of every node, virtual
        containers too (a Calc sheet's 2^31 cells). Chromium, whose objects exist whether
        asked for or not, stays on its cache, every subtree the cache missed read with
        Collection and grafted in — checked against the live child indexes of every node,
        hidden ones too, so the result is exactly a Collection read's: one call for a page
        the cache holds (~20 ms for 1,733 nodes, against ~130 ms). Any other atk-bridge app
        is walked first, and read with Collection from then on only while no read of it has
        found a virtual container (a GTK 3 window); such a Collection read asks for at most
        ``COLLECTION_PROBE`` objects, and one that finds a virtual container (a window that
        opened since: soffice shows every document in one process) or gets that many is
        walked instead, for good. Reading with Collection also makes GTK 3 build the
        objects of widgets it added without announcing them (a label packed into a box):
        their events then tell the tree cache.

        ``deadline`` (``loop.time()``) bounds the walks (they return what they read by then,
        see ``collect.read_walk``) and what is on screen of the virtual containers (one not
        read by then is marked unread: a slow sheet never costs the rest of the window);
        the one-call reads are bounded by the caller.
        """
        nodes, strategy = await self._read(conn, root, limit, max_children, deadline)
        if not any(collect.virtual(n) for n in nodes):
            return nodes, strategy  # most windows: one pass over the nodes, no more
        self._virtual.add(root.bus_name)
        return await on_screen.read_on_screen(conn, nodes, deadline=deadline), strategy

    async def _read(
        self,
        conn: Conn,
        root: NodeRef,
        limit: int,
        max_children: int,
        deadline: float | None,
    ) -> tuple[list[RawNode], str]:
        bus = root.bus_name
        strategy = self._strategy.get(bus)
        info = self._apps.known(bus)
        chromium = info is not None and info.chromium
        # GTK 2 (gail) marks no item of an open menu showing: menus are read whole (gtk2_menus)
        gtk2 = info is not None and info.gtk2
        if strategy is None or strategy == "cache":
            done, strategy = await self._from_cache(
                conn, root, limit, max_children, strategy, deadline, chromium
            )
            if done is not None:
                return done, "cache"
        if chromium and (
            strategy == "collection" or await collect.has_collection(conn, bus, root.path)
        ):
            self._strategy[bus] = "collection"
            try:
                nodes = await collect.read_collection(conn, bus, root.path, limit, whole=True)
                return nodes, "collection"
            except AtspiCallError as exc:
                if exc.gone:
                    raise
        if strategy == "collection" and bus not in self._virtual:
            probe = min(limit, COLLECTION_PROBE)
            try:
                nodes = await collect.read_collection(conn, bus, root.path, probe, whole=gtk2)
            except AtspiCallError as exc:
                if exc.gone:
                    raise
                nodes = []
            if nodes and len(nodes) < probe and not any(collect.virtual(n) for n in nodes):
                return nodes, "collection"
            self._virtual.add(bus)  # walked from now on (see ``read``)
        nodes = await collect.read_walk(
            conn, bus, root.path, limit, max_children, deadline, menus=gtk2
        )
        if (
            strategy == "walk"
            and bus not in self._virtual
            and nodes
            and not any(collect.virtual(n) for n in nodes)
        ):
            # an atk-bridge app walked once (its cache missed): Collection from now on while
            # no read finds a virtual container in it
            self._strategy[bus] = "collection"
        return nodes, "walk"

    async def _from_cache(
        self,
        conn: Conn,
        root: NodeRef,
        limit: int,
        max_children: int,
        strategy: str | None,
        deadline: float | None = None,
        chromium: bool = False,
    ) -> tuple[list[RawNode] | None, str | None]:
        """The tree from the app's cache, its misses read and grafted in; or None and the
        strategy to go on with (what was learnt about the cache is remembered)."""
        bus = root.bus_name
        items = await collect.read_cache(conn, bus)
        if items is None:
            strategy = self._strategy[bus] = "nocache"
            return None, strategy
        nodes, incomplete = collect.from_cache(items, root.path, limit, hidden_too=chromium)
        if nodes and not incomplete:
            self._strategy[bus] = "cache"
            return nodes, strategy
        if nodes and chromium and len(incomplete) <= MAX_GRAFTS:
            # Chromium's cache misses what it changed without children-changed: those
            # subtrees are read with Collection (one call each) and grafted in
            self._strategy[bus] = "cache"
            subs = await asyncio.gather(
                *(
                    collect.read_collection(conn, bus, nodes[i].path, limit, whole=True)
                    for i in incomplete
                )
            )
            return collect.graft(nodes, dict(zip(incomplete, subs, strict=True))), strategy
        if nodes and not chromium and await collect.has_collection(conn, bus, root.path):
            # atk-bridge (GTK 3, LibreOffice) does not export lazily: a cache that missed
            # part of the tree is not trusted again (it lags behind the app's changes, and
            # LibreOffice's holds a fraction of its tree, most of it at index -1). Walked
            # first (see ``read``)
            strategy = self._strategy[bus] = "walk"
        elif nodes and len(incomplete) <= MAX_GRAFTS:
            self._strategy[bus] = "cache"
            subs = await asyncio.gather(
                *(
                    collect.read_walk(conn, bus, nodes[i].path, limit, max_children, deadline)
                    for i in incomplete
                )
            )
            return collect.graft(nodes, dict(zip(incomplete, subs, strict=True))), strategy
        return None, strategy
