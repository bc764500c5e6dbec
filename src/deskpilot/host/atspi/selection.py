"""A click's selection replaces the selection, as a person's plain click on a list does.

AT-SPI's ``Selection.SelectChild`` and ``Table.AddRowSelection`` *add* to the selection of a
multi-selectable container (a ``<select multiple>``, a GTK tree view in multiple mode). A
person's plain left click on a row of such a list selects that row alone — adding needs
Ctrl — so before a click selects, the other selected items of a multi-selectable container
are deselected. A Selection container that is not multi-selectable replaces by itself and is
left alone (no extra calls, no extra events); a table's other selected rows are always removed
(see ``deselect_other_rows``).

The calls that change the selection go through ``act`` — the caller's action connection (see
``action_conns``), never the connection that reads trees.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from deskpilot.host.atspi.bus import I_ACCESSIBLE, I_SELECTION, I_TABLE, Conn
from deskpilot.host.atspi.vocab import State, bit, state_mask

#: a state-changing call on ``path``: (path, interface, member, signature, body) → reply body
#: (None: delivered, the app has not answered yet)
ActFn = Callable[[tuple[str, str], str, str, str, tuple[Any, ...]], Awaitable[list[Any] | None]]

_B_MULTISELECTABLE = bit(State.MULTISELECTABLE)


async def multiselectable(conn: Conn, path: tuple[str, str]) -> bool:
    """Whether the container at ``path`` lets several children be selected at once."""
    state = await conn.call(path[0], path[1], I_ACCESSIBLE, "GetState")
    return bool(state_mask(state[0]) & _B_MULTISELECTABLE)


async def deselect_other_children(
    conn: Conn, act: ActFn, container: tuple[str, str], index: int
) -> bool:
    """Before ``SelectChild(index)``: clear a multi-selectable container's selection unless
    child ``index`` is already all of it. Returns whether anything was cleared."""
    if not await multiselectable(conn, container):
        return False
    b, p = container
    selected = int(await conn.get_property(b, p, I_SELECTION, "NSelectedChildren"))
    if selected == 0:
        return False
    if selected == 1:
        mine = await conn.call(b, p, I_SELECTION, "IsChildSelected", "i", (index,))
        if bool(mine[0]):
            return False
    await act(container, I_SELECTION, "ClearSelection", "", ())
    return True


async def deselect_other_rows(conn: Conn, act: ActFn, table: tuple[str, str], row: int) -> int:
    """Before ``AddRowSelection(row)``: remove every other selected row. Returns how many were
    removed.

    No MULTISELECTABLE check here: GTK 3's tree view in multiple mode does not report the
    state (measured with ``zenity --list --multiple``). A single-selection table has at most
    one other selected row, which ``AddRowSelection`` would have replaced anyway."""
    b, p = table
    rows = (await conn.call(b, p, I_TABLE, "GetSelectedRows"))[0]
    removed = 0
    for other in (int(r) for r in rows):
        if other != row:
            await act(table, I_TABLE, "RemoveRowSelection", "i", (other,))
            removed += 1
    return removed
