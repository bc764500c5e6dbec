"""Reading an accessible subtree fast: three strategies, chosen per application.

Per node the tree needs role, name, states and structure; kept nodes also need action names,
a value and interfaces. One D-Bus call per property per node, one after another (what a naive
walker does), costs ~8 round trips per node. What we do instead:

``cache``      ``org.a11y.atspi.Cache.GetItems`` returns path, parent, index, child count,
               interfaces, name, role, description and states of every object the app has
               exported, in one call. GTK4 implements it; atk-bridge (GTK3, Chromium) only
               once some client registered for events (the client does, at connect). GTK4
               exports objects lazily, atk-bridge leaves out MANAGES_DESCENDANTS children:
               subtrees the cache misses are walked and grafted in (the walk exports them,
               so the next snapshot is served from the cache alone).
``collection`` ``Collection.GetMatches`` with a match-everything rule returns the whole subtree
               in preorder in one call (atk-bridge: GTK3, Chromium, Java). Then name/parent/
               child count (one ``Properties.GetAll``), role and states per node, issued all
               at once over the app's peer-to-peer socket, marshalled by :mod:`.wire`.
               ``Collection.GetTree`` would be one call, but it crashed Chromium 156 here:
               never used.
``walk``       breadth-first, one level at a time, everything per node concurrently. The
               fallback for apps with neither.

All strategies return the same :class:`RawNode` list in preorder (root first) with parent
links; :mod:`.render` decides what to show.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from deskpilot.host.atspi.bus import (
    CACHE_PATH,
    I_ACCESSIBLE,
    I_ACTION,
    I_CACHE,
    I_COLLECTION,
    I_COMPONENT,
    I_PROPERTIES,
    I_TEXT,
    I_VALUE,
    AtspiCallError,
    Call,
    Conn,
)
from deskpilot.host.atspi.vocab import (
    ALWAYS_SHOWN_ROLES,
    NUMERIC_VALUE_ROLES,
    R_PASSWORD_TEXT,
    TEXT_VALUE_ROLES,
    Iface,
    State,
    bit,
    iface_mask,
    state_mask,
)

VALUE_MAX_CHARS: Final = 200  # a value longer than this is cut (with an ellipsis)
MAX_ACTIONS: Final = 20
UNKNOWN: Final = -1

_IF_ACTION: Final = int(Iface.ACTION)
_IF_TEXT: Final = int(Iface.TEXT)
_IF_VALUE: Final = int(Iface.VALUE)
_VISIBLE_MASK: Final = bit(State.VISIBLE) | bit(State.SHOWING)
_MATCH_ALL_RULE: Final[tuple[Any, ...]] = ([0, 0], 1, {}, 1, [0, 0, 0, 0], 1, [], 1, False)
_RULE_SIG: Final = "(aiia{ss}iaiiasib)"
_SORT_CANONICAL: Final = 1


class RawNode:
    """One accessible object as read from the bus (before any filtering)."""

    __slots__ = (
        "actions",
        "bus",
        "child_count",
        "children",
        "depth",
        "desc",
        "extents",
        "ifaces",
        "index",
        "name",
        "parent",
        "path",
        "role",
        "states",
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

    def __repr__(self) -> str:  # debugging aid only
        return f"RawNode({self.role}, {self.name!r}, depth={self.depth})"


def _visible(n: RawNode) -> bool:
    return bool(n.states & _VISIBLE_MASK)


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


def from_cache(items: list[Any], root_path: str, limit: int) -> tuple[list[RawNode], list[int]]:
    """Build the subtree under ``root_path`` from Cache items.

    Returns the preorder nodes and the indices of visible nodes whose cached children are
    fewer than their child count (GTK4 exports lazily; atk-bridge never caches the children
    of MANAGES_DESCENDANTS nodes such as big tree views). Empty nodes: root not cached.
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
        # a child count of -1: MANAGES_DESCENDANTS (atk-bridge never caches those children)
        if (len(children) < node.child_count or node.child_count < 0) and (
            me == 0 or _visible(node)
        ):
            incomplete.append(me)
            continue
        children.sort()
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


async def read_collection(conn: Conn, bus: str, root_path: str, limit: int) -> list[RawNode]:
    """Preorder refs from one GetMatches, then name/parent/child count, states and role of
    every node, all issued at once. (Roles by eight bit-slice GetMatches — the nodes whose
    role number has bit k set — were tried: no faster than GetRole per node once calls are
    cheap on our side, since Chromium walks its whole tree for each GetMatches.)"""
    body = await conn.call(
        bus,
        root_path,
        I_COLLECTION,
        "GetMatches",
        _RULE_SIG + "uib",
        (list(_MATCH_ALL_RULE), _SORT_CANONICAL, max(0, limit - 1), True),
    )
    refs: list[tuple[str, str]] = [(bus, root_path)]
    refs.extend((b or bus, p) for b, p in body[0])
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
    return nodes


async def read_walk(
    conn: Conn, bus: str, root_path: str, limit: int, max_children: int
) -> list[RawNode]:
    """Breadth-first, a level at a time; each level's calls are issued together."""
    flat: list[RawNode] = []
    level: list[tuple[str, str, int, int, int]] = [(bus, root_path, -1, 0, -1)]
    while level and len(flat) < limit:
        level = level[: limit - len(flat)]
        calls: list[Call] = []
        for b, p, _par, _d, _i in level:
            calls.append((b, p, I_PROPERTIES, "GetAll", "s", (I_ACCESSIBLE,)))
            calls.append((b, p, I_ACCESSIBLE, "GetRole", "", ()))
            calls.append((b, p, I_ACCESSIBLE, "GetState", "", ()))
            calls.append((b, p, I_ACCESSIBLE, "GetChildren", "", ()))
        res = await conn.batch(calls)
        nxt: list[tuple[str, str, int, int, int]] = []
        for i, (b, p, parent, depth, idx) in enumerate(level):
            props, role, st, ch = res[4 * i : 4 * i + 4]
            if isinstance(props, AtspiCallError):
                if parent < 0:
                    raise props
                continue
            d = props[0]
            node = RawNode(
                b,
                p,
                parent=parent,
                depth=depth,
                role=int(role[0]) if not isinstance(role, AtspiCallError) else 0,
                name=str(d["Name"].value) if "Name" in d else "",
                desc=str(d["Description"].value) if "Description" in d else "",
                states=state_mask(st[0]) if not isinstance(st, AtspiCallError) else 0,
                child_count=int(d["ChildCount"].value) if "ChildCount" in d else 0,
                index=idx,
            )
            me = len(flat)
            flat.append(node)
            if isinstance(ch, AtspiCallError) or (parent >= 0 and not _visible(node)):
                continue  # hidden subtrees are never shown: do not read them
            for j, (cb, cp) in enumerate(ch[0][:max_children]):
                nxt.append((cb or b, cp, me, depth + 1, j))
        level = nxt
    return _preorder(flat)


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


def needs_detail(n: RawNode, is_root: bool) -> bool:
    """Whether rendering could need this node's actions or value (cheap pre-filter)."""
    if is_root:
        return False
    return (
        n.role in ALWAYS_SHOWN_ROLES
        or n.role in NUMERIC_VALUE_ROLES
        or (not n.children and not n.name)
    )


async def enrich(conn: Conn, nodes: list[RawNode], todo: Iterable[int], blank_names: bool) -> None:
    """Fill interfaces (when unknown), action names and values for the nodes in ``todo``.

    Actions matter for two things: whether an unnamed leaf is a clickable thing or noise, and
    which non-default action names a line shows. ``blank_names``: the app answers GetActions
    with empty names (Chromium); there only the first action's name is read, with
    ``Action.GetName(0)``, and only where it decides noise: Chromium's names for shown
    elements are its default verbs (click, jump, press …), and ``perform`` resolves names
    when it needs them.
    """
    todo = list(todo)
    # 1. interfaces, where the strategy did not provide them
    await read_interfaces(conn, nodes, [i for i in todo if nodes[i].ifaces == UNKNOWN])
    # 2. actions and values
    calls: list[Call] = []
    slots: list[tuple[int, str]] = []
    for i in todo:
        n = nodes[i]
        if n.ifaces & _IF_ACTION:
            if not blank_names:
                calls.append((n.bus, n.path, I_ACTION, "GetActions", "", ()))
                slots.append((i, "actions"))
            elif not n.children and not n.name and n.role not in ALWAYS_SHOWN_ROLES:
                calls.append((n.bus, n.path, I_ACTION, "GetName", "i", (0,)))
                slots.append((i, "name0"))
        if n.role == R_PASSWORD_TEXT:
            continue  # a secure value is never read
        if n.role in TEXT_VALUE_ROLES and n.ifaces & _IF_TEXT:
            calls.append((n.bus, n.path, I_PROPERTIES, "Get", "ss", (I_TEXT, "CharacterCount")))
            slots.append((i, "count"))
        elif n.role in NUMERIC_VALUE_ROLES and n.ifaces & _IF_VALUE:
            calls.append((n.bus, n.path, I_PROPERTIES, "Get", "ss", (I_VALUE, "CurrentValue")))
            slots.append((i, "number"))
    res = await conn.batch(calls)
    text_calls: list[Call] = []
    text_slots: list[tuple[int, int]] = []
    for (i, kind), r in zip(slots, res, strict=True):
        if isinstance(r, AtspiCallError):
            continue
        n = nodes[i]
        if kind == "actions":
            n.actions = tuple(str(a[0]) for a in r[0][:MAX_ACTIONS])
        elif kind == "name0":
            n.actions = (str(r[0]),)
        elif kind == "count":
            count = int(r[0].value)
            if count > 0:
                end = min(count, VALUE_MAX_CHARS + 1)
                text_calls.append((n.bus, n.path, I_TEXT, "GetText", "ii", (0, end)))
                text_slots.append((i, count))
            else:
                n.value = ""
        else:
            n.value = _format_number(r[0].value)
    if text_calls:
        res2 = await conn.batch(text_calls)
        for (i, count), r in zip(text_slots, res2, strict=True):
            if not isinstance(r, AtspiCallError):
                nodes[i].value = _bounded(str(r[0]), count)


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


def _bounded(text: str, total: int) -> str:
    text = text.replace("\ufffc", "")
    if total > VALUE_MAX_CHARS or len(text) > VALUE_MAX_CHARS:
        return text[:VALUE_MAX_CHARS] + "…"
    return text


def _format_number(v: Any) -> str:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    return str(int(f)) if f.is_integer() and abs(f) < 1e15 else f"{f:g}"
