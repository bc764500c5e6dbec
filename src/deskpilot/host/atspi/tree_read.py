"""How each app's tree is read — cache, Collection or a walk — chosen per app and remembered.

The strategies and why each app gets the one it gets are in docs/host-tree.md ("How the tree
is read"). Remembering the choice saves the probing calls on every later snapshot, and keeps
an app whose cache once missed part of its tree on Collection from then on.
"""

from __future__ import annotations

import asyncio

from deskpilot.host.atspi import collect
from deskpilot.host.atspi.apps import Applications
from deskpilot.host.atspi.bus import AtspiCallError, Conn
from deskpilot.host.atspi.collect import RawNode
from deskpilot.host.atspi.model import NodeRef

#: most subtrees the cache missed that are walked and grafted in (beyond: another strategy)
MAX_GRAFTS = 64


class TreeReader:
    """The strategy each app's tree is read with (by bus name), as learnt."""

    def __init__(self, apps: Applications) -> None:
        self._apps = apps
        self._strategy: dict[str, str] = {}

    async def read(
        self,
        conn: Conn,
        root: NodeRef,
        limit: int,
        max_children: int,
        deadline: float | None = None,
    ) -> tuple[list[RawNode], str]:
        """Cache when it covers the subtree; else Collection (atk-bridge); else a walk.

        What a cache misses is read per subtree: GTK4 exports objects lazily (a walk of the
        missing part exports them, so the next snapshot is served from the cache alone);
        atk-bridge leaves MANAGES_DESCENDANTS children out of it: an app whose cache missed
        a subtree and that has Collection is read with Collection from then on — except
        Chromium. Its cache holds what existed when the cache was made (the first listener
        registered) and what Chromium announced since; a page loaded later, or nodes added
        under an ignored element, are missing. It stays on the cache, every subtree the cache
        missed read with Collection and grafted in — checked against the live child indexes
        of every node, hidden ones too, so the result is exactly a Collection read's: one
        call for a page the cache holds (~20 ms for 1,733 nodes, against ~130 ms).

        ``deadline`` (``loop.time()``) bounds the walks (they return what they read by then,
        see ``collect.read_walk``); the one-call reads are bounded by the caller.
        """
        bus = root.bus_name
        strategy = self._strategy.get(bus)
        info = self._apps.known(bus)
        chromium = info is not None and info.chromium
        if strategy is None or strategy == "cache":
            done, strategy = await self._from_cache(
                conn, root, limit, max_children, strategy, deadline, chromium
            )
            if done is not None:
                return done, "cache"
        if strategy == "collection" or await collect.has_collection(conn, bus, root.path):
            self._strategy[bus] = "collection"
            try:
                # GTK 2 (gail) marks no menu open: its menus are pruned by nothing (gtk2_menus)
                whole = chromium or (info is not None and info.gtk2)
                nodes = await collect.read_collection(conn, bus, root.path, limit, whole=whole)
                return nodes, "collection"
            except AtspiCallError as exc:
                if exc.gone:
                    raise
        return await collect.read_walk(conn, bus, root.path, limit, max_children, deadline), "walk"

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
        """The tree from the app's cache, its misses walked and grafted in; or None and the
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
        if nodes and await collect.has_collection(conn, bus, root.path):
            # atk-bridge: the cache holds only part of the tree; Collection has it all
            strategy = self._strategy[bus] = "collection"
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
