"""A left click on an item of a list, table or tree, as a careful person at the mouse means it.

A single click on a row selects it; a double click (or Enter) activates it. The item's own
default AT-SPI action is not a click — a GTK tree-view cell's is "Activate", which makes a
``zenity --list`` return as if the row had been double-clicked (see
``vocab.SELECT_ON_CLICK_ROLES``). So, for the roles there:

* **count 1 on a check box cell → toggle**: a cell that is a check box (zenity's checklist,
  a file chooser's options: its ``toggle`` action, atspi/cells.py ``toggles``) flips, as a
  person's click on the box does in GTK; it is not merely its row selected.
* **count 1 → select**: the nearest ancestor with Selection selects the item (a table cell:
  its table selects the cell's row, as GTK does); else the item's own "select" action
  (Chromium's list box options); else a pointer click at the item's centre — a real single
  click, which selects in GTK and Chromium lists — and ``detail`` says that this fallback
  ran. Never the item's activate/default action.
* **count 2 → activate**: select it as above, then the item's "activate" action (GTK cells
  and rows act on the selection); else a real double click at its centre.
* **count 3** is no item gesture: the caller sends the pointer triple click.

The result carries ``item_click`` ("select" / "activate" / "toggle") so the runtime can tell
the agent what the click did and check the new state for ``[selected]`` or the box's new
``[checked]``/``[unchecked]``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from deskpilot.host.atspi.cells import R_TABLE_CELL, TOGGLE_ACTION
from deskpilot.host.atspi.model import ElementRef, OpKind, SemanticOp
from deskpilot.host.atspi.vocab import (
    ACTIVATE_ACTIONS,
    ITEM_LABEL_ROLES,
    SELECT_ACTIONS,
    SELECT_ON_CLICK_ROLES,
)
from deskpilot.host.outcome import Outcome
from deskpilot.protocol.wire import Rect

#: the dispatcher's semantic op (None: the element cannot do it)
SemanticFn = Callable[[ElementRef, SemanticOp], Awaitable[Outcome | None]]
#: the dispatcher's pointer click at an element's centre, with a click count
PointerFn = Callable[[ElementRef, Rect, int], Awaitable[None]]
#: the element's action names, read now
NamesFn = Callable[[ElementRef], Awaitable[tuple[str, ...]]]

POINTER_SELECT_DETAIL = (
    "xtest left x1 at the item's centre: it has no accessible selection (no Selection "
    "container, no select action), and a real single click selects"
)
POINTER_ACTIVATE_DETAIL = (
    "xtest left x2 at the item's centre: it has no activate action, or it cannot be selected "
    "semantically first"
)


def clicked_item(element: ElementRef, elements: Mapping[int, ElementRef]) -> ElementRef | None:
    """The list/table/tree item a left click on ``element`` means, or None for anything else.

    The item itself, or the item a text label sits directly in: a GTK 4 list row is unnamed
    and its label child carries the text, so that is what an agent clicks."""
    if element.atspi_role in SELECT_ON_CLICK_ROLES:
        return element
    if element.role in ITEM_LABEL_ROLES and element.parent_id is not None:
        parent = elements.get(element.parent_id)
        if parent is not None and parent.atspi_role in SELECT_ON_CLICK_ROLES:
            return parent
    return None


def named_action(names: tuple[str, ...], wanted: tuple[str, ...]) -> str | None:
    """The first of ``wanted`` the element has, by exact case-insensitive name (never a
    prefix: GTK 4's "selection.delete" must not pass for "select")."""
    lowered = [n.lower() for n in names]
    for want in wanted:
        if want in lowered:
            return names[lowered.index(want)]
    return None


@dataclass(slots=True)
class ItemClicks:
    """The item rules, run with the dispatcher's primitives."""

    semantic: SemanticFn
    pointer: PointerFn
    action_names: NamesFn

    async def click(self, item: ElementRef, rect: Rect, count: int) -> Outcome | None:
        """Toggle a check box cell or select (count 1), or activate (count 2); None for a
        count that is no item gesture."""
        if count == 1:
            return await self.toggle(item) or await self.select(item, rect)
        if count == 2:
            return await self.activate(item, rect)
        return None

    async def toggle(self, item: ElementRef) -> Outcome | None:
        """A check box cell's own toggle action; None for any other item (or one whose
        toggle the app refused: then it is selected like any cell)."""
        name = named_action(item.actions, (TOGGLE_ACTION,))
        if name is None or item.atspi_role != R_TABLE_CELL:
            return None
        done = await self.semantic(item, SemanticOp.invoke(name))
        if done is not None:
            done.item_click = "toggle"
            done.detail = f"toggled the check box: {done.detail}"
        return done

    async def select(self, item: ElementRef, rect: Rect) -> Outcome:
        done = await self._select_semantically(item)
        if done is not None:
            done.item_click = "select"
            done.detail = f"selected, not activated: {done.detail}"
            return done
        await self.pointer(item, rect, 1)
        return Outcome("synthetic", POINTER_SELECT_DETAIL, item_click="select")

    async def activate(self, item: ElementRef, rect: Rect) -> Outcome:
        """A double click's first click selects the item, and apps act on that selection: a
        GTK tree view's row activation makes zenity print its *selected* row, so activating
        an unselected row alone returned the wrong one. The item is selected first; when it
        cannot be selected semantically, a real double click does both."""
        name = named_action(await self.action_names(item), ACTIVATE_ACTIONS)
        if name is not None and (selected := await self._select_semantically(item)) is not None:
            done = await self.semantic(item, SemanticOp.invoke(name))
            if done is not None:
                done.item_click = "activate"
                done.detail = f"selected ({selected.detail}), then activated: {done.detail}"
                return done
        await self.pointer(item, rect, 2)
        return Outcome("synthetic", POINTER_ACTIVATE_DETAIL, item_click="activate")

    async def _select_semantically(self, item: ElementRef) -> Outcome | None:
        """Select through the container's Selection, else the item's own "select" action;
        None when neither can."""
        done = await self.semantic(item, SemanticOp(OpKind.SELECT_CHILD))
        if done is None:
            name = named_action(await self.action_names(item), SELECT_ACTIONS)
            if name is not None:
                done = await self.semantic(item, SemanticOp.invoke(name))
        return done
