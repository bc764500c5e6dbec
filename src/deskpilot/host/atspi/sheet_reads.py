"""A sheet's cell, found again by its table and address, and read now.

A spreadsheet (LibreOffice Calc) makes a new accessible object for a cell every time it is
asked for one, and drops it 15 s later (atk-bridge's lease on TRANSIENT objects): an
element id read from a state a minute ago names an object that no longer exists. Such a
cell's element carries ``ElementRef.identity = (bus name, table path, address)``
(:mod:`.on_screen`, ``snapshot._elements``), and is found again here by asking its table
for the cell at that address (``Table.GetAccessibleAt``) before anything is done to it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Final

from deskpilot.host.atspi.bus import (
    I_ACCESSIBLE,
    I_TABLE,
    I_TEXT,
    NULL_PATH,
    AtspiCallError,
    Conn,
)
from deskpilot.host.atspi.model import ElementRef, NodeRef
from deskpilot.host.atspi.on_screen import parse_a1
from deskpilot.host.atspi.vocab import ROLE_NUMBER, State, bit, state_mask

R_TABLE_CELL: Final = ROLE_NUMBER["table cell"]
_B_FOCUSED: Final = bit(State.FOCUSED)
_B_SELECTED: Final = bit(State.SELECTED)


@dataclass(frozen=True, slots=True)
class CellNow:
    """A cell as it is now: its shown text, its ``Formula`` attribute as the app gives it
    (``B2*C2``, cut at a ``\\`` where the bridge cut it; "" without a formula), and whether
    it is the current cell and whether it is part of a selection (a lone current cell is not:
    Calc marks cells selected only in a range, a whole row or a whole column)."""

    address: str
    text: str
    formula: str
    focused: bool
    selected: bool = False


def sheet_cell(element: ElementRef) -> bool:
    """A cell named by its table and address (a spreadsheet's: :mod:`.on_screen`)."""
    return element.atspi_role == R_TABLE_CELL and element.identity is not None


def table_of(element: ElementRef) -> tuple[NodeRef, str] | None:
    """The table and the address a sheet cell's identity names; None for other elements."""
    ident = element.identity
    if ident is None or len(ident) != 3 or parse_a1(ident[2]) is None:
        return None
    return NodeRef(ident[0], ident[1]), ident[2]


async def cell_at(conn: Conn, table: NodeRef, address: str) -> NodeRef | None:
    """The table's cell at ``address`` now (a new object each time, for Calc); None when the
    table is gone or has no such cell."""
    place = parse_a1(address)
    if place is None:
        return None
    try:
        body = await conn.call(table.bus_name, table.path, I_TABLE, "GetAccessibleAt", "ii", place)
    except AtspiCallError as exc:
        if exc.gone:
            return None
        raise
    bus, path = body[0]
    if path == NULL_PATH:
        return None
    return NodeRef(str(bus) or table.bus_name, str(path))


async def live(conn: Conn, element: ElementRef) -> ElementRef | None:
    """``element`` with the object its table gives for its address now (None: the table is
    gone, or the cell); ``element`` itself when it is no sheet cell."""
    where = table_of(element)
    if where is None:
        return element
    ref = await cell_at(conn, *where)
    return None if ref is None else dataclasses.replace(element, ref=ref)


async def read_cell(conn: Conn, table: NodeRef, address: str) -> CellNow | None:
    """The cell at ``address`` as it is now; None when the table or the cell is gone."""
    ref = await cell_at(conn, table, address)
    if ref is None:
        return None
    text, attrs, state = await conn.batch(
        [
            (ref.bus_name, ref.path, I_TEXT, "GetText", "ii", (0, -1)),
            (ref.bus_name, ref.path, I_ACCESSIBLE, "GetAttributes", "", ()),
            (ref.bus_name, ref.path, I_ACCESSIBLE, "GetState", "", ()),
        ]
    )
    if isinstance(text, AtspiCallError):
        return None
    formula = ""
    if not isinstance(attrs, AtspiCallError) and isinstance(attrs[0], dict):
        formula = str(attrs[0].get("Formula") or "")
    mask = 0 if isinstance(state, AtspiCallError) else state_mask(state[0])
    return CellNow(
        address, str(text[0]), formula, bool(mask & _B_FOCUSED), bool(mask & _B_SELECTED)
    )
