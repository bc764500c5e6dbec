"""``select_child``: select an element through the nearest ancestor that can select it.

An item seldom implements selecting itself; its container does (``Selection``), and for a GTK3
tree view's cells, the table does, by row — the tree view refuses ``SelectChild`` on its
cells (docs/host-tree.md, "Acting"). Every state-changing call goes through ``act``, the
caller's action connection (see :mod:`.selection` and :mod:`.action_conns`).
"""

from __future__ import annotations

from typing import Final

from deskpilot.host.atspi.bus import (
    I_ACCESSIBLE,
    I_SELECTION,
    I_TABLE,
    ROOT_PATH,
    AtspiCallError,
    Conn,
)
from deskpilot.host.atspi.model import ElementRef, SemanticOp
from deskpilot.host.atspi.refusals import STILL_RUNNING, unsupported
from deskpilot.host.atspi.selection import ActFn, deselect_other_children, deselect_other_rows

#: how far up select_child looks for a container with Selection (cell → row → grid → …)
SELECT_ANCESTOR_LEVELS: Final = 4


async def select_child(conn: Conn, el: ElementRef, op: SemanticOp, act: ActFn) -> str:
    """Select the element through the nearest ancestor that implements Selection.

    A table cell whose parent is a Table is selected as GTK selects it on a click: the
    table selects the cell's row (``Table.AddRowSelection``; a GTK3 tree view refuses
    ``SelectChild`` on its cells). Otherwise the container selects its child on the path
    to the element (the row of a cell, say). Raises UNSUPPORTED_ACTION when no ancestor
    within ``SELECT_ANCESTOR_LEVELS`` has Selection, or the container refuses."""
    b, p = el.bus_name, el.path
    for level in range(SELECT_ANCESTOR_LEVELS):
        props = await conn.get_all(b, p, I_ACCESSIBLE)
        parent = props.get("Parent")
        if not parent or parent[1] in ("/org/a11y/atspi/null", ROOT_PATH):
            break
        idx = await conn.call(b, p, I_ACCESSIBLE, "GetIndexInParent")
        pb, pp = (str(parent[0]) or b), str(parent[1])
        ifs = (await conn.call(pb, pp, I_ACCESSIBLE, "GetInterfaces"))[0]
        index = int(idx[0])
        if level == 0 and I_TABLE in ifs and el.role == "cell":
            done = await _select_row_of_cell(conn, act, (pb, pp), index)
            if done is not None:
                return done
        if I_SELECTION in ifs:
            cleared = await deselect_other_children(conn, act, (pb, pp), index)
            body = await act((pb, pp), I_SELECTION, "SelectChild", "i", (index,))
            done = "Selection.ClearSelection, SelectChild" if cleared else "Selection.SelectChild"
            if body is None:
                return f"{done}; {STILL_RUNNING}"
            if not body[0]:
                raise unsupported(op, el, "SelectChild returned false")
            return done
        b, p = pb, pp
    raise unsupported(op, el, "no ancestor with a Selection interface")


async def _select_row_of_cell(
    conn: Conn, act: ActFn, table: tuple[str, str], index: int
) -> str | None:
    """The table selects the row of its child cell ``index``; None when it will not (the
    caller tries the table's Selection next)."""
    tb, tp = table
    row = int((await conn.call(tb, tp, I_TABLE, "GetRowAtIndex", "i", (index,)))[0])
    if row < 0:
        return None
    try:
        selected = bool((await conn.call(tb, tp, I_TABLE, "IsRowSelected", "i", (row,)))[0])
    except AtspiCallError as exc:
        if exc.gone:
            raise
        selected = False
    removed = await deselect_other_rows(conn, act, table, row)
    also = f" (and removed {removed} other selected rows)" if removed else ""
    if selected:
        # GTK3 answers AddRowSelection with false for a row that is already selected
        return f"Table: the row was already selected{also}"
    ok = await act(table, I_TABLE, "AddRowSelection", "i", (row,))
    if ok is None:
        return f"Table.AddRowSelection{also}; {STILL_RUNNING}"
    return f"Table.AddRowSelection{also}" if ok[0] else None
