"""What is on screen of a virtual container: a sheet's visible cells, a long list's visible items.

A container that manages its descendants, or reports more children than a bound
(:func:`.collect.virtual`), is never asked for its children: LibreOffice Calc's sheet says it
has 2,147,483,647 cells and builds an object for every one it is asked for (4 GB and a
pinned CPU within a minute). What a person sees of it is what the tree shows instead:

* where it is visible: its extents cut by the window's and the scroll panes' around it;
* which rows and columns that is: the objects at its inner corners
  (``Component.GetAccessibleAtPoint``, a few pixels in), their index in the container and,
  for a table, their row and column (``Table.GetRowAtIndex`` / ``GetColumnAtIndex``). When
  the top corners hit no cell (a GTK tree view answers nothing at its column headers),
  points down the left edge are tried; a bottom or right corner that hits nothing means the
  content ends before it (the last row or column is the table's last);
* each cell of those rows and columns (``Table.GetAccessibleAt``) with its states and text:
  a *sheet*'s cells (named by their address, Calc's) are not asked their names, and the
  filled ones' formulas come from their ``Formula`` attribute; other tables' cells are read
  with their names, and a cell made of cells (an icon and a text in one column) is named by
  its parts. Column headers that are objects of their own are listed first. A list's items
  (``GetChildAtIndex``) are each read with their subtree;
* a summary for the line the render shows under the container (:attr:`RawNode.screen`):
  the rows and columns on screen out of how many, the current cell and the selection, and
  how many empty cells were left out.

Empty cells are left out, except the current (focused) one and the ones directly below or
right of a filled cell (where a person types next): a 30×15 visible area of a sheet with a
small table in a corner is a few dozen lines, not 450. Every line left is an element: a cell
is clicked, typed into or read by its id. A cell that names itself by its address (``B3``,
Calc) carries that address (:attr:`RawNode.address`); when it is also TRANSIENT (Calc makes
a new object for each question, and drops it 15 s later) its element's identity is the
table and the address (``snapshot._elements``), and an action on it finds the cell again
by address (:mod:`.cells`).

All calls go out in a few batches whatever the number of cells (three per visible cell):
~80 ms for Calc's 28×13 visible cells over its direct socket. A container not read by the
read's deadline is marked unread, and the rest of the window stands.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from deskpilot.host.atspi import collect, stale_cells
from deskpilot.host.atspi.bus import (
    I_ACCESSIBLE,
    I_ACTION,
    I_COMPONENT,
    I_PROPERTIES,
    I_TABLE,
    I_TEXT,
    NULL_PATH,
    AtspiCallError,
    Call,
    Conn,
)
from deskpilot.host.atspi.cells import toggles
from deskpilot.host.atspi.collect import RawNode
from deskpilot.host.atspi.doc_text import VALUE_MAX_CHARS
from deskpilot.host.atspi.vocab import ROLE_NUMBER, Iface, State, bit, iface_mask, state_mask

#: most cells (or items) read of one container; a bigger visible area is cut by rows
MAX_ON_SCREEN: Final = 1500
#: how far inside a container's visible corners its objects are looked for (px)
PROBE_INSET: Final = 2
#: a container without Table with at most this many children has them all read
ALL_ITEMS: Final = 200
#: the parts of a cell made of cells read for its name
_MAX_PARTS: Final = 8
#: points down a table's left edge looked at when its top corners hit no cell
_SCAN_POINTS: Final = 48
#: how far up from an object at a point its container is looked for (a list item's label)
_UP_LEVELS: Final = 3

R_TABLE_CELL: Final = ROLE_NUMBER["table cell"]
#: ancestors whose extents clip what is visible of what they hold
_CLIPPING_ROLES: Final = frozenset(
    ROLE_NUMBER[r] for r in ("scroll pane", "viewport", "frame", "window", "dialog")
)
_B_FOCUSED: Final = bit(State.FOCUSED)
_B_SELECTED: Final = bit(State.SELECTED)
_B_TRANSIENT: Final = bit(State.TRANSIENT)
#: states that make an empty cell worth a line (a ticked check box cell, a tree's expander;
#: an unticked one is known by its action: :func:`.cells.toggles`)
_B_MEANINGFUL: Final = bit(State.CHECKED) | bit(State.EXPANDABLE) | bit(State.INDETERMINATE)
_ADDRESS: Final = re.compile(r"[A-Z]{1,3}[1-9][0-9]*")
_NULL_PATHS: Final = frozenset({NULL_PATH, "/"})

Box = tuple[int, int, int, int]  # x, y, width, height (screen)


@dataclass(frozen=True, slots=True)
class Span:
    """The rows or columns on screen: ``first``…``last`` (0-based) of ``total``."""

    first: int
    last: int
    total: int

    def __len__(self) -> int:
        return max(0, self.last - self.first + 1)


async def read_on_screen(
    conn: Conn,
    nodes: list[RawNode],
    *,
    around: Sequence[RawNode] = (),
    max_items: int = MAX_ON_SCREEN,
    deadline: float | None = None,
) -> list[RawNode]:
    """``nodes`` (preorder) with what is on screen of each shown virtual container grafted
    in as its children, and its summary set; ``nodes`` itself when there is none. A
    container that fails to answer keeps no children and says so in its summary.
    ``around``: the ancestors of ``nodes[0]`` when it is not the window's root (a subtree
    read again), whose extents clip what is visible too. ``deadline`` (``loop.time()``): a
    container not read by then keeps no children and is marked unread (``RawNode.unread``:
    the rest of the window stands, the tree is partial)."""
    which = _shown_virtual(nodes, root_too=bool(around))
    if not which:
        return nodes
    outer = [a for a in around if a.role in _CLIPPING_ROLES or a is around[-1]]
    subs = await asyncio.gather(
        *(_bounded(_container(conn, nodes, i, outer, max_items), nodes[i], deadline) for i in which)
    )
    return collect.graft(nodes, dict(zip(which, subs, strict=True)))


async def _bounded(
    read: Awaitable[list[RawNode]], container: RawNode, deadline: float | None
) -> list[RawNode]:
    """The container's read, or the container alone marked unread at the deadline."""
    try:
        return await collect.until(read, deadline)
    except TimeoutError:
        container.children = []
        container.unread = 1
        container.screen = "what is on screen of it was not read by the deadline"
        return [container]


def under_virtual(nodes: list[RawNode]) -> list[bool]:
    """For each node (preorder), whether it lies below a virtual container: what is on
    screen of it, read anew each time (a Calc cell is a new object each time)."""
    below = [False] * len(nodes)
    for i, n in enumerate(nodes):
        p = n.parent
        if p >= 0 and (below[p] or collect.virtual(nodes[p])):
            below[i] = True
    return below


def _shown_virtual(nodes: list[RawNode], root_too: bool) -> list[int]:
    if not any(collect.virtual(n) for n in nodes):
        return []  # most windows: no hidden flags to work out
    hidden = [False] * len(nodes)
    out: list[int] = []
    for i, n in enumerate(nodes):
        p = n.parent
        if p >= 0 and (hidden[p] or collect.is_hidden(n, nodes[p])):
            hidden[i] = True
            continue
        if (i > 0 or root_too) and collect.virtual(n):
            out.append(i)
    return out


async def _container(
    conn: Conn, nodes: list[RawNode], i: int, outer: list[RawNode], max_items: int
) -> list[RawNode]:
    """The container followed by its on-screen items, in preorder (the container's summary,
    interfaces and extents are set on it)."""
    top = nodes[i]
    try:
        items = await _read(conn, nodes, top, i, outer, max_items)
    except AtspiCallError as exc:
        if exc.gone:
            raise
        top.screen = "what is on screen of it could not be read"
        items = []
    out = [top, *items]
    top.children = []
    for node in items:
        node.children = []
    for k, node in enumerate(items, 1):
        node.parent = max(node.parent, 0)
        out[node.parent].children.append(k)
    return out


async def _read(
    conn: Conn,
    nodes: list[RawNode],
    top: RawNode,
    i: int,
    outer: list[RawNode],
    max_items: int,
) -> list[RawNode]:
    clips = [nodes[k] for k in _ancestors(nodes, i) if k == 0 or nodes[k].role in _CLIPPING_ROLES]
    clips += outer
    calls: list[Call] = [
        (top.bus, top.path, I_ACCESSIBLE, "GetInterfaces", "", ()),
        (top.bus, top.path, I_COMPONENT, "GetExtents", "u", (0,)),
        (top.bus, top.path, I_PROPERTIES, "GetAll", "s", (I_TABLE,)),
    ]
    calls += [(a.bus, a.path, I_COMPONENT, "GetExtents", "u", (0,)) for a in clips]
    res = await conn.batch(calls)
    ifaces, extents, table = res[0], res[1], res[2]
    if isinstance(ifaces, AtspiCallError):
        raise ifaces
    top.ifaces = iface_mask(ifaces[0])
    if isinstance(extents, AtspiCallError):
        return []  # no place on screen: nothing of it is shown, and nothing said
    box = _box(extents[0])
    top.extents = box
    visible: Box | None = box
    for r in res[3:]:
        if visible is not None and not isinstance(r, AtspiCallError):
            clip = _box(r[0])
            if clip[2] > 0 and clip[3] > 0:
                visible = _intersect(visible, clip)
    if visible is None or visible[2] <= 2 * PROBE_INSET or visible[3] <= 2 * PROBE_INSET:
        return []  # scrolled out of view (or a closed popup's list): nothing on screen
    if top.ifaces & int(Iface.TABLE) and not isinstance(table, AtspiCallError):
        props = table[0]
        rows = int(props["NRows"].value) if "NRows" in props else 0
        cols = int(props["NColumns"].value) if "NColumns" in props else 0
        return await _table(conn, top, visible, rows, cols, max_items)
    return await _list(conn, top, visible, max_items)


# ---------------------------------------------------------------------------- tables


async def _table(
    conn: Conn, top: RawNode, visible: Box, nrows: int, ncols: int, max_items: int
) -> list[RawNode]:
    if nrows <= 0 or ncols <= 0:
        top.screen = f"on screen: no rows ({nrows:,} rows, {ncols:,} columns)"
        return []
    x, y, w, h = visible
    left, right = x + PROBE_INSET, x + w - 1 - PROBE_INSET
    upper, lower = y + PROBE_INSET, y + h - 1 - PROBE_INSET
    tl, tr, bl, br = await _cells_at(
        conn, top, [(left, upper), (right, upper), (left, lower), (right, lower)]
    )
    top_row = _first(c.row for c in (tl, tr) if c is not None and c.row >= 0)
    bottom_row = _first(c.row for c in (bl, br) if c is not None and c.row >= 0)
    if top_row is None:
        # nothing at the top corners: a column header there (a GTK tree view's, which
        # answers nothing at its points), or fewer rows than room: down the left edge
        step = max(4, h // _SCAN_POINTS)
        edge = await _cells_at(conn, top, [(left, py) for py in range(upper, lower + 1, step)])
        found = [c.row for c in edge if c is not None and c.row >= 0]
        if found:
            top_row = found[0]
            if bottom_row is None:
                bottom_row = found[-1]
    if top_row is None:
        top.screen = f"on screen: no rows found ({nrows:,} rows, {ncols:,} columns)"
        return []
    left_col = _first(c.col for c in (tl, bl) if c is not None and c.col >= 0)
    right_col = _first(c.col for c in (tr, br) if c is not None and c.col >= 0)
    rows = Span(top_row, nrows - 1 if bottom_row is None else max(bottom_row, top_row), nrows)
    cols = Span(
        0 if left_col is None else left_col,
        ncols - 1 if right_col is None else right_col,
        ncols,
    )
    shown_rows = rows
    if len(rows) * max(len(cols), 1) > max_items:
        shown_rows = Span(
            rows.first, rows.first + max(1, max_items // max(len(cols), 1)) - 1, nrows
        )
    sheet = any(c is not None and c.names_its_address for c in (tl, tr, bl, br))
    headers, cells = await asyncio.gather(
        _headers(conn, top, cols), _cells(conn, top, shown_rows, cols, sheet)
    )
    listed = _listed(cells, shown_rows, cols)
    top.screen = _summary(cells, listed, rows, cols, shown_rows)
    out = list(headers)
    for item in out:
        item.parent = 0  # the container (_container links them)
    for k in listed:
        cell = cells[k]
        cell.parent = 0
        out.append(cell)
        at = len(out)  # the cell's place after the container's (at 0)
        for part in cell.parts:
            part.parent = at
            out.append(part)
    return out


@dataclass(frozen=True, slots=True)
class _Hit:
    path: str
    row: int
    col: int
    box: Box
    name: str

    @property
    def names_its_address(self) -> bool:
        """A cell named by its address (``B3``): a spreadsheet's."""
        return self.row >= 0 and self.col >= 0 and self.name == a1(self.row, self.col)


async def _cells_at(
    conn: Conn, top: RawNode, points: Sequence[tuple[int, int]]
) -> list[_Hit | None]:
    """The table's cells at these screen points (row -1: something else of the table, such
    as a column header; None: nothing of it there)."""
    found = await conn.batch(
        [
            (top.bus, top.path, I_COMPONENT, "GetAccessibleAtPoint", "iiu", (px, py, 0))
            for px, py in points
        ]
    )
    paths = [
        None
        if isinstance(r, AtspiCallError) or r[0][1] in _NULL_PATHS or r[0][1] == top.path
        else str(r[0][1])
        for r in found
    ]
    distinct = sorted({p for p in paths if p is not None})
    calls: list[Call] = []
    for p in distinct:
        calls.append((top.bus, p, I_PROPERTIES, "Get", "ss", (I_ACCESSIBLE, "Parent")))
        calls.append((top.bus, p, I_ACCESSIBLE, "GetIndexInParent", "", ()))
        calls.append((top.bus, p, I_COMPONENT, "GetExtents", "u", (0,)))
        calls.append((top.bus, p, I_PROPERTIES, "Get", "ss", (I_ACCESSIBLE, "Name")))
    res = await conn.batch(calls)
    index: dict[str, tuple[int, Box, str]] = {}
    for k, p in enumerate(distinct):
        parent, idx, ext, name = res[4 * k : 4 * k + 4]
        if any(isinstance(r, AtspiCallError) for r in (parent, idx, ext, name)):
            continue
        if str(parent[0].value[1]) != top.path:
            continue
        index[p] = (int(idx[0]), _box(ext[0]), str(name[0].value))
    order = sorted(index)
    places = await conn.batch(
        [
            call
            for p in order
            for call in (
                (top.bus, top.path, I_TABLE, "GetRowAtIndex", "i", (index[p][0],)),
                (top.bus, top.path, I_TABLE, "GetColumnAtIndex", "i", (index[p][0],)),
            )
        ]
    )
    hits: dict[str, _Hit] = {}
    for k, p in enumerate(order):
        row, col = places[2 * k], places[2 * k + 1]
        r = -1 if isinstance(row, AtspiCallError) else int(row[0])
        c = -1 if isinstance(col, AtspiCallError) else int(col[0])
        hits[p] = _Hit(p, r, c if r >= 0 else -1, index[p][1], index[p][2])
    return [hits.get(p) if p is not None else None for p in paths]


async def _headers(conn: Conn, top: RawNode, cols: Span) -> list[RawNode]:
    """The column headers of the columns on screen that are objects of their own (a GTK
    tree view's buttons; Calc has none in its table)."""
    found = await conn.batch(
        [
            (top.bus, top.path, I_TABLE, "GetColumnHeader", "i", (c,))
            for c in range(cols.first, cols.last + 1)
        ]
    )
    refs = [
        (str(r[0][0]) or top.bus, str(r[0][1]))
        for r in found
        if not isinstance(r, AtspiCallError) and r[0][1] not in _NULL_PATHS
    ]
    if not refs:
        return []
    calls: list[Call] = []
    for b, p in refs:
        calls.append((b, p, I_PROPERTIES, "GetAll", "s", (I_ACCESSIBLE,)))
        calls.append((b, p, I_ACCESSIBLE, "GetRole", "", ()))
        calls.append((b, p, I_ACCESSIBLE, "GetState", "", ()))
    res = await conn.batch(calls)
    out: list[RawNode] = []
    for k, (b, p) in enumerate(refs):
        props, role, st = res[3 * k : 3 * k + 3]
        if isinstance(props, AtspiCallError):
            continue
        out.append(collect.raw_node(b, p, props[0], role, st, -1, 1, -1))
    return out


async def _cells(conn: Conn, top: RawNode, rows: Span, cols: Span, sheet: bool) -> list[RawNode]:
    """Every cell of these rows and columns, row by row, with its states and text. A
    ``sheet``'s cells name themselves by their address (Calc): their name is not asked
    for, and a filled one's formula is read from its attributes (asking every cell for
    its attributes costs Calc more than everything else together). Other tables' cells
    are read with their names (a GTK tree view's cell is named by its text)."""
    places = [
        (r, c) for r in range(rows.first, rows.last + 1) for c in range(cols.first, cols.last + 1)
    ]
    found = await conn.batch(
        [(top.bus, top.path, I_TABLE, "GetAccessibleAt", "ii", (r, c)) for r, c in places]
    )
    per = 2 if sheet else 3
    refs: list[tuple[int, int, str, str] | None] = []
    calls: list[Call] = []
    for (r, c), got in zip(places, found, strict=True):
        if isinstance(got, AtspiCallError) or got[0][1] in _NULL_PATHS:
            refs.append(None)
            continue
        b, p = str(got[0][0]) or top.bus, str(got[0][1])
        refs.append((r, c, b, p))
        calls.append((b, p, I_ACCESSIBLE, "GetState", "", ()))
        calls.append((b, p, I_TEXT, "GetText", "ii", (0, -1)))
        if not sheet:
            calls.append((b, p, I_PROPERTIES, "GetAll", "s", (I_ACCESSIBLE,)))
    res = await conn.batch(calls)
    cells: list[RawNode] = []
    k = 0
    for ref in refs:
        if ref is None:
            cells.append(_gap())
            continue
        r, c, b, p = ref
        st, text = res[per * k], res[per * k + 1]
        props = res[per * k + 2] if not sheet else None
        k += 1
        if isinstance(st, AtspiCallError) or isinstance(props, AtspiCallError):
            cells.append(_gap())
            continue
        cell = RawNode(b, p, parent=0, depth=1, role=R_TABLE_CELL, states=state_mask(st[0]))
        if props is not None:
            d = props[0]
            cell.name = str(d["Name"].value) if "Name" in d else ""
            cell.desc = str(d["Description"].value) if "Description" in d else ""
            cell.child_count = int(d["ChildCount"].value) if "ChildCount" in d else 0
        else:
            cell.name = cell.address = a1(r, c)
        if not isinstance(text, AtspiCallError):
            value = _value(str(text[0]))
            if value and value != cell.name:
                cell.value = value
        cells.append(cell)
    if sheet:
        await _formulas(conn, [c for c in cells if c.path and c.value])
        await stale_cells.mark_stale(conn, cells)
    else:
        await _renderers(conn, [c for c in cells if c.path and c.child_count > 0])
        await _actions(conn, [c for c in cells if c.path and _empty(c)])
    return cells


async def _actions(conn: Conn, cells: list[RawNode]) -> None:
    """The actions of cells that look empty: a check box cell says it is one only by its
    ``toggle`` action (:func:`.cells.toggles`), and is then worth a line."""
    if not cells:
        return
    res = await conn.batch([(c.bus, c.path, I_ACTION, "GetActions", "", ()) for c in cells])
    for cell, got in zip(cells, res, strict=True):
        if not isinstance(got, AtspiCallError):
            cell.actions = collect.action_names(got)


async def _renderers(conn: Conn, cells: list[RawNode]) -> None:
    """The parts of a cell made of cells (a GTK tree view's icon and text in one column:
    Thunar's file names, its side pane's places), read as the cell's children
    (``RawNode.parts``): the render shows such a cell as one line named by its parts'
    text (:mod:`.cells`, the one rule for it, whichever way the cell was read)."""
    cells = [c for c in cells if not c.name and not c.value and not collect.virtual(c)]
    if not cells:
        return
    kids = await conn.batch([(c.bus, c.path, I_ACCESSIBLE, "GetChildren", "", ()) for c in cells])
    refs: list[tuple[RawNode, str, str]] = []
    for cell, got in zip(cells, kids, strict=True):
        if not isinstance(got, AtspiCallError):
            refs += [(cell, str(b) or cell.bus, str(p)) for b, p in got[0][:_MAX_PARTS]]
    calls: list[Call] = []
    for _cell, b, p in refs:
        calls.append((b, p, I_PROPERTIES, "GetAll", "s", (I_ACCESSIBLE,)))
        calls.append((b, p, I_ACCESSIBLE, "GetRole", "", ()))
        calls.append((b, p, I_ACCESSIBLE, "GetState", "", ()))
    res = await conn.batch(calls)
    for k, (cell, b, p) in enumerate(refs):
        props, role, st = res[3 * k : 3 * k + 3]
        if isinstance(props, AtspiCallError):
            continue
        part = collect.raw_node(b, p, props[0], role, st, -1, 2, len(cell.parts))
        cell.parts.append(part)


async def _formulas(conn: Conn, cells: list[RawNode]) -> None:
    """The formulas of these (filled) sheet cells, from their ``Formula`` attribute."""
    if not cells:
        return
    res = await conn.batch([(c.bus, c.path, I_ACCESSIBLE, "GetAttributes", "", ()) for c in cells])
    for cell, got in zip(cells, res, strict=True):
        if not isinstance(got, AtspiCallError):
            cell.formula = _formula(got[0])


def _value(text: str) -> str:
    """A cell's text as a value: no object replacement characters, cut where values are."""
    text = text.replace("\ufffc", "")
    return text if len(text) <= VALUE_MAX_CHARS else text[:VALUE_MAX_CHARS] + "…"


def _gap() -> RawNode:
    """A place where the table gave no cell (a merged cell's covered part): never listed."""
    return RawNode("", "", role=R_TABLE_CELL)


def _formula(attributes: Any) -> str | None:
    """The cell's formula from its ``Formula`` attribute (LibreOffice: ``B2*C2``, without the
    ``=``), shown as ``=B2*C2``. LibreOffice escapes ``:``, ``;``, ``=`` and ``,`` in
    attribute values with a backslash, and the bridge cuts the value there (``SUM(B2\\``
    for ``SUM(B2:B5)``): such a formula is shown up to the cut, ending in ``…``, never as
    if it were whole."""
    value = attributes.get("Formula") if isinstance(attributes, dict) else None
    if not value:
        return None
    text = str(value)
    cut = text.find("\\")
    return f"={text[:cut]}…" if cut >= 0 else f"={text}"


def _empty(cell: RawNode) -> bool:
    """No text, no name but its address, no formula and no state worth showing."""
    if not cell.path:
        return True
    unnamed = not cell.name or cell.name == cell.address
    return (
        not cell.value
        and not cell.stale
        and unnamed
        and not cell.formula
        and not cell.states & _B_MEANINGFUL
        and not toggles(cell)
        and not any(p.name.strip() for p in cell.parts)
    )


def _listed(cells: list[RawNode], rows: Span, cols: Span) -> list[int]:
    """The cells worth a line: filled ones, the current one, and empty ones directly below or
    right of a filled one (in row order)."""
    width = len(cols)
    filled = [not _empty(c) for c in cells]
    out: list[int] = []
    for k, cell in enumerate(cells):
        if not cell.path:
            continue
        row, col = divmod(k, width)
        if (
            filled[k]
            or cell.states & _B_FOCUSED
            or (row > 0 and filled[k - width])
            or (col > 0 and filled[k - 1])
        ):
            out.append(k)
    return out


def _summary(
    cells: list[RawNode], listed: list[int], rows: Span, cols: Span, read_rows: Span
) -> str:
    """The line under the container: what is on screen out of what, where the cursor and
    the selection are, and what was left out."""
    sheet = any(c.address for c in cells)
    if sheet:
        where = (
            f"{a1(rows.first, cols.first)}:{a1(rows.last, cols.last)} (rows {rows.first + 1:,}–"
            f"{rows.last + 1:,} of {rows.total:,}, columns {column_name(cols.first)}–"
            f"{column_name(cols.last)} of {cols.total:,})"
        )
    else:
        where = (
            f"rows {rows.first + 1:,}–{rows.last + 1:,} of {rows.total:,}, columns "
            f"{cols.first + 1:,}–{cols.last + 1:,} of {cols.total:,}"
        )
    parts = [f"on screen: {where}"]
    width = len(cols)
    current = [k for k, c in enumerate(cells) if c.path and c.states & _B_FOCUSED]
    if current and sheet:
        parts.append(f"current cell {cells[current[0]].address or '?'}")
    chosen = [k for k, c in enumerate(cells) if c.path and c.states & _B_SELECTED]
    if chosen and sheet:
        r0 = min(k // width for k in chosen) + read_rows.first
        r1 = max(k // width for k in chosen) + read_rows.first
        c0 = min(k % width for k in chosen) + cols.first
        c1 = max(k % width for k in chosen) + cols.first
        span = a1(r0, c0) if (r0, c0) == (r1, c1) else f"{a1(r0, c0)}:{a1(r1, c1)}"
        cells_word = "cell" if len(chosen) == 1 else "cells"
        parts.append(f"selected {span} ({len(chosen):,} {cells_word} on screen)")
    left_out = sum(1 for c in cells if c.path) - len(listed)
    if left_out:
        parts.append(f"{left_out:,} empty cells not listed")
    if len(read_rows) < len(rows):
        parts.append(
            f"rows {read_rows.last + 2:,}–{rows.last + 1:,} on screen not read (more than "
            f"{MAX_ON_SCREEN:,} cells)"
        )
    return "; ".join(parts)


# ---------------------------------------------------------------------------- lists


async def _list(conn: Conn, top: RawNode, visible: Box, max_items: int) -> list[RawNode]:
    """A container without Table: all its items when it has at most ``ALL_ITEMS`` (a
    LibreOffice Writer document manages its descendants, and its children are the
    paragraphs on screen: no summary then, it is all there is), else those between the ones
    at its top-left and bottom-right visible corners (a long list, an icon view); each item
    with its subtree."""
    total = top.child_count
    if 0 <= total <= ALL_ITEMS:
        first, count = 0, total
    else:
        x, y, w, h = visible
        corners = [
            (x + PROBE_INSET, y + PROBE_INSET),
            (x + w - 1 - PROBE_INSET, y + h - 1 - PROBE_INSET),
        ]
        found_first, last = await _items_at(conn, top, corners)
        if found_first is None:
            top.screen = f"on screen: no items found ({total:,} items)"
            return []
        first = found_first
        if last is None or last < first:
            last = total - 1
        count = min(last - first + 1, max_items)
        top.screen = f"on screen: items {first + 1:,}–{first + count:,} of {total:,}"
    found = await conn.batch(
        [
            (top.bus, top.path, I_ACCESSIBLE, "GetChildAtIndex", "i", (k,))
            for k in range(first, first + count)
        ]
    )
    refs = [
        (first + k, str(got[0][0]) or top.bus, str(got[0][1]))
        for k, got in enumerate(found)
        if not isinstance(got, AtspiCallError) and got[0][1] not in _NULL_PATHS
    ]
    subs = await asyncio.gather(
        *(collect.read_walk(conn, b, p, max_items, max_items) for _k, b, p in refs)
    )
    out: list[RawNode] = []
    for (index, _b, _p), sub in zip(refs, subs, strict=True):
        if not sub:
            continue
        sub[0].index = index
        base = len(out) + 1  # the container is at 0 (_container links them)
        for node in sub:
            node.parent = node.parent + base if node.parent >= 0 else 0
            out.append(node)
    return out


async def _items_at(
    conn: Conn, top: RawNode, points: Sequence[tuple[int, int]]
) -> tuple[int | None, int | None]:
    """The indexes of the container's children at the first and last of ``points`` (an
    object found there is followed up to the child of the container it is in)."""
    found = await conn.batch(
        [
            (top.bus, top.path, I_COMPONENT, "GetAccessibleAtPoint", "iiu", (px, py, 0))
            for px, py in points
        ]
    )
    out: list[int | None] = []
    for r in found:
        if isinstance(r, AtspiCallError) or r[0][1] in _NULL_PATHS or r[0][1] == top.path:
            out.append(None)
            continue
        out.append(await _child_index(conn, top, str(r[0][0]) or top.bus, str(r[0][1])))
    return out[0], out[-1]


async def _child_index(conn: Conn, top: RawNode, bus: str, path: str) -> int | None:
    for _ in range(_UP_LEVELS):
        parent, idx = await conn.batch(
            [
                (bus, path, I_PROPERTIES, "Get", "ss", (I_ACCESSIBLE, "Parent")),
                (bus, path, I_ACCESSIBLE, "GetIndexInParent", "", ()),
            ]
        )
        if isinstance(parent, AtspiCallError) or isinstance(idx, AtspiCallError):
            return None
        pb, pp = parent[0].value
        if str(pp) == top.path:
            return int(idx[0])
        bus, path = str(pb) or bus, str(pp)
    return None


# ---------------------------------------------------------------------------- helpers


def _ancestors(nodes: list[RawNode], i: int) -> list[int]:
    out: list[int] = []
    p = nodes[i].parent
    while p >= 0:
        out.append(p)
        p = nodes[p].parent
    return out


def _box(raw: Sequence[Any]) -> Box:
    x, y, w, h = raw
    return int(x), int(y), int(w), int(h)


def _intersect(a: Box, b: Box) -> Box | None:
    x0, y0 = max(a[0], b[0]), max(a[1], b[1])
    x1, y1 = min(a[0] + a[2], b[0] + b[2]), min(a[1] + a[3], b[1] + b[3])
    if x1 <= x0 or y1 <= y0:
        return None
    return x0, y0, x1 - x0, y1 - y0


def _first(values: Any) -> int | None:
    for v in values:
        return int(v)
    return None


def column_name(col: int) -> str:
    """A spreadsheet's name of a 0-based column: 0 → A, 25 → Z, 26 → AA."""
    name = ""
    col += 1
    while col > 0:
        col, rest = divmod(col - 1, 26)
        name = chr(ord("A") + rest) + name
    return name


def a1(row: int, col: int) -> str:
    """A 0-based cell's address as a spreadsheet says it: (2, 1) → B3."""
    return f"{column_name(col)}{row + 1}"


def parse_a1(address: str) -> tuple[int, int] | None:
    """The 0-based (row, column) of an address such as ``B3``; None for anything else."""
    if not _ADDRESS.fullmatch(address):
        return None
    letters = address.rstrip("0123456789")
    col = 0
    for ch in letters:
        col = col * 26 + (ord(ch) - ord("A") + 1)
    return int(address[len(letters) :]) - 1, col - 1


def transient(node: RawNode) -> bool:
    """The app makes a new object for this one each time it is asked (a Calc cell)."""
    return bool(node.states & _B_TRANSIENT)
