"""Reading an accessible subtree fast: three strategies, chosen per application.

Per node the tree needs role, name, states and structure; kept nodes also need action names,
a value and interfaces. One D-Bus call per property per node, one after another (what a naive
walker does), costs ~8 round trips per node. What we do instead:

``cache``      ``org.a11y.atspi.Cache.GetItems`` returns path, parent, index, child count,
               interfaces, name, role, description and states of every object the app has
               exported, in one call. GTK4 implements it; atk-bridge (GTK3, Chromium) only
               once some client registered for events (the client does, at connect). GTK4
               exports objects lazily, atk-bridge leaves out MANAGES_DESCENDANTS children
               and whatever Chromium added without children-changed (a page loaded after
               the cache was made, nodes under ignored elements): subtrees the cache misses
               are read (a walk, or Collection for Chromium) and grafted in.
``collection`` ``Collection.GetMatches`` with a match-everything rule returns the whole subtree
               in preorder in one call (atk-bridge: GTK3, Chromium, Java; Chromium answers
               it at ~4 µs a node, against ~50 µs a node for the three calls below, which
               is why a cache that holds Chromium's page is worth asking first). Then name/parent/
               child count (one ``Properties.GetAll``), role and states per node, issued all
               at once over the app's peer-to-peer socket, marshalled by :mod:`.wire`.
               ``Collection.GetTree`` would be one call, but it crashed Chromium 156 here:
               never used.
``walk``       breadth-first, one level at a time, everything per node concurrently. The
               fallback for apps with neither, and the one that can stop mid-way: given a
               deadline, what was read by then is returned, each parent whose children
               were not read yet counting them in ``RawNode.unread``.

All strategies return the same :class:`RawNode` list in preorder (root first) with parent
links; :mod:`.render` decides what to show.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Iterable
from typing import Any, Final, TypeVar

from deskpilot.host.atspi import areas, closed_menus, field_places
from deskpilot.host.atspi.bus import (
    CACHE_PATH,
    I_ACCESSIBLE,
    I_ACTION,
    I_CACHE,
    I_COLLECTION,
    I_COMPONENT,
    I_PROPERTIES,
    I_VALUE,
    AtspiCallError,
    Call,
    Conn,
)
from deskpilot.host.atspi.doc_text import TextReads, TextState, embedded_paragraph, text_kind
from deskpilot.host.atspi.vocab import (
    ALWAYS_SHOWN_ROLES,
    COMBO_ROLES,
    LABEL_ROLES,
    LABELLED_ROLES,
    NUMERIC_VALUE_ROLES,
    R_PASSWORD_TEXT,
    RELATION_LABELLED_BY,
    ROLE_NUMBER,
    TEXT_VALUE_ROLES,
    Iface,
    State,
    bit,
    iface_mask,
    state_mask,
)

_T = TypeVar("_T")

MAX_ACTIONS: Final = 20
UNKNOWN: Final = -1
#: the role of a node a walk found hidden and did not read further (its states only)
UNREAD_ROLE: Final = -1

_IF_ACTION: Final = int(Iface.ACTION)
_IF_TEXT: Final = int(Iface.TEXT)
_IF_VALUE: Final = int(Iface.VALUE)
_VISIBLE_MASK: Final = bit(State.VISIBLE) | bit(State.SHOWING)
_EDITABLE: Final = bit(State.EDITABLE)
_MANAGES_DESCENDANTS: Final = bit(State.MANAGES_DESCENDANTS)
_SHOWING: Final = bit(State.SHOWING)
_R_MENU: Final = ROLE_NUMBER["menu"]
_R_PAGE_TAB: Final = ROLE_NUMBER["page tab"]
_MENU_ITEM_ROLES: Final = frozenset(
    ROLE_NUMBER[r]
    for r in ("menu item", "check menu item", "radio menu item", "tearoff menu item", "menu")
)
_EXPANDABLE: Final = bit(State.EXPANDABLE)
_EXPANDED: Final = bit(State.EXPANDED)
_SELECTED: Final = bit(State.SELECTED)
#: a container reporting more children than this is never asked for them (docs/host-tree.md,
#: "Big and virtual containers"): what is on screen of it is read instead
MAX_CHILDREN_ASKED: Final = 4000
_CHOSEN_MASK: Final = bit(State.SELECTED) | bit(State.CHECKED)
# a toolkit's class name standing in for a missing name (GTK 4.8: "GtkText", "AdwEntryRow")
_TYPE_NAME: Final = re.compile(r"^(?:Gtk|Adw)[A-Z][A-Za-z0-9]*$")
LABEL_MAX_GAP: Final = 400  # px between a label's right edge and its field's left edge
_MATCH_ALL_RULE: Final[tuple[Any, ...]] = ([0, 0], 1, {}, 1, [0, 0, 0, 0], 1, [], 1, False)
_RULE_SIG: Final = "(aiia{ss}iaiiasib)"
_SORT_CANONICAL: Final = 1


class RawNode:
    """One accessible object as read from the bus (before any filtering)."""

    __slots__ = (
        "actions",
        "address",
        "bus",
        "child_count",
        "children",
        "depth",
        "desc",
        "empty",
        "extents",
        "formula",
        "ifaces",
        "index",
        "name",
        "parent",
        "parts",
        "path",
        "role",
        "screen",
        "stale",
        "states",
        "text",
        "unread",
        "value",
    )

    def __init__(
        self,
        bus: str,
        path: str,
        *,
        parent: int = -1,
        depth: int = 0,
        role: int = 0,
        name: str = "",
        desc: str = "",
        states: int = 0,
        ifaces: int = UNKNOWN,
        child_count: int = 0,
        index: int = -1,
    ) -> None:
        self.bus = bus
        self.path = path
        self.parent = parent
        self.depth = depth
        self.role = role
        self.name = name
        self.desc = desc
        self.states = states
        self.ifaces = ifaces
        self.child_count = child_count
        self.index = index  # index among the AT-SPI parent's children
        self.children: list[int] = []
        self.actions: tuple[str, ...] | None = None  # None = not read
        self.value: str | None = None
        self.extents: tuple[int, int, int, int] | None = None
        #: children not read because the read's deadline passed (render marks them)
        self.unread = 0
        #: a virtual container's summary of what is on screen of it (:mod:`.on_screen`),
        #: shown as a line under it; None for any other node
        self.screen: str | None = None
        #: a cell that names itself by its spreadsheet address (``B3``): that address
        self.address: str | None = None
        #: that cell's formula as the app says it (``=B2*C2``; cut ones end in ``…``)
        self.formula: str | None = None
        #: a current cell whose text the app did not bring up to date: the number it holds
        #: now, shown instead of the old text (:mod:`.stale_cells`)
        self.stale: str | None = None
        #: a cell of what is on screen made of cells (a tree view's renderers): its parts,
        #: read with it and grafted in as its children (:mod:`.on_screen`)
        self.parts: list[RawNode] = []
        #: caret, selection and what is not shown of its text (doc_text.py); None: nothing
        self.text: TextState | None = None
        #: no area on screen (zero width or height: areas.py); None: not read
        self.empty: bool | None = None

    def __repr__(self) -> str:  # debugging aid only
        return f"RawNode({self.role}, {self.name!r}, depth={self.depth})"


def _visible(n: RawNode) -> bool:
    return bool(n.states & _VISIBLE_MASK)


def is_hidden(node: RawNode, parent: RawNode) -> bool:
    """Neither visible nor showing; or an item of a closed menu (GTK3 keeps those visible,
    only an open menu's items are showing; LibreOffice's sidebar keeps a closed menu's items
    under a button); what a collapsed section holds; or the page of a tab that is not
    selected. The
    menu rule needs the menu itself to be showing: GTK 4.8 sets SHOWING on nothing, and an
    open GTK4 popover's items are as un-showing as a closed GTK3 menu's (a closed popover is
    not visible at all). Hidden nodes are never shown (:mod:`.render`), and a walk does not
    read below them.

    By the states alone: which nodes' details are read is decided before any extents are
    (a node with no area, ``RawNode.empty``, is left out by the render: areas.py)."""
    st = node.states
    if not st & _VISIBLE_MASK:
        return True
    if st & _SHOWING:
        return False
    if parent.role == _R_PAGE_TAB:
        # the page of a tab that is not the current one (GTK's notebook: a tab's child is
        # its page, kept VISIBLE while another page is on screen; GIMP's dock listed every
        # page). A background tab's own parts that are on screen say SHOWING (Firefox's
        # close buttons); a GTK 4 page says SHOWING nowhere and is hidden the same way
        return not parent.states & _SELECTED
    if not parent.states & _SHOWING:
        return False  # a toolkit that sets SHOWING on nothing (GTK 4.8) says nothing here
    if parent.role == _R_MENU:
        return True  # a closed menu's items
    if parent.role in COMBO_ROLES:
        return False  # a combo box's options are its own to list (atspi/combo_view.py)
    if node.role in _MENU_ITEM_ROLES:
        # a closed menu's items where their parent is no menu (LibreOffice's sidebar keeps
        # its "Menu" button's items as that button's children)
        return True
    # what a collapsed section holds (GIMP's "Dynamics Options" expander)
    return bool(parent.states & _EXPANDABLE) and not parent.states & _EXPANDED


def virtual(n: RawNode) -> bool:
    """A container whose children are never asked for: it manages its descendants (the app
    makes an object per child on request — LibreOffice Calc's sheet says it has
    2,147,483,647 cells, and asking for them makes it build one per cell), or it reports
    more than ``MAX_CHILDREN_ASKED`` children. Every read strategy obeys this one rule;
    :mod:`.on_screen` reads what is on screen of such a container. (A count of -1 in
    atk-bridge's cache only says the cache does not hold the children — a GTK menu's: they
    are read live, where the count is real.)"""
    return bool(n.states & _MANAGES_DESCENDANTS) or n.child_count > MAX_CHILDREN_ASKED


# ---------------------------------------------------------------------------- strategies


async def read_cache(conn: Conn, bus: str) -> list[Any] | None:
    """The app's Cache items, or None when the app has no Cache."""
    try:
        body = await conn.call(bus, CACHE_PATH, I_CACHE, "GetItems")
    except AtspiCallError as exc:
        if exc.gone:
            raise
        return None
    items = body[0]
    return items if isinstance(items, list) else None


def from_cache(
    items: list[Any], root_path: str, limit: int, *, hidden_too: bool = False
) -> tuple[list[RawNode], list[int]]:
    """Build the subtree under ``root_path`` from Cache items.

    Returns the preorder nodes and the indices of visible nodes whose cached children are
    not their live children (GTK4 exports lazily; atk-bridge never caches what Chromium
    changed without children-changed). A virtual container (:func:`virtual`: atk-bridge
    never caches the children of MANAGES_DESCENDANTS nodes such as tree views and sheets)
    is taken without children, never as a miss. Empty nodes: root not cached.
    ``hidden_too``: hidden nodes' subtrees must be exact as well (the cache of a Chromium
    read stands for a Collection read of the whole tree: ``tree_patch.same_shape`` compares
    the two).
    """
    by_path: dict[str, Any] = {}
    kids: dict[str, list[tuple[int, str]]] = {}
    for it in items:
        path = it[0][1]
        by_path[path] = it
        kids.setdefault(it[2][1], []).append((it[3], path))
    if root_path not in by_path:
        return [], []
    nodes: list[RawNode] = []
    incomplete: list[int] = []
    stack: list[tuple[str, int, int]] = [(root_path, -1, 0)]
    while stack and len(nodes) < limit:
        path, parent, depth = stack.pop()
        (bus, _p), _app, _par, idx, cc, ifs, name, role, desc, st = by_path[path]
        node = RawNode(
            bus,
            path,
            parent=parent,
            depth=depth,
            role=int(role),
            name=str(name),
            desc=str(desc),
            states=state_mask(st),
            ifaces=iface_mask(ifs),
            child_count=int(cc),
            index=int(idx),
        )
        me = len(nodes)
        nodes.append(node)
        if parent >= 0:
            nodes[parent].children.append(me)
        children = kids.get(path, [])
        if 0 <= node.child_count < len(children):
            # GTK 4.8 keeps a closed popover in the cache, still naming its old parent and
            # index, though the parent no longer counts it: only counted children are real
            children = [c for c in children if c[0] < node.child_count]
        if virtual(node):
            continue  # never its children (atk-bridge caches none); on_screen reads them
        children.sort()
        # a child count of -1: the cache does not hold the children (a GTK menu's); children
        # that are not exactly indexes 0…count-1 were added or removed without the cache
        # hearing of it (Chromium changes some subtrees without children-changed)
        if (
            node.child_count < 0
            or len(children) != node.child_count
            or any(idx != k for k, (idx, _p) in enumerate(children))
        ) and (me == 0 or hidden_too or _visible(node)):
            incomplete.append(me)
            continue
        for _idx, cpath in reversed(children):
            stack.append((cpath, me, depth + 1))
    return nodes, incomplete


def graft(nodes: list[RawNode], subtrees: dict[int, list[RawNode]]) -> list[RawNode]:
    """Replace the children of ``nodes[i]`` by those of ``subtrees[i]`` (a preorder list
    whose first node is the same object); returns a fresh preorder list."""
    out: list[RawNode] = []
    stack: list[tuple[list[RawNode], int, int, int]] = [(nodes, 0, -1, 0)]
    while stack:
        src, i, parent, depth = stack.pop()
        node = src[i]
        kids = node.children
        if src is nodes and i in subtrees:
            src = subtrees[i]
            kids = src[0].children
            i = 0
        node.parent = parent
        node.depth = depth
        node.children = []
        me = len(out)
        out.append(node)
        if parent >= 0:
            out[parent].children.append(me)
        for c in reversed(kids):
            stack.append((src, c, me, depth + 1))
    return out


async def has_collection(conn: Conn, bus: str, path: str) -> bool:
    try:
        body = await conn.call(bus, path, I_ACCESSIBLE, "GetInterfaces")
    except AtspiCallError as exc:
        if exc.gone:
            raise
        return False
    return I_COLLECTION in body[0]


async def get_matches(
    conn: Conn, bus: str, path: str, rule: tuple[Any, ...] | list[Any], count: int
) -> list[tuple[str, str]]:
    """``Collection.GetMatches`` under ``path``: at most ``count`` objects (0: all) matching
    ``rule``, in canonical order (preorder), as (bus name, path); raises AtspiCallError."""
    body = await conn.call(
        bus,
        path,
        I_COLLECTION,
        "GetMatches",
        _RULE_SIG + "uib",
        (list(rule), _SORT_CANONICAL, max(0, count), True),
    )
    return [(b or bus, p) for b, p in body[0]]


async def read_collection(
    conn: Conn, bus: str, root_path: str, limit: int, *, whole: bool = False
) -> list[RawNode]:
    """Preorder refs from one GetMatches, then name/parent/child count, states and role of
    every node, all issued at once. (Roles by eight bit-slice GetMatches — the nodes whose
    role number has bit k set — were tried: no faster than GetRole per node once calls are
    cheap on our side, since Chromium walks its whole tree for each GetMatches.)

    Menu items and separators are left out of the first GetMatches, and the subtrees where
    they could be shown read again whole (:mod:`.closed_menus`: LibreOffice's closed menus
    are most of its tree); ``whole``: every node in one read (Chromium)."""
    nodes = await _read_matches(conn, bus, root_path, limit, whole)
    if whole:
        return nodes
    for _ in range(closed_menus.MAX_ROUNDS):
        todo = closed_menus.incomplete(nodes)
        if not todo or len(nodes) >= limit:
            break
        nodes = await _fill_children(conn, nodes, todo, limit)
    return nodes


async def _fill_children(
    conn: Conn, nodes: list[RawNode], which: list[int], limit: int
) -> list[RawNode]:
    """Read the children of ``which`` that a pruned read left out, and put them in their
    places; returns the new preorder list."""
    listed = await conn.batch(
        [(nodes[i].bus, nodes[i].path, I_ACCESSIBLE, "GetChildren", "", ()) for i in which]
    )
    known = {n.path for n in nodes}
    wanted: list[tuple[int, int, str, str]] = []  # (parent, index, bus, path)
    order: dict[int, list[str]] = {}
    for i, r in zip(which, listed, strict=True):
        if isinstance(r, AtspiCallError):
            continue
        kids = [(b or nodes[i].bus, p) for b, p in r[0]]
        order[i] = [p for _b, p in kids]
        wanted.extend((i, k, b, p) for k, (b, p) in enumerate(kids) if p not in known)
    wanted = wanted[: max(0, limit - len(nodes))]
    calls: list[Call] = []
    for _i, _k, b, p in wanted:
        calls.append((b, p, I_PROPERTIES, "GetAll", "s", (I_ACCESSIBLE,)))
        calls.append((b, p, I_ACCESSIBLE, "GetState", "", ()))
        calls.append((b, p, I_ACCESSIBLE, "GetRole", "", ()))
    res = await conn.batch(calls) if calls else []
    added: dict[int, list[RawNode]] = {}
    for k, (i, _idx, b, p) in enumerate(wanted):
        props, st, role = res[3 * k], res[3 * k + 1], res[3 * k + 2]
        if isinstance(props, AtspiCallError):
            continue
        d = props[0]
        added.setdefault(i, []).append(
            RawNode(
                b,
                p,
                role=int(role[0]) if not isinstance(role, AtspiCallError) else 0,
                name=str(d["Name"].value) if "Name" in d else "",
                desc=str(d["Description"].value) if "Description" in d else "",
                states=state_mask(st[0]) if not isinstance(st, AtspiCallError) else 0,
                child_count=int(d["ChildCount"].value) if "ChildCount" in d else 0,
            )
        )
    return _with_children(nodes, added, order)


def _with_children(
    nodes: list[RawNode], added: dict[int, list[RawNode]], order: dict[int, list[str]]
) -> list[RawNode]:
    """A fresh preorder list: ``nodes`` with ``added[i]`` among node ``i``'s children, in the
    order the app lists them (``order[i]``: their paths; a child it does not list keeps its
    place after them). Parent links, depths and indexes are set anew."""
    kids: list[list[RawNode]] = []
    for i, n in enumerate(nodes):
        mine = [nodes[c] for c in n.children] + added.get(i, [])
        if i in order:
            rank = {p: k for k, p in enumerate(order[i])}
            mine.sort(key=lambda c: rank.get(c.path, len(rank)))
        kids.append(mine)
    slot = {id(n): i for i, n in enumerate(nodes)}
    out: list[RawNode] = []
    stack: list[tuple[RawNode, int, int, int]] = [(nodes[0], -1, 0, nodes[0].index)]
    while stack:
        node, parent, depth, index = stack.pop()
        node.parent, node.depth, node.index = parent, depth, index
        node.children = []
        me = len(out)
        out.append(node)
        if parent >= 0:
            out[parent].children.append(me)
        at = slot.get(id(node))
        below = kids[at] if at is not None else []
        for k in range(len(below) - 1, -1, -1):
            stack.append((below[k], me, depth + 1, k))
    return out


async def _read_matches(
    conn: Conn, bus: str, root_path: str, limit: int, whole: bool
) -> list[RawNode]:
    rule = _MATCH_ALL_RULE if whole else closed_menus.RULE
    refs: list[tuple[str, str]] = [(bus, root_path)]
    refs.extend(await get_matches(conn, bus, root_path, rule, limit - 1))
    calls: list[Call] = []
    for b, p in refs:
        calls.append((b, p, I_PROPERTIES, "GetAll", "s", (I_ACCESSIBLE,)))
        calls.append((b, p, I_ACCESSIBLE, "GetState", "", ()))
        calls.append((b, p, I_ACCESSIBLE, "GetRole", "", ()))
    res = await conn.batch(calls)
    nodes: list[RawNode] = []
    index_of: dict[str, int] = {}
    for i, (b, p) in enumerate(refs):
        props, st, role = res[3 * i], res[3 * i + 1], res[3 * i + 2]
        if isinstance(props, AtspiCallError):
            if i == 0:
                raise props
            continue  # vanished between the two calls
        d = props[0]
        parent_path = d["Parent"].value[1] if "Parent" in d else ""
        # a parent not among the nodes read is taken to be the root: LibreOffice's root
        # pane names a parent that is no child of its frame
        parent = index_of.get(parent_path, 0 if i else -1)
        node = RawNode(
            b,
            p,
            parent=parent,
            depth=nodes[parent].depth + 1 if parent >= 0 else 0,
            role=int(role[0]) if not isinstance(role, AtspiCallError) else 0,
            name=str(d["Name"].value) if "Name" in d else "",
            desc=str(d["Description"].value) if "Description" in d else "",
            states=state_mask(st[0]) if not isinstance(st, AtspiCallError) else 0,
            child_count=int(d["ChildCount"].value) if "ChildCount" in d else 0,
        )
        me = len(nodes)
        index_of[p] = me
        if parent >= 0:
            nodes[parent].children.append(me)
            node.index = len(nodes[parent].children) - 1
        nodes.append(node)
    return without_virtual_children(nodes)


def without_virtual_children(nodes: list[RawNode]) -> list[RawNode]:
    """``nodes`` (preorder) without what lies below a virtual container (:func:`virtual`):
    a Collection read gets those too (``GetMatches`` descends into every node), and they are
    never shown as read — :mod:`.on_screen` reads what is on screen of it instead."""
    cut = [n for n in nodes if n.children and virtual(n)]
    if not cut:
        return nodes
    for n in cut:
        n.children = []
    return graft(nodes, {})


async def read_walk(
    conn: Conn,
    bus: str,
    root_path: str,
    limit: int,
    max_children: int,
    deadline: float | None = None,
    *,
    menus: bool = False,
) -> list[RawNode]:
    """Breadth-first, a level at a time, in three batches per level: the states of all its
    nodes; the name, child count and role of those that are not hidden (a hidden node is
    never shown, and every call costs the app: LibreOffice spends ~40 µs on each, and
    two thirds of its window's nodes are hidden or items of closed menus); the children
    of those that have any and may be asked for (never a virtual container's:
    :func:`virtual`). A hidden node keeps role ``UNREAD_ROLE`` and no name, unless it may
    be a combo box's item (its name is the combo's value), or ``menus`` is set and it is a
    menu's item (GTK 2: gail says no item of an open menu is showing, see ``gtk2_menus``).

    ``deadline`` (``loop.time()``): a level not answered by then is left unread — its
    parents count the children in ``RawNode.unread`` — and the levels read so far are the
    result; TimeoutError when not even the root was read (the app does not answer)."""
    flat: list[RawNode] = []
    level: list[tuple[str, str, int, int, int]] = [(bus, root_path, -1, 0, -1)]
    while level and len(flat) < limit:
        level = level[: limit - len(flat)]
        states = [(b, p, I_ACCESSIBLE, "GetState", "", ()) for b, p, _par, _d, _i in level]
        try:
            got_states = await until(conn.batch(states), deadline)
        except TimeoutError:
            if not flat:
                raise
            for _b, _p, parent, _d, _i in level:
                flat[parent].unread += 1
            break
        nodes: list[RawNode] = []
        shown: list[RawNode] = []
        for (b, p, parent, depth, idx), st in zip(level, got_states, strict=True):
            if isinstance(st, AtspiCallError):
                if parent < 0:
                    raise st
                continue  # vanished
            node = RawNode(
                b, p, parent=parent, depth=depth, role=UNREAD_ROLE, states=state_mask(st[0])
            )
            node.index = idx
            nodes.append(node)
            if (
                parent < 0
                or not is_hidden(node, flat[parent])
                or _in_combo(flat, parent)
                or (menus and flat[parent].role == _R_MENU)
            ):
                shown.append(node)
        calls: list[Call] = []
        for n in shown:
            calls.append((n.bus, n.path, I_PROPERTIES, "GetAll", "s", (I_ACCESSIBLE,)))
            calls.append((n.bus, n.path, I_ACCESSIBLE, "GetRole", "", ()))
        try:
            res = await until(conn.batch(calls), deadline)
        except TimeoutError:
            if not flat:
                raise
            for _b, _p, parent, _d, _i in level:
                flat[parent].unread += 1
            break
        gone: set[int] = set()
        for k, n in enumerate(shown):
            props, role = res[2 * k], res[2 * k + 1]
            if isinstance(props, AtspiCallError):
                if n.parent < 0:
                    raise props
                gone.add(id(n))
                continue
            d = props[0]
            n.role = int(role[0]) if not isinstance(role, AtspiCallError) else 0
            n.name = str(d["Name"].value) if "Name" in d else ""
            n.desc = str(d["Description"].value) if "Description" in d else ""
            n.child_count = int(d["ChildCount"].value) if "ChildCount" in d else 0
        parents: list[int] = []
        for n in nodes:
            if id(n) in gone:
                continue
            me = len(flat)
            flat.append(n)
            # (a hidden node read all the same may be a combo box's item list: read below it)
            if n.role != UNREAD_ROLE and n.child_count > 0 and not virtual(n):
                parents.append(me)
        level = []
        if not parents:
            break
        kids = [(flat[k].bus, flat[k].path, I_ACCESSIBLE, "GetChildren", "", ()) for k in parents]
        try:
            got = await until(conn.batch(kids), deadline)
        except TimeoutError:
            for k in parents:
                flat[k].unread = flat[k].child_count
            break
        for k, ch in zip(parents, got, strict=True):
            if isinstance(ch, AtspiCallError):
                continue
            n = flat[k]
            for j, (cb, cp) in enumerate(ch[0][:max_children]):
                level.append((cb or n.bus, cp, k, n.depth + 1, j))
    return _preorder(flat)


def _in_combo(nodes: list[RawNode], parent: int) -> bool:
    """Whether a child of ``nodes[parent]`` may be one of a combo box's items, hidden or not
    (a closed combo's value is its chosen item: :func:`_labels`; items sit up to three
    levels below it, ``_items``)."""
    p = parent
    for _ in range(3):
        if p < 0:
            return False
        if nodes[p].role in COMBO_ROLES:
            return True
        p = nodes[p].parent
    return False


def raw_node(
    bus: str,
    path: str,
    props: dict[str, Any],
    role: Any,
    states: Any,
    parent: int,
    depth: int,
    index: int,
) -> RawNode:
    """A node from its ``Properties.GetAll`` (Accessible), ``GetRole`` and ``GetState``
    answers (either of the last two may be an error: role 0, no states)."""
    return RawNode(
        bus,
        path,
        parent=parent,
        depth=depth,
        role=int(role[0]) if not isinstance(role, AtspiCallError) else 0,
        name=str(props["Name"].value) if "Name" in props else "",
        desc=str(props["Description"].value) if "Description" in props else "",
        states=state_mask(states[0]) if not isinstance(states, AtspiCallError) else 0,
        child_count=int(props["ChildCount"].value) if "ChildCount" in props else 0,
        index=index,
    )


async def read_root(conn: Conn, bus: str, root_path: str) -> RawNode:
    """The root alone, its children all counted unread: what a read that missed its
    deadline shows of an app that still answers (raises when the root is gone)."""
    calls: list[Call] = [
        (bus, root_path, I_PROPERTIES, "GetAll", "s", (I_ACCESSIBLE,)),
        (bus, root_path, I_ACCESSIBLE, "GetRole", "", ()),
        (bus, root_path, I_ACCESSIBLE, "GetState", "", ()),
    ]
    props, role, st = await conn.batch(calls)
    if isinstance(props, AtspiCallError):
        raise props
    d = props[0]
    node = RawNode(
        bus,
        root_path,
        role=int(role[0]) if not isinstance(role, AtspiCallError) else 0,
        name=str(d["Name"].value) if "Name" in d else "",
        desc=str(d["Description"].value) if "Description" in d else "",
        states=state_mask(st[0]) if not isinstance(st, AtspiCallError) else 0,
        child_count=int(d["ChildCount"].value) if "ChildCount" in d else 0,
    )
    node.unread = node.child_count if node.child_count >= 0 else 1  # -1: manages its own
    return node


async def until(awaitable: Awaitable[_T], deadline: float | None) -> _T:
    """``awaitable``'s result, or TimeoutError at ``deadline`` (``loop.time()``; None: no
    deadline). A deadline already past still lets a result that is ready count."""
    if deadline is None:
        return await awaitable
    async with asyncio.timeout_at(deadline):
        return await awaitable


def _preorder(flat: list[RawNode]) -> list[RawNode]:
    """Reorder a BFS list (parent links by BFS index) into preorder with fresh links."""
    if not flat:
        return flat
    kids: list[list[int]] = [[] for _ in flat]
    for i, n in enumerate(flat):
        if n.parent >= 0:
            kids[n.parent].append(i)
    out: list[RawNode] = []
    stack: list[tuple[int, int]] = [(0, -1)]
    while stack:
        i, parent = stack.pop()
        n = flat[i]
        n.parent = parent
        n.children = []
        me = len(out)
        out.append(n)
        if parent >= 0:
            out[parent].children.append(me)
        for k in reversed(kids[i]):
            stack.append((k, me))
    return out


# ---------------------------------------------------------------------------- enrichment


def needs_detail(n: RawNode, is_root: bool, nodes: list[RawNode] | None = None) -> bool:
    """Whether rendering could need this node's actions or value (cheap pre-filter);
    ``nodes``: the tree ``n`` is in (a paragraph with a link in it has text of its own:
    doc_text.py ``embedded_paragraph``)."""
    if is_root:
        return False
    return (
        n.role in ALWAYS_SHOWN_ROLES
        or n.role in NUMERIC_VALUE_ROLES
        or (not n.children and not n.name)
        or (nodes is not None and embedded_paragraph(n, nodes))
    )


def action_names(answer: Any) -> tuple[str, ...]:
    """The names in an answer to ``Action.GetActions`` (its triples' first fields), at most
    ``MAX_ACTIONS``: one reading for every reader of a node's actions."""
    return tuple(str(a[0]) for a in answer[0][:MAX_ACTIONS])


async def enrich(
    conn: Conn,
    nodes: list[RawNode],
    todo: Iterable[int],
    blank_names: bool,
    boxes: list[int] | None = None,
) -> None:
    """Fill interfaces (when unknown), action names, values, texts (the caret, the selection:
    :mod:`.doc_text`) and missing field names for the nodes in ``todo``; and the extents of
    ``boxes`` (the nodes whose place on screen decides what is shown: :mod:`.areas`).

    Actions matter for two things: whether an unnamed leaf is a clickable thing or noise, and
    which non-default action names a line shows. ``blank_names``: the app answers GetActions
    with empty names (Chromium); there only the first action's name is read, with
    ``Action.GetName(0)``, and only where it decides noise: Chromium's names for shown
    elements are its default verbs (click, jump, press …), and ``perform`` resolves names
    when it needs them.

    Everything is read in two batches whatever the tree holds: the first asks for actions,
    text lengths, numbers, the relation sets of unnamed fields and combo boxes and, where an
    unnamed field has labels around it, the extents of both; the second reads texts (and the
    names of labels outside the subtree). See :func:`_values` and :func:`_labels` for the
    rules.
    """
    todo = list(todo)
    # 1. interfaces, where the strategy did not provide them
    await read_interfaces(conn, nodes, [i for i in todo if nodes[i].ifaces == UNKNOWN])
    # 2. actions, values, relations (and extents for the label-by-position fallback)
    calls: list[Call] = []
    slots: list[tuple[int, str]] = []
    unnamed: list[int] = []
    combos: list[int] = []
    texts = TextReads()
    for i in todo:
        n = nodes[i]
        if n.ifaces & _IF_ACTION:
            if not blank_names:
                calls.append((n.bus, n.path, I_ACTION, "GetActions", "", ()))
                slots.append((i, "actions"))
            elif not n.children and not n.name and n.role not in ALWAYS_SHOWN_ROLES:
                calls.append((n.bus, n.path, I_ACTION, "GetName", "i", (0,)))
                slots.append((i, "name0"))
        field = n.role in LABELLED_ROLES and (not _has_name(n) or _named_by_item(nodes, i))
        if field or n.role in COMBO_ROLES:
            calls.append((n.bus, n.path, I_ACCESSIBLE, "GetRelationSet", "", ()))
            slots.append((i, "relations"))
            if field:
                unnamed.append(i)
            if n.role in COMBO_ROLES:
                combos.append(i)
                # Chromium says which option a <select> shows here (posinset), also when a
                # script chose it and no option got SELECTED
                calls.append((n.bus, n.path, I_ACCESSIBLE, "GetAttributes", "", ()))
                slots.append((i, "attributes"))
        if n.role == R_PASSWORD_TEXT:
            continue  # a secure value is never read
        texts.first(i, n, calls, slots, nodes)
        text = n.role in TEXT_VALUE_ROLES and n.ifaces & _IF_TEXT
        if n.role in NUMERIC_VALUE_ROLES and n.ifaces & _IF_VALUE:
            # one property at a time: Properties.GetAll on Value crashes Chromium 156
            calls.append((n.bus, n.path, I_PROPERTIES, "Get", "ss", (I_VALUE, "CurrentValue")))
            slots.append((i, "number"))
            if text:  # spin buttons: the number is the fallback for an empty text
                calls.append((n.bus, n.path, I_PROPERTIES, "Get", "ss", (I_VALUE, "MinimumValue")))
                slots.append((i, "minimum"))
    nearby = label_candidates(nodes, unnamed)
    holders = field_places.placeholders(nodes) if unnamed else []
    placed = {j for f, labels in nearby.items() for j in (f, *labels)}
    if holders:
        placed.update(holders, unnamed)
    for k in sorted(placed):
        calls.append((nodes[k].bus, nodes[k].path, I_COMPONENT, "GetExtents", "u", (0,)))
        slots.append((k, "extents"))
    boxes = boxes or []
    res = await conn.batch(calls + areas.box_calls(nodes, boxes))
    areas.apply_boxes(nodes, boxes, res[len(calls) :])
    numbers: dict[int, float] = {}
    minimums: dict[int, float] = {}
    labelled_by: dict[int, list[tuple[str, str]]] = {}
    positions: dict[int, tuple[int, int]] = {}
    for (i, kind), r in zip(slots, res[: len(calls)], strict=True):
        if isinstance(r, AtspiCallError) or texts.took(i, kind, r):
            continue
        n = nodes[i]
        if kind == "actions":
            n.actions = action_names(r)
        elif kind == "name0":
            n.actions = (str(r[0]),)
        elif kind == "number":
            numbers[i] = _as_float(r[0].value)
            if n.role not in TEXT_VALUE_ROLES or not n.ifaces & _IF_TEXT:
                n.value = _format_number(r[0].value)
        elif kind == "minimum":
            minimums[i] = _as_float(r[0].value)
        elif kind == "attributes":
            pos = _position(r[0])
            if pos is not None:
                positions[i] = pos
        elif kind == "relations":
            targets = [
                (b or n.bus, p)
                for rel, objs in r[0]
                if rel == RELATION_LABELLED_BY
                for b, p in objs
            ]
            if targets:
                labelled_by[i] = targets
        else:
            x, y, w, h = r[0]
            n.extents = (int(x), int(y), int(w), int(h))
    # 3. texts, and names of labels that are not in the subtree read
    where = {(n.bus, n.path): j for j, n in enumerate(nodes)} if labelled_by else {}
    outside = sorted({t for ts in labelled_by.values() for t in ts if t not in where})
    name_calls: list[Call] = [
        (b, p, I_PROPERTIES, "Get", "ss", (I_ACCESSIBLE, "Name")) for b, p in outside
    ]
    text_calls = texts.second(nodes)
    res2 = await conn.batch(text_calls + name_calls) if text_calls or name_calls else []
    texts.apply(nodes, res2[: len(text_calls)])
    outside_names = {
        t: "" if isinstance(r, AtspiCallError) else _squash(str(r[0].value))
        for t, r in zip(outside, res2[len(text_calls) :], strict=True)
    }
    _values(nodes, numbers, minimums)
    _labels(nodes, unnamed, combos, labelled_by, nearby, where, outside_names, positions)
    if holders:
        field_places.name_by_place(nodes, unnamed, holders)


def _position(attributes: object) -> tuple[int, int] | None:
    """The option a Chromium ``<select>`` shows and how many it has: its ``posinset`` and
    ``setsize`` attributes (posinset 1-based); None for any other combo box (an ARIA
    combobox's posinset is its own place in a set)."""
    if not isinstance(attributes, dict) or attributes.get("tag") != "select":
        return None
    try:
        pos, size = int(str(attributes.get("posinset"))), int(str(attributes.get("setsize")))
    except ValueError:
        return None
    return (pos, size) if 1 <= pos <= size else None


def _values(nodes: list[RawNode], numbers: dict[int, float], minimums: dict[int, float]) -> None:
    """A spin button whose text is empty shows its number, unless it is a text field (an
    empty ``<input type=number>`` is empty) or the number is below the minimum (Chromium's
    unset date segment reports 0 with minimum 1). Chromium's date segments have no text."""
    for i, number in numbers.items():
        n = nodes[i]
        if n.value or n.states & _EDITABLE:
            continue
        low = minimums.get(i)
        n.value = "" if low is not None and number < low else _format_number(number)


def _labels(
    nodes: list[RawNode],
    unnamed: list[int],
    combos: list[int],
    labelled_by: dict[int, list[tuple[str, str]]],
    nearby: dict[int, list[int]],
    where: dict[tuple[str, str], int],
    outside_names: dict[tuple[str, str], str],
    positions: dict[int, tuple[int, int]],
) -> None:
    """Names for unnamed fields and values for combo boxes.

    An unnamed field takes the text of its LABELLED_BY labels; without one, the nearest
    label left of it on the same row (a label nearest to two fields goes to the closer one;
    GTK3 forms such as zenity's set no relation). A combo box with no text shows its chosen
    item (Chromium: the SELECTED option of its popup, else the option at its ``posinset``
    attribute — a script's ``selectedIndex`` leaves every option unselected in its tree but
    moves that, tests/host/test_atspi_chromium.py); a GTK3 combo box is *named* after its
    active item, so when it has a label and its name is one of its items, the label becomes
    its name and the item its value.
    """

    def label_text(target: tuple[str, str]) -> str:
        j = where.get(target)
        return _label_of(nodes, j) if j is not None else outside_names.get(target, "")

    by_relation: dict[int, str] = {}
    for i, targets in labelled_by.items():
        text = " ".join(t for t in (label_text(x) for x in targets) if t)
        if text:
            by_relation[i] = text
    # position: the closest label left of the field on its row
    best: dict[int, tuple[int, int]] = {}  # field -> (gap, label)
    for i, labels in nearby.items():
        if i in by_relation or nodes[i].extents is None:
            continue
        for j in labels:
            if not _label_of(nodes, j):
                continue
            gap = _left_gap(nodes[j].extents, nodes[i].extents)
            if gap is not None and (i not in best or gap < best[i][0]):
                best[i] = (gap, j)
    closest: dict[int, int] = {}
    for gap, j in best.values():
        closest[j] = min(gap, closest.get(j, gap))
    for i in unnamed:
        text = by_relation.get(i, "")
        if not text and i in best and best[i][0] == closest[best[i][1]]:
            text = _label_of(nodes, best[i][1])
        if text:
            if _named_by_item(nodes, i):  # its name is its chosen item: that is its value
                nodes[i].value = _squash(nodes[i].name)
            nodes[i].name = text
    for i in combos:
        n = nodes[i]
        if n.value:
            continue
        items = _items(nodes, i)
        chosen = next((nodes[j].name for j in items if nodes[j].states & _CHOSEN_MASK), "")
        at = positions.get(i)
        if not chosen and at is not None and at[1] == len(items):
            # only when the items are exactly the options it counts (in document order)
            chosen = nodes[items[at[0] - 1]].name
        if chosen:
            n.value = _squash(chosen)
        elif (
            i in by_relation
            and n.name
            and n.name != by_relation[i]
            and any(nodes[j].name == n.name for j in items)
        ):
            n.value, n.name = n.name, by_relation[i]


def _named_by_item(nodes: list[RawNode], i: int) -> bool:
    """A GTK 3 combo box named after its chosen item (its name is one of its items' names):
    its label, found as an unnamed field's is, names it, and the item is its value. Once an
    option was chosen in a zenity form the combo was named "Large", and "Size" was gone
    (trial-6)."""
    n = nodes[i]
    name = n.name.strip()
    return (
        n.role in COMBO_ROLES
        and bool(name)
        and any(nodes[j].name.strip() == name for j in _items(nodes, i))
    )


def _has_name(n: RawNode) -> bool:
    name = n.name.strip()
    return bool(name and not _TYPE_NAME.match(name)) or bool(n.desc.strip())


def _label_of(nodes: list[RawNode], j: int) -> str:
    """A label's text: its name, else its own text (LibreOffice's labels hold it in the Text
    interface only: doc_text.py), else its text children's (Chromium's ``<label>`` is an
    unnamed node holding a static text)."""
    n = nodes[j]
    if n.name.strip() and not _TYPE_NAME.match(n.name.strip()):
        return _squash(n.name)
    if n.value:
        return _squash(n.value)
    return _squash(" ".join(nodes[c].name for c in n.children if nodes[c].role in LABEL_ROLES))


def label_candidates(nodes: list[RawNode], fields: list[int]) -> dict[int, list[int]]:
    """Visible, named labels among the children of each field's parent and grandparent."""
    out: dict[int, list[int]] = {}
    for i in fields:
        found: list[int] = []
        p = nodes[i].parent
        for anc in (p, nodes[p].parent if p >= 0 else -1):
            if anc < 0:
                break
            for c in nodes[anc].children:
                m = nodes[c]
                if (
                    m.role in LABEL_ROLES
                    and _visible(m)
                    and (
                        _label_of(nodes, c) or text_kind(m) == "name"  # its text is read now
                    )
                ):
                    found.append(c)
        if found:
            out[i] = found[:32]
    return out


def _left_gap(
    label: tuple[int, int, int, int] | None, field: tuple[int, int, int, int] | None
) -> int | None:
    """Pixels between a label's right edge and the field's left edge when the label sits left
    of the field on the same row (either's vertical centre inside the other's span)."""
    if label is None or field is None:
        return None
    lx, ly, lw, lh = label
    fx, fy, fw, fh = field
    if lw <= 0 or lh <= 0 or fw <= 0 or fh <= 0:
        return None
    lc, fc = 2 * ly + lh, 2 * fy + fh  # doubled centres: integers
    if not (2 * fy <= lc <= 2 * (fy + fh) or 2 * ly <= fc <= 2 * (ly + lh)):
        return None
    gap = fx - (lx + lw)
    return gap if -4 <= gap <= LABEL_MAX_GAP else None


def _items(nodes: list[RawNode], i: int) -> list[int]:
    """A combo box's items: its named descendants up to three levels down that have no
    children (the popup menu's or list's entries), in document order (an ``<optgroup>``'s
    options between the ungrouped ones, as ``posinset`` counts them)."""
    out: list[int] = []

    def walk(children: list[int], depth: int) -> None:
        for c in children:
            if len(out) >= 500:
                return
            if nodes[c].children:
                if depth < 3:
                    walk(nodes[c].children, depth + 1)
            elif nodes[c].name:
                out.append(c)

    walk(nodes[i].children, 1)
    return out


def _squash(text: str) -> str:
    return " ".join(text.split())


async def read_interfaces(conn: Conn, nodes: list[RawNode], which: list[int]) -> None:
    """``Accessible.GetInterfaces`` — the list to trust (Chromium's introspection data
    advertises interfaces its objects do not implement)."""
    if not which:
        return
    res = await conn.batch(
        [(nodes[i].bus, nodes[i].path, I_ACCESSIBLE, "GetInterfaces", "", ()) for i in which]
    )
    for i, r in zip(which, res, strict=True):
        nodes[i].ifaces = 0 if isinstance(r, AtspiCallError) else iface_mask(r[0])


async def read_extents(conn: Conn, nodes: list[RawNode], which: list[int]) -> None:
    res = await conn.batch(
        [(nodes[i].bus, nodes[i].path, I_COMPONENT, "GetExtents", "u", (0,)) for i in which]
    )
    for i, r in zip(which, res, strict=True):
        if not isinstance(r, AtspiCallError):
            x, y, w, h = r[0]
            nodes[i].extents = (int(x), int(y), int(w), int(h))


def _as_float(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def _format_number(v: Any) -> str:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    return str(int(f)) if f.is_integer() and abs(f) < 1e15 else f"{f:g}"
