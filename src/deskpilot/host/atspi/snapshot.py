"""A tree snapshot in four timed steps: read, details, render, finish.

Reading every node's every property would cost a round trip per property per node, so the
steps narrow down as they go (docs/host-tree.md, "How the tree is read"): the *read* gets the
shape of the whole tree, *details* are read only for nodes that can be shown, *render* decides
what is shown, and *finish* reads the little that only shown elements need (interfaces the
strategy did not give, extents of secure fields, the document's URL). Each step's time is in
``TreeSnapshot.timings_ms``.

A snapshot may have a *deadline* (``loop.time()``): the read gets ``READ_SHARE`` of the time
left, details and finish the rest. A walk stops at it with what it read; a one-call read
(cache, Collection) that misses it leaves the root alone — read first, next to it — with its
children marked unread; details or finish cut short leave a tree without some values. Any of
these makes the snapshot ``partial="deadline"``. Not even the root by then: TimeoutError (the
app does not answer; the host answers from what it knew, host/last_trees.py).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import time
from collections.abc import Callable, Iterable
from typing import Final

from deskpilot.host.atspi import (
    areas,
    collect,
    collector,
    gecko,
    gtk2_menus,
    on_screen,
    opaque,
    sheet_names,
    vcl_shift,
)
from deskpilot.host.atspi.apps import Applications
from deskpilot.host.atspi.bus import I_DOCUMENT, ROOT_PATH, AtspiCallError, Conn
from deskpilot.host.atspi.collect import RawNode, is_hidden
from deskpilot.host.atspi.connections import Connections
from deskpilot.host.atspi.model import AppInfo, ElementRef, NodeRef, OpaqueRegion, TreeSnapshot
from deskpilot.host.atspi.render import Rendered, RenderOptions, clean_name, render
from deskpilot.host.atspi.tree_cache import (
    NOTE_GTK2,
    NOTE_QT,
    CacheState,
    Entry,
    FreshRead,
    Plan,
    TreeCache,
)
from deskpilot.host.atspi.tree_patch import (
    focus_moved,
    patch_nodes,
    same_shape,
    unnamed_field,
)
from deskpilot.host.atspi.tree_read import TreeReader
from deskpilot.host.atspi.vocab import (
    ALWAYS_SHOWN_ROLES,
    DOCUMENT_ROLES,
    FRAME_ROLES,
    R_PASSWORD_TEXT,
    State,
    bit,
    iface_names,
    rendered_role,
    state_names,
    window_role,
)
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import Rect, Truncation

COLD_START_RETRIES: Final = (0.1, 0.2, 0.3)  # seconds; bounded (≤ 0.6 s in all)
SNAPSHOT_TIMEOUT_S: Final = 10.0
#: of the time to a snapshot's deadline, the share its read may take (details, render and
#: finish get the rest)
READ_SHARE: Final = 0.8
#: how long a read under a deadline waits for its root alone before reading the tree (s)
ROOT_FIRST_S: Final = 0.005
ENRICH_FACTOR: Final = 3  # read details for at most max_elements × this many candidates

_B_FOCUSED: Final = bit(State.FOCUSED)


class Snapshots:
    """Takes snapshots over the app's connection, with what is known of the app."""

    def __init__(
        self,
        connections: Connections,
        apps: Applications,
        reader: TreeReader,
        cache: TreeCache | None = None,
    ) -> None:
        self._connections = connections
        self._apps = apps
        self._reader = reader
        self._cache = cache

    async def snapshot(
        self,
        root: NodeRef,
        *,
        max_elements: int,
        text_budget: int,
        origin: tuple[int, int] | None,
        max_children: int,
        deadline: float | None = None,
        after_action: bool = False,
    ) -> TreeSnapshot:
        """The subtree under ``root``, bounded in time; AT-SPI errors become DeskpilotError.

        ``deadline`` (``loop.time()``): see the module docstring; None: read it all.
        ``after_action``: the read that shows an action's effect (``TreeCache.plan``)."""
        try:
            async with asyncio.timeout(SNAPSHOT_TIMEOUT_S):
                with collector.paused():  # no cycles to find in a read (atspi/collector.py)
                    return await self._snapshot(
                        root,
                        max_elements,
                        text_budget,
                        origin,
                        max_children,
                        deadline,
                        after_action,
                    )
        except TimeoutError as exc:
            raise DeskpilotError(
                ErrorCode.ENVIRONMENT_UNAVAILABLE,
                "the application did not answer accessibility calls in time",
                retryable=True,
            ) from exc
        except AtspiCallError as exc:
            if exc.gone:
                raise DeskpilotError(
                    ErrorCode.TARGET_NOT_FOUND, "the window's accessible object is gone"
                ) from exc
            raise DeskpilotError(ErrorCode.INTERNAL_ERROR, f"AT-SPI: {exc.name}") from exc

    # ------------------------------------------------------------------ the tree cache

    async def _snapshot(
        self,
        root: NodeRef,
        max_elements: int,
        text_budget: int,
        origin: tuple[int, int] | None,
        max_children: int,
        deadline: float | None = None,
        after_action: bool = False,
    ) -> TreeSnapshot:
        """Through the tree cache (atspi/tree_cache.py) when there is one: the kept read
        served, patched, or a full read kept for the next time."""
        cache = self._cache
        if cache is None:
            return await self._fresh(
                root, max_elements, text_budget, origin, max_children, deadline
            )
        entry = cache.entry((root.bus_name, root.path, max_elements, text_budget, max_children))
        limit = _read_limit(max_elements)
        async with entry.lock:
            t0 = time.perf_counter()
            conn = await collect.until(self._connections.conn_for(root.bus_name), deadline)
            info = await self._apps.info(root.bus_name, ROOT_PATH)
            chromium = info is not None and info.chromium
            if info is not None and info.kit == "qt":
                # Qt changes names without events: never served from the cache
                cache.distrust(root.bus_name, NOTE_QT)
            elif info is not None and info.gtk2:
                # GTK 2's open menus are found by asking for them (atspi/gtk2_menus.py)
                cache.distrust(root.bus_name, NOTE_GTK2)
            # Chromium changes its tree's shape without events: a hit or patch of it stands
            # only if the kept nodes are still exactly its tree (one GetMatches, ~7 ms of
            # Chromium's time on 1,733 nodes: most of a hit). It is sent once the plan's and
            # the patch's own small calls are answered, so that Chromium computes it while we
            # render the patch.
            shape: list[asyncio.Future[bool]] = []

            def check_shape() -> None:
                if chromium and not shape:
                    shape.append(asyncio.ensure_future(same_shape(conn, entry.nodes, limit)))
                    shape[0].add_done_callback(_retrieved)

            try:
                plan = await collect.until(
                    self._plan(cache, entry, root, conn, chromium, after_action), deadline
                )
                plan_ms = _ms_since(t0)
                served: TreeSnapshot | None = None
                try:
                    if plan.kind == "hit":
                        check_shape()
                        served = await collect.until(self._hit(entry, conn, origin), deadline)
                    elif plan.kind == "patched":
                        served = await collect.until(
                            self._patch(
                                entry,
                                plan,
                                conn,
                                origin,
                                max_elements,
                                text_budget,
                                max_children,
                                before_render=check_shape,
                            ),
                            deadline,
                        )
                    if served is not None and shape:
                        t1 = time.perf_counter()
                        if await collect.until(shape[0], deadline):
                            served.timings_ms["shape_wait"] = _ms_since(t1)
                        else:
                            entry.drop()
                            served, plan = None, dataclasses.replace(plan, kind="full", dirt=None)
                except BaseException:
                    entry.drop()  # a patch may have changed some nodes and not others
                    raise
            finally:
                if shape and not shape[0].done():
                    shape[0].cancel()
            if served is not None:
                cache.served(entry, plan, served)
                timings = {"plan": plan_ms, **served.timings_ms, "total": _ms_since(t0)}
                return dataclasses.replace(served, cache_state=plan.kind, timings_ms=timings)
            keep = FreshRead()
            snap = await self._fresh(
                root, max_elements, text_budget, origin, max_children, deadline, keep
            )
            note = await cache.store(entry, plan, root.bus_name, conn, snap, keep)
            kind: CacheState = "off" if plan.kind == "off" or note else "full"
            return dataclasses.replace(snap, cache_state=kind, cache_note=note or plan.note)

    async def _plan(
        self,
        cache: TreeCache,
        entry: Entry,
        root: NodeRef,
        conn: Conn,
        chromium: bool,
        after_action: bool = False,
    ) -> Plan:
        """The cache's plan, made a full read when the focus moved to a node not kept; a
        patch of the nodes whose focus changed otherwise. (A Chromium hit or patch also
        needs its shape checked: the caller does, see ``_snapshot``.)"""
        info = await self._apps.info(root.bus_name, ROOT_PATH)
        plan = await cache.plan(
            entry,
            root.bus_name,
            conn,
            shape_checked=chromium,
            patches=not _gtk4(info),  # GTK 4 adds nodes without events: tree_cache.py
            after_action=after_action,
        )
        if plan.kind not in ("hit", "patched") or entry.snapshot is None:
            return plan
        # with Collection, focused nodes not kept are found too (Chromium's tree is read from
        # its cache, but it has Collection)
        collection = entry.snapshot.strategy == "collection" or chromium
        moved = await focus_moved(conn, entry.nodes, entry.index, collection)
        if moved is None:
            return dataclasses.replace(plan, kind="full", dirt=None)
        return cache.also(plan, moved) if moved else plan

    async def _hit(
        self, entry: Entry, conn: Conn, origin: tuple[int, int] | None
    ) -> TreeSnapshot | None:
        """The kept snapshot, its extents read again (secure fields' bounds, labels placed by
        position: a window moves without tree events). None when a name placed by position
        may have changed with them (a full read then)."""
        snap = entry.snapshot
        if snap is None or snap.root is None:
            return None
        t0 = time.perf_counter()
        nodes = entry.nodes
        elements = snap.elements
        if await _extents_changed(conn, nodes):
            if _placed_by_position(entry):
                return None
            elements = _moved(elements, nodes, entry.index)
        regions = _sensitive_regions(nodes, entry.secure, origin)
        return dataclasses.replace(
            snap,
            elements=elements,
            sensitive_regions=regions,
            opaque=_placed(nodes, snap.opaque),
            timings_ms={"hit": _ms_since(t0)},
        )

    async def _patch(
        self,
        entry: Entry,
        plan: Plan,
        conn: Conn,
        origin: tuple[int, int] | None,
        max_elements: int,
        text_budget: int,
        max_children: int,
        before_render: Callable[[], None] | None = None,
    ) -> TreeSnapshot | None:
        """The kept tree with the nodes events marked dirty read again (atspi/tree_patch.py),
        then rendered and finished as a full read is; None when a patch would not be exact.
        ``before_render`` is called once the re-reads are back (the caller's moment to send
        a check it wants answered while we render)."""
        snap = entry.snapshot
        if snap is None or snap.root is None:
            return None
        t0 = time.perf_counter()
        if plan.dirt is None:
            return None
        if _placed_by_position(entry) and await _extents_changed(conn, entry.nodes):
            # a name placed by position was found from extents read at other moments than
            # the ones that changed: a patch would keep it (a hit after it would find the
            # re-read extents unchanged and serve it too)
            entry.drop()
            return None
        info = await self._apps.info(snap.root.bus_name, ROOT_PATH)
        chromium = info is not None and info.chromium
        limit = _read_limit(max_elements)
        patched = await patch_nodes(
            conn,
            entry.nodes,
            plan.dirt,
            candidates=entry.candidates,
            derived=entry.derived,
            strategy=snap.strategy,
            limit=limit,
            max_children=max_children,
            cap=max_elements * ENRICH_FACTOR,
            detail_candidates=_detail_candidates,
            shapes=not chromium,
        )
        if patched is None:
            entry.drop()  # the kept nodes may be half changed
            return None
        nodes, todo, entry.candidates = patched
        # nodes only re-read in place (no subtree spliced in): the kept elements of the
        # others still hold, and the kept URL unless a document was re-read
        in_place = nodes is entry.nodes
        if not in_place:
            entry.nodes, entry.index = nodes, {n.path: i for i, n in enumerate(nodes)}
        keep = FreshRead()
        await _toolkit_rules(conn, nodes, info)
        await _enrich(conn, nodes, todo, info, keep)
        entry.derived = entry.derived or keep.derived
        timings = {"patch_read": _ms_since(t0)}
        if before_render is not None:
            before_render()
        t1 = time.perf_counter()
        gtk4 = _gtk4(info)
        out = render(
            nodes,
            RenderOptions(
                max_elements=max_elements,
                text_budget=text_budget,
                max_children=max_children,
                gtk4_names=gtk4,
            ),
        )
        timings["render"] = _ms_since(t1)
        t2 = time.perf_counter()
        # a document's URL changes only with a load (document events: never a patch, a full
        # read) — or with no event at all (history.pushState), which a hit does not see
        # either: an in-place patch keeps the kept URL rather than queue a call behind the
        # shape check
        secure, url, read, drawn = await _finish(conn, nodes, out, reuse_url=in_place, url=snap.url)
        entry.secure = secure
        reread = {*plan.dirt.nodes, *todo, *read}
        shifted = await vcl_shift.shifts(conn, nodes) if info and info.libreoffice else None
        elements = _elements(
            nodes,
            out,
            snap.pid or 0,
            gtk4,
            kept=snap.elements if in_place else None,
            reread=reread,
            shifts=shifted,
        )
        timings["finish"] = _ms_since(t2)
        return TreeSnapshot(
            text=out.text,
            tree_version=tree_version(out.text, out.element_count),
            element_count=out.element_count,
            elements=elements,
            truncation=_truncation(out),
            sensitive_regions=_sensitive_regions(nodes, secure, origin),
            url=url,
            focused_id=out.focused_id,
            root=snap.root,
            pid=snap.pid,
            strategy=snap.strategy,
            node_count=len(nodes),
            timings_ms=timings,
            unread_subtrees=out.unread,
            title=clean_name(nodes[0], gtk4),
            opaque=drawn,
        )

    async def _fresh(
        self,
        root: NodeRef,
        max_elements: int,
        text_budget: int,
        origin: tuple[int, int] | None,
        max_children: int,
        deadline: float | None = None,
        keep: FreshRead | None = None,
    ) -> TreeSnapshot:
        """A full read (``keep``: where the tree cache gets what it keeps of it)."""
        t0 = time.perf_counter()
        timings: dict[str, float] = {}
        conn = await collect.until(self._connections.conn_for(root.bus_name), deadline)
        info = await collect.until(self._apps.info(root.bus_name, ROOT_PATH), deadline)
        pid = info.pid if info else await collect.until(self._apps.pid(root.bus_name), deadline)
        limit = _read_limit(max_elements)
        if deadline is None:
            nodes, strategy = await self._read(conn, root, limit, max_children)
        else:
            nodes, strategy = await self._read_by(conn, root, limit, max_children, deadline)
        cut = any(n.unread for n in nodes)
        details_cut = False
        timings["read"] = _ms_since(t0)
        if info is not None and info.gtk2:
            # GTK 2 says no menu item is showing: an open menu is found by its selection
            await collect.until(gtk2_menus.mark_open_menus(conn, nodes), deadline)
        t1 = time.perf_counter()
        try:
            await collect.until(_read_details(conn, nodes, info, max_elements, keep), deadline)
        except TimeoutError:
            details_cut = True  # some actions and values are missing
        timings["detail"] = _ms_since(t1)
        t2 = time.perf_counter()
        gtk4 = _gtk4(info)
        opts = RenderOptions(
            max_elements=max_elements,
            text_budget=text_budget,
            max_children=max_children,
            gtk4_names=gtk4,
        )
        out = render(nodes, opts)
        timings["render"] = _ms_since(t2)
        t3 = time.perf_counter()
        drawn: tuple[OpaqueRegion, ...] = ()
        try:
            secure, url, _read, drawn = await collect.until(_finish(conn, nodes, out), deadline)
        except TimeoutError:
            details_cut = True  # interfaces of some shown elements, a secure field's bounds
            secure, url = [out.elements[i][0] for i in out.secure_ids], None
        shifted = None
        if info is not None and info.libreoffice and not details_cut:
            try:
                shifted = await collect.until(vcl_shift.shifts(conn, nodes), deadline)
            except TimeoutError:
                details_cut = True
        timings["finish"] = _ms_since(t3)
        elements = _elements(nodes, out, pid or 0, gtk4, shifts=shifted)
        regions = _sensitive_regions(nodes, secure, origin)
        truncation = _truncation(out)
        timings["total"] = _ms_since(t0)
        if keep is not None:
            keep.nodes, keep.secure = nodes, secure
        return TreeSnapshot(
            text=out.text,
            tree_version=tree_version(out.text, out.element_count),
            element_count=out.element_count,
            elements=elements,
            truncation=truncation,
            sensitive_regions=regions,
            url=url,
            focused_id=out.focused_id,
            root=root,
            pid=pid,
            strategy=strategy,
            node_count=len(nodes),
            timings_ms=timings,
            partial="deadline" if cut or details_cut else None,
            unread_subtrees=out.unread,
            details_unread=details_cut,
            title=clean_name(nodes[0], gtk4) if nodes else "",
            opaque=drawn,
        )

    async def _read_by(
        self, conn: Conn, root: NodeRef, limit: int, max_children: int, deadline: float
    ) -> tuple[list[RawNode], str]:
        """The read under a deadline: the root alone is asked for first (the app answers in
        order, so it comes back before a long read's reply), then the tree. A walk stops at
        ``READ_SHARE`` of the time left (leaving time for details); a one-call read may take
        until the deadline, and when it does not make it, the root stands for the tree, its
        children unread. TimeoutError when not even the root came back."""
        loop = asyncio.get_running_loop()
        read_by = loop.time() + max(0.0, deadline - loop.time()) * READ_SHARE
        alone = asyncio.ensure_future(collect.read_root(conn, root.bus_name, root.path))
        alone.add_done_callback(_retrieved)
        # its calls must be on the socket before the tree's: a moment for them to go out
        # (and usually to come back: the root costs an app well under a ms)
        await asyncio.wait({alone}, timeout=min(ROOT_FIRST_S, max(0.0, deadline - loop.time())))
        try:
            return await collect.until(
                self._read(conn, root, limit, max_children, read_by), deadline
            )
        except TimeoutError:
            if alone.done() and not alone.cancelled() and alone.exception() is None:
                return [alone.result()], "root"
            raise
        finally:
            if not alone.done():
                alone.cancel()

    async def _read(
        self,
        conn: Conn,
        root: NodeRef,
        limit: int,
        max_children: int,
        deadline: float | None = None,
    ) -> tuple[list[RawNode], str]:
        """The tree's nodes, read again (``COLD_START_RETRIES``) while an app that has just
        started shows only its root; raises UnknownObject when there is not even that. No
        retry that would end after ``deadline``."""
        loop = asyncio.get_running_loop()
        nodes, strategy = await self._reader.read(conn, root, limit, max_children, deadline)
        for delay in COLD_START_RETRIES:
            if len(nodes) > 1 or (
                nodes and nodes[0].child_count == 0 and nodes[0].role not in FRAME_ROLES
            ):
                break
            if deadline is not None and loop.time() + delay >= deadline:
                break
            await asyncio.sleep(delay)
            nodes, strategy = await self._reader.read(conn, root, limit, max_children, deadline)
        if not nodes:
            raise AtspiCallError("org.freedesktop.DBus.Error.UnknownObject", root.path)
        return nodes, strategy


# ---------------------------------------------------------------------------- the steps


async def _extents_changed(conn: Conn, nodes: list[RawNode]) -> bool:
    """Read again the extents of the nodes that have some (labels and fields placed by
    position, secure fields, opaque widgets), and say whether any changed: a window moves,
    and a layout settles, with no tree event at all."""
    have = [i for i, n in enumerate(nodes) if n.extents is not None]
    if not have:
        return False
    before = [nodes[i].extents for i in have]
    await collect.read_extents(conn, nodes, have)
    return any(nodes[i].extents != b for i, b in zip(have, before, strict=True))


def _placed_by_position(entry: Entry) -> bool:
    """Whether a kept name may depend on where nodes are: one was derived from other nodes,
    or an unnamed field has labels around it (one that moved beside it would name it; the
    calculator's unnamed text views have none, and its hits stay hits)."""
    if entry.derived:
        return True
    nodes = entry.nodes
    unnamed = [i for i, n in enumerate(nodes) if unnamed_field(n)]
    return bool(unnamed) and bool(collect.label_candidates(nodes, unnamed))


async def _read_details(
    conn: Conn,
    nodes: list[RawNode],
    info: AppInfo | None,
    max_elements: int,
    keep: FreshRead | None = None,
) -> None:
    """Actions, values, labels… of the nodes that can be shown, at most
    ``max_elements × ENRICH_FACTOR`` of them (see ``collect.enrich``; Chromium answers
    ``GetActions`` with blank action names). ``keep`` learns which nodes those were and
    whether a name was derived from other nodes (the tree cache's patches need both)."""
    await _toolkit_rules(conn, nodes, info)
    todo = _detail_candidates(nodes, max_elements * ENRICH_FACTOR)
    if keep is not None:
        keep.candidates = frozenset(todo)
    await _enrich(conn, nodes, todo, info, keep)


async def _toolkit_rules(conn: Conn, nodes: list[RawNode], info: AppInfo | None) -> None:
    """What a toolkit's own states get wrong, put right before anything is decided from
    them: Firefox keeps chrome it does not draw and background pages as showing
    (atspi/gecko.py); Calc keeps a renamed sheet's old name (atspi/sheet_names.py)."""
    if info is not None and info.gecko:
        await gecko.hide_undrawn(conn, nodes)
    if info is not None and info.libreoffice:
        sheet_names.name_by_tab(nodes)


async def _enrich(
    conn: Conn, nodes: list[RawNode], todo: list[int], info: AppInfo | None, keep: FreshRead | None
) -> None:
    """The details of ``todo``, and the extents of the nodes not yet known to be on screen
    or not (areas.py: every container of a GTK 4 app that sets SHOWING on nothing)."""
    # Chromium answers GetActions with blank names, Firefox with its key bindings
    blank_names = info is not None and (info.chromium or info.gecko)
    names = [nodes[i].name for i in todo] if keep is not None else []
    boxes = areas.box_nodes(nodes, containers=_gtk4(info) and areas.no_showing(nodes))
    await collect.enrich(conn, nodes, todo, blank_names, boxes)
    if keep is not None:
        keep.derived = any(nodes[i].name != name for i, name in zip(todo, names, strict=True))


async def _finish(
    conn: Conn,
    nodes: list[RawNode],
    out: Rendered,
    *,
    reuse_url: bool = False,
    url: str | None = None,
) -> tuple[list[int], str | None, list[int], tuple[OpaqueRegion, ...]]:
    """Interfaces of shown elements the strategy did not provide, extents of secure ones and
    of widgets that draw what they do not expose (atspi/opaque.py), and the document's URL
    (``reuse_url``: ``url`` is still the document's — a patch that did not touch a document;
    a hit serves its kept URL too). Returns the secure elements' node indexes, the URL, the
    nodes whose interfaces or extents were read (their elements changed), and the opaque
    widgets."""
    shown = [ni for ni, _ in out.elements.values()]
    # (only where an agent acts: other elements get theirs when perform needs them)
    unknown = [
        ni
        for ni in shown
        if nodes[ni].ifaces == collect.UNKNOWN
        and (
            nodes[ni].role in ALWAYS_SHOWN_ROLES
            or nodes[ni].states & _B_FOCUSED
            or nodes[ni].actions
        )
    ]
    secure = [out.elements[i][0] for i in out.secure_ids]
    drawn = opaque.candidates(nodes)
    placed = secure + drawn
    await asyncio.gather(
        collect.read_interfaces(conn, nodes, unknown) if unknown else _noop(),
        collect.read_extents(conn, nodes, placed) if placed else _noop(),
    )
    url = url if reuse_url else await _document_url(conn, nodes, shown)
    return secure, url, unknown + secure, _opaque(nodes, drawn, out)


def _opaque(nodes: list[RawNode], drawn: list[int], out: Rendered) -> tuple[OpaqueRegion, ...]:
    """The widgets of ``drawn`` large enough to hold content, with the elements they are
    shown under (atspi/opaque.py)."""
    if not drawn:
        return ()
    shown = {ni: eid for eid, (ni, _) in out.elements.items()}
    return _placed(nodes, opaque.placed(nodes, drawn, shown))


def _placed(
    nodes: list[RawNode], found: Iterable[opaque.Opaque | OpaqueRegion]
) -> tuple[OpaqueRegion, ...]:
    """Each widget where it is now (its node's extents, read again by a hit)."""
    out: list[OpaqueRegion] = []
    for o in found:
        e = nodes[o.node].extents
        if e is not None:
            rect = Rect(x=e[0], y=e[1], width=e[2], height=e[3])
            out.append(OpaqueRegion(o.element_id, o.node, rect))
    return tuple(out)


def _elements(
    nodes: list[RawNode],
    out: Rendered,
    pid: int,
    gtk4: bool,
    *,
    kept: dict[int, ElementRef] | None = None,
    reread: set[int] | None = None,
    shifts: dict[int, tuple[int, int]] | None = None,
) -> dict[int, ElementRef]:
    """The shown elements by id, as the host keeps them to act on later.

    ``kept``: the elements of the snapshot a patch started from, still true of every node
    not in ``reread`` (the patch changed no others): an element on the same line of the same
    node under the same parent is taken over rather than built again (~1 µs each saved on a
    page of a thousand elements is most of a patch's own work after the render)."""
    elements: dict[int, ElementRef] = {}
    for eid, (ni, parent_id) in out.elements.items():
        n = nodes[ni]
        shift = shifts.get(ni) if shifts else None
        if kept is not None and (reread is None or ni not in reread):
            e = kept.get(eid)
            if (
                e is not None
                and e.parent_id == parent_id
                and e.ref.path == n.path
                and (shifts is None or e.shift == shift)
            ):
                elements[eid] = e
                continue
        identity = None
        if n.address is not None and on_screen.transient(n) and n.parent >= 0:
            # the app makes this cell anew for every question (Calc): it is named by its
            # table and address, and found again by them when acted on
            table = nodes[n.parent]
            identity = (table.bus, table.path, n.address)
        elements[eid] = ElementRef(
            id=eid,
            ref=NodeRef(n.bus, n.path),
            pid=pid,
            role=rendered_role(window_role(n.role) if ni == 0 else n.role),
            atspi_role=n.role,
            name=clean_name(n, gtk4),
            states=_states(n.states),
            interfaces=_ifaces(max(n.ifaces, 0)),
            actions=n.actions or (),
            extents=_rect(n.extents),
            secure=n.role == R_PASSWORD_TEXT,
            parent_id=parent_id,
            index_in_parent=n.index if n.index >= 0 else None,
            identity=identity,
            shift=shift,
        )
    return elements


def _moved(
    elements: dict[int, ElementRef], nodes: list[RawNode], index: dict[str, int]
) -> dict[int, ElementRef]:
    """The elements with the extents their nodes have now."""
    out: dict[int, ElementRef] = {}
    for eid, e in elements.items():
        ni = index.get(e.path)
        rect = _rect(nodes[ni].extents) if ni is not None else e.extents
        out[eid] = e if rect == e.extents else dataclasses.replace(e, extents=rect)
    return out


def _sensitive_regions(
    nodes: list[RawNode], secure: list[int], origin: tuple[int, int] | None
) -> list[Rect]:
    """The secure elements' bounds, relative to ``origin`` (the screenshot's top-left)."""
    regions: list[Rect] = []
    for ni in secure:
        e = nodes[ni].extents
        if e is not None:
            ox, oy = origin or (0, 0)
            regions.append(Rect(x=e[0] - ox, y=e[1] - oy, width=e[2], height=e[3]))
    return regions


def _truncation(out: Rendered) -> Truncation:
    return Truncation(
        omitted_elements=out.omitted,
        elided_children=out.elided,
        noise_dropped=out.noise,
        element_cap_hit=out.cap_hit,
        text_budget_hit=out.budget_hit,
    )


async def _document_url(conn: Conn, nodes: list[RawNode], shown: list[int]) -> str | None:
    """The URL of the first shown document (a web page); None when there is none."""
    for ni in shown:
        n = nodes[ni]
        if n.role in DOCUMENT_ROLES:
            try:
                body = await conn.call(n.bus, n.path, I_DOCUMENT, "GetAttributes")
            except AtspiCallError:
                return None
            attrs = body[0]
            for key in ("DocURL", "URI", "URL", "docurl", "uri"):
                if attrs.get(key):
                    return str(attrs[key])
            return None
    return None


# ---------------------------------------------------------------------------- helpers


def _gtk4(info: AppInfo | None) -> bool:
    """GTK 4: it names unlabelled widgets after their class, and 4.8 sets SHOWING on nothing."""
    return bool(info and info.toolkit == "GTK" and (info.toolkit_version or "").startswith("4"))


def _read_limit(max_elements: int) -> int:
    """Most nodes a read takes in (the render shows at most ``max_elements`` of them)."""
    return max(max_elements * 8, 4000)


def tree_version(text: str, element_count: int) -> str:
    """Content hash of the rendered text and the element count: same UI, same version."""
    h = hashlib.sha256()
    h.update(f"{element_count}\n".encode())
    h.update(text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:20]


def _detail_candidates(nodes: list[RawNode], cap: int) -> list[int]:
    hidden = [False] * len(nodes)
    out: list[int] = []
    for i, n in enumerate(nodes):
        p = n.parent
        if p >= 0 and (hidden[p] or is_hidden(n, nodes[p])):
            hidden[i] = True
            continue
        if collect.needs_detail(n, i == 0, nodes):
            out.append(i)
            if len(out) >= cap:
                break
    return out


_STATE_CACHE: dict[int, frozenset[str]] = {}
_IFACE_CACHE: dict[int, frozenset[str]] = {}


def _states(mask: int) -> frozenset[str]:
    s = _STATE_CACHE.get(mask)
    if s is None:
        s = _STATE_CACHE[mask] = state_names(mask)
    return s


def _ifaces(mask: int) -> frozenset[str]:
    s = _IFACE_CACHE.get(mask)
    if s is None:
        s = _IFACE_CACHE[mask] = iface_names(mask)
    return s


def _rect(e: tuple[int, int, int, int] | None) -> Rect | None:
    return None if e is None else Rect(x=e[0], y=e[1], width=e[2], height=e[3])


def _ms_since(t: float) -> float:
    return (time.perf_counter() - t) * 1000


async def _noop() -> None:
    return None


def _retrieved(future: asyncio.Future[RawNode] | asyncio.Future[bool]) -> None:
    """Mark a read nobody awaited any more as seen (no 'never retrieved' warning)."""
    if not future.cancelled():
        future.exception()
