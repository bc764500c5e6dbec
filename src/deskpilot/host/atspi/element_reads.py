"""What one element has now, read on demand: action names, interfaces, text length, extents,
the caret, its combo box.

A snapshot reads these only where showing the tree needs them (docs/host-tree.md, "How the
tree is read"); acting on an element needs them exactly, and fresh, so they are read here when
asked, over the app's reading connection (never an action connection: nothing here changes the
app).
"""

from __future__ import annotations

import asyncio
from typing import Final

from deskpilot.host.atspi import sheet_reads
from deskpilot.host.atspi.bus import (
    I_ACCESSIBLE,
    I_ACTION,
    I_COMPONENT,
    I_HYPERLINK,
    I_PROPERTIES,
    I_TEXT,
    I_VALUE,
    AtspiCallError,
    Conn,
)
from deskpilot.host.atspi.combo import ComboParts, combo_of_option, read_combo
from deskpilot.host.atspi.connections import Connections
from deskpilot.host.atspi.doc_text import SELECTED_MAX
from deskpilot.host.atspi.gecko import unreliable_name
from deskpilot.host.atspi.model import ElementRef, FieldText
from deskpilot.host.atspi.vocab import MAX_ACTIONS_SHOWN, State, bit, state_mask
from deskpilot.protocol.wire import Rect

_B_FOCUSED: Final = bit(State.FOCUSED)
#: the longest text a field's check reads whole; beyond, what stands before the caret
FIELD_TEXT_MAX: Final = 20_000


class ElementReads:
    """Reads of one element, each on the connection ``connections`` gives for its app."""

    def __init__(self, connections: Connections) -> None:
        self._connections = connections

    async def action_names(self, element: ElementRef) -> tuple[str, ...]:
        """All action names of the element, read now (blank names resolved one by one)."""
        conn = await self._connections.conn_for(element.bus_name)
        return await action_names(conn, element)

    async def character_count(self, element: ElementRef) -> int | None:
        """How many characters the element's text has (None without a Text interface)."""
        conn = await self._connections.conn_for(element.bus_name)
        try:
            body = await conn.call(
                element.bus_name,
                element.path,
                I_PROPERTIES,
                "Get",
                "ss",
                (I_TEXT, "CharacterCount"),
            )
        except AtspiCallError:
            return None
        value = body[0].value if hasattr(body[0], "value") else body[0]
        return int(value)

    async def link_target(self, element: ElementRef) -> str | None:
        """Where a link leads (``Hyperlink.GetURI(0)``); None when it has no Hyperlink."""
        conn = await self._connections.conn_for(element.bus_name)
        try:
            body = await conn.call(element.bus_name, element.path, I_HYPERLINK, "GetURI", "i", (0,))
        except AtspiCallError:
            return None
        return str(body[0]) or None

    async def field_text(self, element: ElementRef, probe: int) -> FieldText:
        """The field's character count, caret and text (see ``FieldText``: a secure field's
        text is not read; of a long one, the ``probe`` characters before the caret)."""
        conn = await self._connections.conn_for(element.bus_name)
        b, p = element.bus_name, element.path
        props, state, n_sel = await asyncio.gather(
            conn.get_all(b, p, I_TEXT),
            conn.call(b, p, I_ACCESSIBLE, "GetState"),
            conn.call(b, p, I_TEXT, "GetNSelections"),
        )
        count = int(props.get("CharacterCount", 0))
        caret = int(props.get("CaretOffset", -1))
        focused = bool(state_mask(state[0]) & _B_FOCUSED)
        selection = None
        if int(n_sel[0]) > 0:
            start, end = await conn.call(b, p, I_TEXT, "GetSelection", "i", (0,))
            selection = (int(start), int(end)) if int(start) != int(end) else None
        if element.secure:
            return FieldText(count, caret, None, focused=focused, selection=selection)
        if count <= FIELD_TEXT_MAX:
            text = str((await conn.call(b, p, I_TEXT, "GetText", "ii", (0, count)))[0])
            return FieldText(count, caret, text, focused=focused, selection=selection)
        before = None
        if 0 <= caret <= count:
            start = max(0, caret - probe)
            before = str((await conn.call(b, p, I_TEXT, "GetText", "ii", (start, caret)))[0])
        return FieldText(count, caret, None, before, focused, selection)

    async def value_now(self, element: ElementRef) -> str | float | None:
        """What the element holds now, as set_value sets it: its number (``Value``: a spin
        button, a slider), else its whole text (``Text``); None when it has neither or does
        not answer. Read to check an action's effect, never logged."""
        conn = await self._connections.conn_for(element.bus_name)
        ifaces = await interfaces(conn, element)
        try:
            if "Value" in ifaces:
                body = await conn.call(
                    element.bus_name,
                    element.path,
                    I_PROPERTIES,
                    "Get",
                    "ss",
                    (I_VALUE, "CurrentValue"),
                )
                value = body[0].value if hasattr(body[0], "value") else body[0]
                return float(value)
            if "Text" in ifaces:
                body = await conn.call(
                    element.bus_name, element.path, I_TEXT, "GetText", "ii", (0, -1)
                )
                return str(body[0])
        except AtspiCallError:
            return None
        return None

    async def selection(self, element: ElementRef) -> tuple[int, int, str] | None:
        """The element's first selected range and at most ``SELECTED_MAX`` characters of
        it, read now; None when nothing is selected (or it has no Text)."""
        conn = await self._connections.conn_for(element.bus_name)
        try:
            start, end = await conn.call(
                element.bus_name, element.path, I_TEXT, "GetSelection", "i", (0,)
            )
        except AtspiCallError:
            return None  # GTK 4 says InvalidArgs when there is none
        if not 0 <= int(start) < int(end):
            return None
        start, end = int(start), int(end)
        try:
            body = await conn.call(
                element.bus_name,
                element.path,
                I_TEXT,
                "GetText",
                "ii",
                (start, min(end, start + SELECTED_MAX + 1)),
            )
        except AtspiCallError:
            return start, end, ""
        text = str(body[0]).replace("\ufffc", "")
        return start, end, text[:SELECTED_MAX] + "…" if end - start > SELECTED_MAX else text

    async def extents(self, element: ElementRef) -> Rect | None:
        """The element's current screen extents (None when it has no Component)."""
        conn = await self._connections.conn_for(element.bus_name)
        try:
            body = await conn.call(
                element.bus_name, element.path, I_COMPONENT, "GetExtents", "u", (0,)
            )
        except AtspiCallError:
            return None
        x, y, w, h = body[0]
        dx, dy = element.shift or (0, 0)  # where the app's own coordinates are off
        return Rect(x=int(x) + dx, y=int(y) + dy, width=int(w), height=int(h))

    async def live(self, element: ElementRef) -> ElementRef | None:
        """The element with the object that stands for it now: a sheet cell is found again
        by its table and address (see atspi/sheet_reads.py); None when that is gone. Any
        other element is returned as it is."""
        if sheet_reads.table_of(element) is None:
            return element
        conn = await self._connections.conn_for(element.bus_name)
        return await sheet_reads.live(conn, element)

    async def cell(self, element: ElementRef) -> sheet_reads.CellNow | None:
        """A sheet cell as it is now (text, formula, focus); None for other elements, or
        when it is gone."""
        where = sheet_reads.table_of(element)
        if where is None:
            return None
        conn = await self._connections.conn_for(element.bus_name)
        return await sheet_reads.read_cell(conn, *where)

    async def combo_parts(self, element: ElementRef, detached: bool) -> ComboParts | None:
        """The combo box ``element`` as it is now (options, popup state); see atspi/combo
        (``detached``: its app keeps the open list apart, as Firefox does)."""
        conn = await self._connections.conn_for(element.bus_name)
        return await read_combo(conn, element.ref, detached)

    async def combo_of_option(self, element: ElementRef, detached: bool) -> ComboParts | None:
        """The combo box whose popup list ``element`` is an option of, read now; None for
        an item of anything else."""
        conn = await self._connections.conn_for(element.bus_name)
        combo = await combo_of_option(conn, element.ref)
        return None if combo is None else await read_combo(conn, combo, detached)


async def interfaces(conn: Conn, element: ElementRef) -> frozenset[str]:
    """The element's interfaces: as the snapshot read them, else asked now."""
    if element.interfaces:
        return element.interfaces
    body = await conn.call(element.bus_name, element.path, I_ACCESSIBLE, "GetInterfaces")
    return frozenset(str(n).rsplit(".", 1)[-1] for n in body[0])


async def action_names(conn: Conn, element: ElementRef) -> tuple[str, ...]:
    """The element's action names (at most ``MAX_ACTIONS_SHOWN``), blank or garbled ones
    asked by index."""
    body = await conn.call(element.bus_name, element.path, I_ACTION, "GetActions")
    actions = body[0][:MAX_ACTIONS_SHOWN]
    names = [str(a[0]) for a in actions]
    # Chromium leaves names blank, Firefox puts its key bindings there (atspi/gecko.py)
    blank = [i for i, a in enumerate(actions) if unreliable_name(a)]
    if blank:
        res = await conn.batch(
            [(element.bus_name, element.path, I_ACTION, "GetName", "i", (i,)) for i in blank]
        )
        for i, r in zip(blank, res, strict=True):
            if not isinstance(r, AtspiCallError):
                names[i] = str(r[0])
    return tuple(names)


async def caret_or_end(conn: Conn, el: ElementRef) -> int:
    """Where typing would land: the caret of a field that had the focus, else the end of
    the text (an unfocused field's caret is wherever it was last left). Focused *as the
    agent saw it* (``el.states``) and still now: a focus step before the typing gives the
    field the focus and its app places the caret where it likes — LibreOffice Writer at
    a paragraph's start, where a trial's " (draft)" went before "Meeting notes"."""
    props = await conn.get_all(el.bus_name, el.path, I_TEXT)
    end = int(props.get("CharacterCount", 0))
    caret = int(props.get("CaretOffset", -1))
    state = await conn.call(el.bus_name, el.path, I_ACCESSIBLE, "GetState")
    focused = "focused" in el.states and bool(state_mask(state[0]) & _B_FOCUSED)
    return caret if focused and 0 <= caret <= end else end
