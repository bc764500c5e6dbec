"""Reading again only what events marked dirty, or saying that a full read is needed.

A patch is exact only while the tree's shape and what is read of it stay as they were, so a
dirty node whose role, child count or visibility changed, one that vanished, one whose change
moves it in or out of the nodes whose details are read, and a change that other nodes' derived
names or values depend on (a label naming a field, an item that is a combo box's value) all
refuse the patch: the caller reads in full. Otherwise the node's name, description and states
are replaced, and its details (actions, value) forgotten so the caller reads them again.

A subtree whose shape changed (children added or removed, a node shown or hidden) is read
again whole, the way the tree was read (Collection or a walk), and spliced in, unless the tree
has a field named by the labels around it or a combo box near the change (their derived names
and values depend on nodes outside what is read again).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Final

from deskpilot.host.atspi import collect, on_screen
from deskpilot.host.atspi.bus import (
    I_ACCESSIBLE,
    I_PROPERTIES,
    AtspiCallError,
    Call,
    Conn,
)
from deskpilot.host.atspi.collect import RawNode
from deskpilot.host.atspi.tree_cache import Dirt
from deskpilot.host.atspi.vocab import (
    COMBO_ROLES,
    DOCUMENT_ROLES,
    LABEL_ROLES,
    LABELLED_ROLES,
    ROLE_NUMBER,
    State,
    bit,
    state_mask,
)

_VISIBLE_MASK: Final = bit(State.VISIBLE) | bit(State.SHOWING)
_B_FOCUSED: Final = bit(State.FOCUSED)
#: most nodes whose states are checked before a hit (root, documents, focused nodes)
_MAX_PROBES: Final = 16
#: a browser window's tabs whose names a hit checks (:func:`_same_tab_names`)
_MAX_TABS: Final = 32
_R_PAGE_TAB: Final = ROLE_NUMBER["page tab"]
#: a Collection rule matching the nodes with FOCUSED (states as two 32-bit words, ALL)
_FOCUSED_RULE: Final[tuple[Any, ...]] = (
    [_B_FOCUSED & 0xFFFFFFFF, _B_FOCUSED >> 32],
    1,
    {},
    1,
    [0, 0, 0, 0],
    1,
    [],
    1,
    False,
)
#: how far up a combo box's items sit below it (``collect._items``)
_COMBO_DEPTH: Final = 3


async def reread(
    conn: Conn,
    nodes: list[RawNode],
    dirty: tuple[int, ...],
    candidates: frozenset[int],
    derived: bool,
) -> list[int] | None:
    """Read the ``dirty`` nodes' own properties again and put them in place; the ones whose
    details must be read again (dirty detail candidates). None: the patch would not be exact
    (nothing was changed then)."""
    if _depends_on_others(nodes, dirty, derived):
        return None
    calls: list[Call] = []
    for i in dirty:
        n = nodes[i]
        calls.append((n.bus, n.path, I_PROPERTIES, "GetAll", "s", (I_ACCESSIBLE,)))
        calls.append((n.bus, n.path, I_ACCESSIBLE, "GetState", "", ()))
        calls.append((n.bus, n.path, I_ACCESSIBLE, "GetRole", "", ()))
    res = await conn.batch(calls)
    fresh: list[tuple[int, str, str, int, int, int]] = []
    for k, i in enumerate(dirty):
        props, st, role = res[3 * k], res[3 * k + 1], res[3 * k + 2]
        if any(isinstance(r, AtspiCallError) for r in (props, st, role)):
            return None
        n = nodes[i]
        d = props[0]
        count = int(d["ChildCount"].value) if "ChildCount" in d else 0
        states = state_mask(st[0])
        unread = n.role == collect.UNREAD_ROLE  # a walk left it hidden, states only
        if not unread and (int(role[0]) != n.role or count != n.child_count):
            return None
        if (states ^ n.states) & _VISIBLE_MASK:
            return None
        if _parent_path(d) != (nodes[n.parent].path if n.parent >= 0 else _parent_path(d)):
            return None  # moved (GTK 3 may say only "showing" of a widget moved)
        name = str(d["Name"].value) if "Name" in d else ""
        desc = str(d["Description"].value) if "Description" in d else ""
        if derived and (name != n.name or desc != n.desc):
            return None  # a derived name elsewhere may have been this text
        probe = RawNode(n.bus, n.path, role=n.role, name=name)
        probe.children = n.children
        if collect.needs_detail(probe, i == 0, nodes) != (i in candidates):
            return None
        fresh.append((i, name, desc, states, int(role[0]), count))
    for i, name, desc, states, role_now, count in fresh:
        n = nodes[i]
        n.name, n.desc, n.states = name, desc, states
        n.role, n.child_count = role_now, count
        n.actions = None
        n.value = None
    return [i for i in dirty if i in candidates]


def _depends_on_others(nodes: list[RawNode], dirty: tuple[int, ...], derived: bool) -> bool:
    """A dirty node that other nodes' shown text may come from: a label (or a label's text)
    while some name was derived from labels, or an item under a combo box."""
    for i in dirty:
        n = nodes[i]
        if derived and (
            n.role in LABEL_ROLES or (n.parent >= 0 and nodes[n.parent].role in LABEL_ROLES)
        ):
            return True
        if n.parent >= 0 and _combo_at_or_above(nodes, n.parent, _COMBO_DEPTH - 1):
            return True
    return False


async def reread_subtrees(
    conn: Conn,
    nodes: list[RawNode],
    roots: tuple[int, ...],
    strategy: str,
    limit: int,
    max_children: int,
) -> tuple[list[RawNode], set[int], set[str]] | None:
    """The tree with the subtrees under ``roots`` read again, the way the whole tree was
    (``strategy``: Collection or a walk; an app read from its cache is read in full, one
    call anyway), and spliced in. Returns the new preorder list, the indexes in it of the
    nodes read again, and the paths of the nodes they replace; None when a splice would
    not be what a full read gives (the root's subtree, a hidden root in a walk, which skips
    hidden subtrees, the read limit reached, a node gone, a node no longer under a root it
    was under — a GTK 3 widget moved to another box sends children-changed for the box it
    left only —, a root whose parent lists its children in another order now, one now under
    a root and also still kept elsewhere). Nothing is changed
    before the reads are all back."""
    if strategy not in ("collection", "walk"):
        return None
    ranges: list[tuple[int, int]] = []
    for r in sorted(roots):
        if r == 0:
            return None
        if ranges and r < ranges[-1][1]:
            continue  # inside a subtree already read again
        end, depth = r + 1, nodes[r].depth
        while end < len(nodes) and nodes[end].depth > depth:
            end += 1
        ranges.append((r, end))
    try:
        subs = await asyncio.gather(
            *(
                _read_subtree(conn, nodes[r], strategy, limit, max_children, _above(nodes, r))
                for r, _ in ranges
            )
        )
    except AtspiCallError:
        return None  # (gone: a node removed under an ancestor's event; the full read says)
    if any(not sub for sub in subs):
        return None
    # a root moved to another parent (GTK 3 may say only "showing" of a moved widget)
    parents = await conn.batch(
        [
            (nodes[r].bus, nodes[r].path, I_PROPERTIES, "Get", "ss", (I_ACCESSIBLE, "Parent"))
            for r, _ in ranges
        ]
    )
    for (r, _), got in zip(ranges, parents, strict=True):
        if isinstance(got, AtspiCallError) or got[0].value[1] != nodes[nodes[r].parent].path:
            return None
    if not await _same_sibling_order(conn, nodes, {nodes[r].parent for r, _ in ranges}):
        return None
    if strategy == "walk" and any(not sub[0].states & _VISIBLE_MASK for sub in subs):
        return None
    if len(nodes) + sum(len(s) - (e - r) for s, (r, e) in zip(subs, ranges, strict=True)) >= limit:
        return None
    out: list[RawNode] = []
    parent_of: list[RawNode | None] = []
    fresh: set[int] = set()
    old_paths: set[str] = set()

    def keep(k: int) -> None:
        n = nodes[k]
        out.append(n)
        parent_of.append(nodes[n.parent] if n.parent >= 0 else None)

    # what is on screen of a virtual container is read anew each time: its objects are not
    # kept ones that moved (a Calc cell is a new object for every question)
    screened = on_screen.under_virtual(nodes)
    pos = 0
    for (r, end), sub in zip(ranges, subs, strict=True):
        for k in range(pos, r):
            keep(k)
        old = nodes[r]
        old_paths.update(nodes[k].path for k in range(r, end) if not screened[k])
        links = [sub[n.parent] if n.parent >= 0 else nodes[old.parent] for n in sub]
        sub[0].index = old.index
        for n, p in zip(sub, links, strict=True):
            n.depth += old.depth
            fresh.add(len(out))
            out.append(n)
            parent_of.append(p)
        pos = end
    for k in range(pos, len(nodes)):
        keep(k)
    fresh_screened = on_screen.under_virtual(out)
    new_paths = {out[i].path for i in fresh if not fresh_screened[i]}
    if old_paths - new_paths:
        return None  # a node left a subtree: moved? GTK 3 says so only where it left
    if len(new_paths) < sum(1 for i in fresh if not fresh_screened[i]) or any(
        out[i].path in new_paths for i in range(len(out)) if i not in fresh
    ):
        return None  # a node moved in from a part not read again (Chromium: no event there)
    where = {id(n): i for i, n in enumerate(out)}
    for n in out:
        n.children = []
    for i, (n, up) in enumerate(zip(out, parent_of, strict=True)):
        n.parent = where[id(up)] if up is not None else -1
        if up is not None:
            out[n.parent].children.append(i)
    return out, fresh, old_paths


async def _same_sibling_order(conn: Conn, nodes: list[RawNode], parents: set[int]) -> bool:
    """Whether each of ``parents`` still lists its kept children in the kept order (one
    ``GetChildren`` each). A GTK 3 widget moved to the other box and back within one change
    ends last in its box with only "showing" said of it: its parent is the same, its place
    is not (the randomized test, seed 463791432)."""
    todo = sorted(p for p in parents if p >= 0 and not collect.virtual(nodes[p]))
    if not todo:
        return True
    res = await conn.batch(
        [(nodes[p].bus, nodes[p].path, I_ACCESSIBLE, "GetChildren", "", ()) for p in todo]
    )
    for p, got in zip(todo, res, strict=True):
        if isinstance(got, AtspiCallError):
            return False
        kept = [nodes[c].path for c in nodes[p].children]
        known = set(kept)
        now = [str(path) for _b, path in got[0] if str(path) in known]
        if now != [path for path in kept if path in set(now)]:
            return False
    return True


async def _read_subtree(
    conn: Conn,
    root: RawNode,
    strategy: str,
    limit: int,
    max_children: int,
    around: list[RawNode],
) -> list[RawNode]:
    """The subtree under ``root`` read again as the tree was, with what is on screen of its
    virtual containers (``around``: its kept ancestors, nearest first)."""
    if strategy == "collection":
        sub = await collect.read_collection(conn, root.bus, root.path, limit)
    else:
        sub = await collect.read_walk(conn, root.bus, root.path, limit, max_children)
    if not sub:
        return sub
    return await on_screen.read_on_screen(conn, sub, around=around)


def _above(nodes: list[RawNode], i: int) -> list[RawNode]:
    """The kept ancestors of node ``i``, nearest first."""
    out: list[RawNode] = []
    p = nodes[i].parent
    while p >= 0:
        out.append(nodes[p])
        p = nodes[p].parent
    return out


def has_unnamed_fields(nodes: list[RawNode]) -> bool:
    """Whether some field takes its name from labels around it (``collect._labels``): a
    changed shape near it could change that name, so shapes are then read in full."""
    return any(unnamed_field(n) for n in nodes)


def unnamed_field(n: RawNode) -> bool:
    """A field with no name of its own (one the labels around it may name)."""
    return n.role in LABELLED_ROLES and not collect._has_name(n)


def near_combo(nodes: list[RawNode], i: int) -> bool:
    """Whether node ``i`` is a combo box or one of its items (its value comes from them)."""
    return _combo_at_or_above(nodes, i, _COMBO_DEPTH)


def _combo_at_or_above(nodes: list[RawNode], i: int, up: int) -> bool:
    """Whether node ``i`` or one of its ``up`` nearest ancestors is a combo box."""
    p = i
    for _ in range(up + 1):
        if p < 0:
            return False
        if nodes[p].role in COMBO_ROLES:
            return True
        p = nodes[p].parent
    return False


async def patch_nodes(
    conn: Conn,
    nodes: list[RawNode],
    dirt: Dirt,
    *,
    candidates: frozenset[int],
    derived: bool,
    strategy: str,
    limit: int,
    max_children: int,
    cap: int,
    detail_candidates: Callable[[list[RawNode], int], list[int]],
    shapes: bool,
) -> tuple[list[RawNode], list[int], frozenset[int]] | None:
    """The kept tree with what ``dirt`` says changed read again: changed subtrees re-read and
    spliced in, then changed nodes' own properties. Returns the nodes, those whose details
    must be read (dirty detail candidates and the new subtrees' ones) and the new detail
    candidates (``detail_candidates(nodes, cap)``, snapshot.py's rule); None when the patch
    would not be exact — the kept nodes may then have been changed: drop them.

    ``shapes``: whether the app's shape events can be trusted to name every parent whose
    children changed. Chromium's cannot: the randomized test saw a node vanish from one
    container with only a children-changed of another container in the same step, so its
    shape changes are read in full."""
    fresh: set[int] = set()
    old_paths: set[str] = set()
    out = nodes
    if dirt.subtrees or dirt.loose:
        # what is on screen of a virtual container (cells, items) names no field and is no
        # combo's item: reading it again changes no name or value derived elsewhere
        only_screens = not dirt.loose and all(collect.virtual(nodes[r]) for r in dirt.subtrees)
        if not shapes or (not only_screens and (derived or has_unnamed_fields(nodes))):
            return None
        if any(near_combo(nodes, r) for r in dirt.subtrees):
            return None
        spliced = await reread_subtrees(conn, nodes, dirt.subtrees, strategy, limit, max_children)
        if spliced is None:
            return None
        out, fresh, old_paths = spliced
        added = [out[i] for i in fresh]
        if has_unnamed_fields(added) or any(n.role in COMBO_ROLES for n in added):
            return None
    if dirt.loose:
        new_paths = {out[i].path for i in fresh}
        if any(p not in new_paths and p not in old_paths for p in dirt.loose):
            return None  # a change of a node that no re-read subtree holds
    if out is nodes:
        own, cand = dirt.nodes, candidates
    else:
        where = {id(n): i for i, n in enumerate(out)}
        own = tuple(sorted(where[id(nodes[i])] for i in dirt.nodes if id(nodes[i]) in where))
        cand = frozenset(where[id(nodes[i])] for i in candidates if id(nodes[i]) in where)
    todo = await reread(conn, out, own, cand, derived)
    if todo is None:
        return None
    if out is nodes:
        return out, todo, candidates
    cands = detail_candidates(out, cap)
    if len(cands) >= cap or set(cands) - fresh != set(cand):
        return None  # the nodes whose details are read changed outside the new subtrees
    return out, sorted(set(todo) | (set(cands) & fresh)), frozenset(cands)


async def same_shape(conn: Conn, nodes: list[RawNode], limit: int) -> bool:
    """Whether the app's tree under the kept root still has exactly the kept nodes, in the
    same order: one ``Collection.GetMatches`` (the first call of a Collection read, a
    fraction of its cost). For Chromium, whose tree the randomized test saw change without
    any event (a check box added to a container in the same task as other changes). Its
    tabs' names are asked for beside it (:func:`_same_tab_names`)."""
    root = nodes[0]
    names = asyncio.ensure_future(_same_tab_names(conn, nodes))
    try:
        found = await collect.get_matches(
            conn, root.bus, root.path, collect._MATCH_ALL_RULE, limit - 1
        )
    except AtspiCallError:
        names.cancel()
        return False
    paths = [p for _b, p in found]
    shape = len(paths) == len(nodes) - 1 and all(
        p == n.path for p, n in zip(paths, nodes[1:], strict=True)
    )
    return await names and shape


async def _same_tab_names(conn: Conn, nodes: list[RawNode]) -> bool:
    """Whether the kept tabs (at most ``_MAX_TABS``) still have their kept names. Chromium
    renames a tab with no event: while the pointer rests on the tab strip its name carries
    the page's memory use ("Mutating page - Memory usage - 31.2 MB"), which changes by
    itself (the randomized test served a stale figure)."""
    tabs = [n for n in nodes if n.role == _R_PAGE_TAB][:_MAX_TABS]
    if not tabs:
        return True
    res = await conn.batch(
        [(n.bus, n.path, I_PROPERTIES, "Get", "ss", (I_ACCESSIBLE, "Name")) for n in tabs]
    )
    return all(
        not isinstance(r, AtspiCallError) and str(r[0].value) == n.name
        for r, n in zip(res, tabs, strict=True)
    )


async def focus_moved(
    conn: Conn, nodes: list[RawNode], index: dict[str, int], collection: bool
) -> tuple[int, ...] | None:
    """The kept nodes whose FOCUSED (or other) states are not what was kept, among the root,
    the documents, the focused ones and — in an app with Collection — the ones focused now;
    None when a node focused now is not kept (a full read). Focus follows the X input focus
    with no event at all: Chromium's document lost FOCUSED when another window took the
    keyboard, and a button pressed while the window had no keyboard gained it, and nothing
    was sent.

    The probes' states come from one batch of ``GetState`` calls. The nodes focused now come
    from a ``GetMatches`` for FOCUSED — a walk asking every node's states, ~4 ms on
    Chromium's 1,733 nodes — which goes out beside that batch, unless exactly one probe was
    focused: an app has one focused object, so while that one keeps its kept states no other
    node can have gained FOCUSED, and the query is asked only when it did not."""
    probe = sorted(
        i
        for i, n in enumerate(nodes)
        if i == 0 or n.states & _B_FOCUSED or n.role in DOCUMENT_ROLES
    )[:_MAX_PROBES]
    states = conn.batch(
        [(nodes[i].bus, nodes[i].path, I_ACCESSIBLE, "GetState", "", ()) for i in probe]
    )
    kept_focus = [i for i in probe if nodes[i].states & _B_FOCUSED]
    if not collection or len(kept_focus) != 1:
        focused = asyncio.ensure_future(_focused_now(conn, nodes, index, collection))
        changed = _changed_states(nodes, probe, await states)
        now = await focused
    else:
        changed = _changed_states(nodes, probe, await states)
        if kept_focus[0] not in changed:
            return changed
        now = await _focused_now(conn, nodes, index, collection)
    if now is None:
        return None
    more = sorted(set(now) - set(probe))
    if more:
        res = await conn.batch(
            [(nodes[i].bus, nodes[i].path, I_ACCESSIBLE, "GetState", "", ()) for i in more]
        )
        changed += _changed_states(nodes, more, res)
    return tuple(sorted(changed))


async def _focused_now(
    conn: Conn, nodes: list[RawNode], index: dict[str, int], collection: bool
) -> list[int] | None:
    """The kept nodes with FOCUSED now (``GetMatches``; none asked without Collection);
    None when one of them is not kept, or the query failed."""
    if not collection:
        return []
    root = nodes[0]
    try:
        matches = await collect.get_matches(conn, root.bus, root.path, _FOCUSED_RULE, _MAX_PROBES)
    except AtspiCallError:
        return None
    found: list[int] = []
    for _b, p in matches:
        i = index.get(p)
        if i is None:
            return None
        found.append(i)
    return found


def _changed_states(nodes: list[RawNode], which: list[int], res: list[Any]) -> tuple[int, ...]:
    """The nodes among ``which`` whose ``GetState`` answer differs from the kept states."""
    return tuple(
        i
        for i, r in zip(which, res, strict=True)
        if isinstance(r, AtspiCallError) or state_mask(r[0]) != nodes[i].states
    )


def _parent_path(props: dict[str, Any]) -> str:
    """The object path of ``Accessible.Parent`` in a ``Properties.GetAll`` answer."""
    parent = props.get("Parent")
    return str(parent.value[1]) if parent is not None else ""
