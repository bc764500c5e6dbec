"""Acting on a spreadsheet's cells as a person does, and saying what typing into one did.

A sheet's cell (LibreOffice Calc's: named by its address, a new object each time it is asked
for, atspi/cells.py) is no list row: a person's single click on it makes it the *current
cell* and drops the selection, and what is typed next goes into it. The table's
``Selection.SelectChild`` only marks the cell as selected (the cursor stays where it was, so
the typing would land elsewhere), and the row selection a GTK tree view's cell gets
(host/item_clicks.py) would select the whole row. So a click on a sheet cell is the pointer
at the middle of the part of the cell that is visible (a cell at the edge is partly under
the scroll bar), which also does what a person's click does while a formula is being typed:
the cell's address goes into the formula. The cell must then say it is the current one:
right after it opened a document, Calc still moves its grid down as its toolbars settle, and
a click aimed by the extents it gave a moment before lands on the cell above. Where it did
not become current, or the point cannot be clicked (another window on top, no extents), the
cell is made current semantically: the table's selection cleared, then
``Component.GrabFocus`` on the cell (Calc moves its cursor there).

Typing into a cell is checked afterwards (:func:`typed_effect`): Calc keeps typed text in the
cell's editor until Enter or Tab enters it, so the cell is read again once the action
settled. Its content is compared with what was typed (a formula with the cell's formula, a
number with its value): ``confirmed`` when it is there, else ``unconfirmed`` with why — the
text is still in the editor (no Enter), or the cell shows something else (Calc's
autocompletion or number formats change an entry). The note never repeats the typed text.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import time
from collections.abc import Mapping
from typing import Final

from deskpilot.host.accessibility import Accessibility
from deskpilot.host.atspi.model import ElementRef, OpKind, SemanticOp
from deskpilot.host.atspi.on_screen import a1, parse_a1
from deskpilot.host.atspi.sheet_reads import CellNow, sheet_cell, table_of
from deskpilot.host.outcome import Effect, EffectCheck, Outcome
from deskpilot.host.primitives import Primitives
from deskpilot.host.x11.windows import XWindow
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import Rect

#: keys that enter a cell's edit into the cell (Enter moves down, Tab right)
_COMMITS: Final = frozenset({"\n", "\t"})
_SPACES: Final = re.compile(r"\s+")

#: how long a click on a cell is given to make it the current one, and how often it is asked
CURRENT_WAIT_S: Final = 0.4
CURRENT_POLL_S: Final = 0.02
#: how often a raised window's cell is asked where it is, until two answers agree
LAYOUT_POLL_S: Final = 0.05

CLICK_DETAIL: Final = (
    "xtest left x{count} at the cell's visible middle (a person's click: it becomes the "
    "current cell)"
)


class SheetCells:
    """Clicks on sheet cells, with the dispatcher's primitives."""

    def __init__(self, primitives: Primitives) -> None:
        self._p = primitives

    async def click(
        self,
        cell: ElementRef,
        elements: Mapping[int, ElementRef],
        window: XWindow,
        rect: Rect,
        count: int,
    ) -> Outcome:
        """A person's click (``count`` 1 or 2: a double click starts editing the cell)."""
        table = elements.get(cell.parent_id) if cell.parent_id is not None else None
        try:
            x, y = await self._aim(cell, table, window, rect)
        except DeskpilotError as first:
            # covered by another window: a person brings Calc's window up, then clicks
            if first.details.get("reason") != "covered_point":
                return await self._semantically(cell, table, count, first)
            await self._p.bring_to_front(window)
            await self._laid_out(cell)
            try:
                x, y = await self._aim(cell, table, window, rect)
            except DeskpilotError as again:
                return await self._semantically(cell, table, count, again)
        await asyncio.to_thread(self._p.input().click, x, y, "left", count)
        clicked = Outcome("synthetic", CLICK_DETAIL.format(count=count))
        if count != 1:
            return clicked
        if self._p.accessibility is None:
            return clicked
        now = await self._current_now(cell)
        if now is not None and now.focused and not now.selected:
            return clicked
        # the sheet moved under the pointer (Calc still laying out its window, or raised
        # just now): the click made another cell current, or hit a column's header above
        # row 1 and selected the whole column; this one is made current as the click meant
        made = await self._make_current(cell, table)
        made.method = "mixed"
        hit_header = now is not None and now.focused
        missed = "selected a whole row or column" if hit_header else "landed on another cell"
        made.detail = f"{clicked.detail} {missed} (the sheet moved); {made.detail}"
        made.check = self._current_check(cell)
        return made

    async def _laid_out(self, cell: ElementRef) -> None:
        """Wait (up to ``CURRENT_WAIT_S``) until the cell's place holds still: a window just
        raised lays itself out again, and a click aimed by the place it gave a moment before
        hit row 1's column header (a trial: the whole column selected)."""
        acc = self._p.accessibility
        if acc is None:
            return
        deadline = time.monotonic() + CURRENT_WAIT_S
        last = await acc.extents(cell)
        while time.monotonic() < deadline:
            await asyncio.sleep(LAYOUT_POLL_S)
            now = await acc.extents(cell)
            if now == last:
                return
            last = now

    async def _semantically(
        self, cell: ElementRef, table: ElementRef | None, count: int, why: DeskpilotError
    ) -> Outcome:
        """The cell made current without the pointer (a single click only); whether it
        became current is read back once the app settled: Calc ignores the focus request
        while its window is not the active one (another LibreOffice window used last), and
        a trial's click on A1 then said only "call_returned"."""
        if count != 1:
            raise why
        made = await self._make_current(cell, table)
        made.check = self._current_check(cell)
        return made

    def _current_check(self, cell: ElementRef) -> EffectCheck:
        async def check() -> Effect:
            if await self._became_current(cell):
                return Effect("confirmed", None)
            return Effect(
                "unconfirmed",
                "the cell did not become the current cell (Calc ignored the request: its "
                "window may not be the active one). Bring the window to the front and click "
                "the cell again, or go to it through the Name Box",
            )

        return check

    async def _became_current(self, cell: ElementRef) -> bool:
        """Whether the cell says it is the current (focused) one, alone (not in a selected
        row or column), within ``CURRENT_WAIT_S``."""
        if self._p.accessibility is None:
            return True
        now = await self._current_now(cell)
        return now is not None and now.focused and not now.selected

    async def _current_now(self, cell: ElementRef) -> CellNow | None:
        """The cell read until it says it is the current (focused) one, up to
        ``CURRENT_WAIT_S`` of the click (Calc answers a click within a few ms); None without
        accessibility or when the cell is gone."""
        if self._p.accessibility is None:
            return None
        deadline = time.monotonic() + CURRENT_WAIT_S
        while True:
            now = await self._p.accessibility.cell(cell)
            if now is None or now.focused or time.monotonic() >= deadline:
                return now
            await asyncio.sleep(CURRENT_POLL_S)

    async def _aim(
        self, cell: ElementRef, table: ElementRef | None, window: XWindow, rect: Rect
    ) -> tuple[int, int]:
        """The middle of the part of the cell inside its table's visible area (checked as
        any pointer aim is: inside the window, not covered)."""
        x, y = await self._p.center(cell, rect, window=window)
        if table is None or self._p.accessibility is None:
            return x, y
        box = await self._p.accessibility.extents(cell)
        area = await self._p.accessibility.extents(table)
        if box is None or area is None:
            return x, y
        x0, y0 = max(box.x, area.x), max(box.y, area.y)
        x1 = min(box.x + box.width, area.x + area.width)
        y1 = min(box.y + box.height, area.y + area.height)
        if x1 - x0 < 2 or y1 - y0 < 2:
            return x, y
        return (x0 + x1) // 2, (y0 + y1) // 2

    async def _make_current(self, cell: ElementRef, table: ElementRef | None) -> Outcome:
        """The cell made the current one without the pointer: the selection cleared, then
        keyboard focus on the cell."""
        done = []
        if table is not None:
            cleared = await self._p.semantic(
                table, SemanticOp(OpKind.CLEAR_SELECTION), settle=False
            )
            if cleared is not None:
                done.append(cleared.detail)
        focused = await self._p.semantic(cell, SemanticOp(OpKind.GRAB_FOCUS))
        if focused is None:
            raise DeskpilotError(
                ErrorCode.UNSUPPORTED_ACTION,
                "the cell can neither be clicked nor given the focus",
                details={"elementId": cell.id, "reason": "no_cell_focus"},
            )
        done.append(focused.detail)
        focused.detail = f"made the current cell: {', then '.join(done)}"
        return focused


def typing_target(
    element: ElementRef | None, elements: Mapping[int, ElementRef]
) -> ElementRef | None:
    """The sheet cell typing goes into: the element typed into, else the current cell of
    the observed state (the focused cell of a focused sheet: the sheet itself says it is
    focused too, first); None when that is no sheet cell."""
    if element is None:
        element = next(
            (e for e in elements.values() if "focused" in e.states and sheet_cell(e)), None
        )
    return element if element is not None and sheet_cell(element) else None


async def typed_effect(accessibility: Accessibility, cell: ElementRef, text: str) -> Effect:
    """What the typing did to ``cell`` and the cells Enter or Tab moved it on to, read now
    (see the module docstring)."""
    where = table_of(cell)
    place = parse_a1(where[1]) if where is not None else None
    if where is None or place is None:
        return Effect("unconfirmed", "the cell typed into could not be read back")
    table, _address = where
    entries, last_open = _entries(text)
    row, col = place
    start_col = col  # where a run of Tabs began: Enter after them goes back to it (Calc)
    checked = 0
    for entry, key in entries:
        here = (row, col)
        if key == "\t":
            col += 1
        else:
            row, col = row + 1, start_col
        if key != "\t":
            start_col = col
        if not entry:
            continue  # Enter or Tab alone only moves the cursor
        checked += 1
        now = await accessibility.cell(_at(cell, table.bus_name, table.path, a1(*here)))
        if now is None:
            return Effect("unconfirmed", f"cell {a1(*here)} could not be read back")
        if not _holds(now, entry):
            if not now.text and not now.formula:
                return Effect(
                    "unconfirmed",
                    f"cell {now.address} is still empty: the typing did not reach it (another "
                    "cell or field may have had the keyboard)",
                )
            return Effect(
                "unconfirmed",
                f"cell {now.address} shows something other than what was typed (Calc may "
                "have completed or converted the entry: autocompletion, a date or number "
                "format); read its value in the new state",
            )
    if last_open:
        return Effect(
            "unconfirmed",
            f"the last text typed is in the editor of cell {a1(row, col)}, not in the cell: "
            "Calc enters it on Enter or Tab (press_key Return)",
        )
    if not checked:
        return Effect("unconfirmed", "only Enter or Tab was typed: no cell's content was entered")
    return Effect("confirmed")


def _at(cell: ElementRef, bus: str, table: str, address: str) -> ElementRef:
    """The cell element standing for ``address`` of the same table (its identity)."""
    if cell.identity is not None and cell.identity[2] == address:
        return cell
    return dataclasses.replace(cell, identity=(bus, table, address))


def _entries(text: str) -> tuple[list[tuple[str, str]], bool]:
    """What each Enter or Tab entered, with the key that entered it, and whether text
    follows the last one (still in the editor)."""
    out: list[tuple[str, str]] = []
    current: list[str] = []
    for ch in text.replace("\r\n", "\n").replace("\r", "\n"):
        if ch not in _COMMITS:
            current.append(ch)
            continue
        out.append(("".join(current), ch))
        current = []
    return out, bool(current)


def _holds(now: CellNow, entry: str) -> bool:
    """Whether the cell holds what was typed: a formula as its formula (the part the bridge
    did not cut), a number as its value, anything else as its text."""
    if entry.startswith("=") and len(entry) > 1:
        typed = _squash(entry[1:])
        formula = now.formula
        cut = formula.find("\\")
        if cut >= 0:
            return bool(formula[:cut]) and typed.startswith(_squash(formula[:cut]))
        return bool(formula) and _squash(formula) == typed
    if now.text == entry:
        return True
    try:
        return float(now.text.replace(",", "")) == float(entry.replace(",", ""))
    except ValueError:
        return False


def _squash(formula: str) -> str:
    """A formula compared as Calc writes it back: upper case, no spaces."""
    return _SPACES.sub("", formula).upper()
