"""The performers of the kinds whose fallback is the pointer: click, invoke_element, scroll,
drag and perform_secondary_action.

Semantic first where the element can do it (docs/host.md, "Actions": the dispatch table),
else XTEST at the element's centre or at the point of the observed image. A click on a
list, table or tree item follows :mod:`deskpilot.host.item_clicks`, a click on a toggling
combo option :mod:`deskpilot.host.combo_boxes`.
"""

from __future__ import annotations

import asyncio

from deskpilot.host.action_checks import to_screen
from deskpilot.host.atspi.model import ElementRef, OpKind, SemanticOp
from deskpilot.host.atspi.sheet_reads import sheet_cell
from deskpilot.host.atspi.vocab import ROLE_NUMBER
from deskpilot.host.combo_boxes import ComboBoxes
from deskpilot.host.element_states import TEXT_FIELD_ROLES, read_only
from deskpilot.host.item_clicks import ItemClicks, clicked_item
from deskpilot.host.observer import Binding
from deskpilot.host.outcome import Outcome
from deskpilot.host.primitives import Primitives
from deskpilot.host.sheet_cells import SheetCells
from deskpilot.host.text_entry import TextEntry
from deskpilot.host.x11.windows import XWindow
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import (
    ClickAction,
    DragAction,
    InvokeElementAction,
    Rect,
    ScrollAction,
)

#: deskpilot's own verb for keyboard focus, whatever the element's action names
FOCUS_ACTION_NAMES = frozenset({"focus", "grab_focus", "grabfocus"})
#: the AT-SPI roles of the items of a menu
MENU_ITEM_ROLES = frozenset(
    ROLE_NUMBER[r] for r in ("menu item", "check menu item", "radio menu item")
)


class PointerActions:
    def __init__(self, primitives: Primitives, entry: TextEntry) -> None:
        self._p = primitives
        self._entry = entry
        self._items = ItemClicks(
            primitives.semantic, primitives.pointer_click, primitives.action_names
        )
        self._combos = ComboBoxes(
            primitives.semantic,
            primitives.action_names,
            primitives.combo_parts,
            primitives.combo_of_option,
            primitives.pointer_click,
            primitives.popup_rects,
            primitives.click_inside,
        )
        self._cells = SheetCells(primitives)

    async def click(
        self,
        action: ClickAction,
        window: XWindow,
        rect: Rect,
        element: ElementRef | None,
        binding: Binding,
    ) -> Outcome:
        if element is None and action.point is None:
            raise DeskpilotError(ErrorCode.INVALID_REQUEST, "click needs elementId or point")
        if action.modifiers:
            return await self._held_click(action, window, rect, element)
        item = None
        if (
            element is not None
            and action.button == "left"
            and action.count in (1, 2)
            and sheet_cell(element)
        ):
            # a sheet's cell: a person's click makes it the current cell (sheet_cells.py)
            elements = binding.tree.snapshot.elements if binding.tree else {}
            return await self._cells.click(element, elements, window, rect, action.count)
        if element is not None and action.button == "left":
            # a row, cell, list item or option: one click selects, two activate (item_clicks)
            item = clicked_item(element, binding.tree.snapshot.elements if binding.tree else {})
        if item is not None:
            done = await self._items.click(item, rect, action.count)
            if done is not None:
                return done
        elif (
            element is not None
            and action.button == "left"
            and action.count == 1
            and element.role in TEXT_FIELD_ROLES
            and not read_only(element)
        ):
            # a person clicks a text field to type into it: the click is keyboard focus with
            # the caret in it (a GTK 3 entry's own "activate" action changes no focus). A
            # read-only one takes no typing: its click is a click (a date picker opens)
            return await self.focus_text(element, window, rect)
        elif element is not None and action.button == "left" and action.count == 1:
            qt_menu = await self._qt_menu_item_click(element, window, rect)
            if qt_menu is None:
                qt_menu = await self._qt_menu_button_click(element, window, rect)
            if qt_menu is not None:
                return qt_menu
            # an option of a <select> popup: choose it (never unchoose it) and close the popup
            done = await self._combos.click_option(element) or await self._p.semantic(
                element, SemanticOp.invoke()
            )
            if done is not None:
                return done
        if element is not None:
            x, y = await self._p.center(element, rect, window=window)
        else:
            assert action.point is not None
            x, y = to_screen(rect, action.point)
        await asyncio.to_thread(self._p.input().click, x, y, action.button.value, action.count)
        return Outcome("synthetic", f"xtest {action.button.value} x{action.count}")

    async def _held_click(
        self, action: ClickAction, window: XWindow, rect: Rect, element: ElementRef | None
    ) -> Outcome:
        """A click with keys held (a ctrl-click adds an item to a selection, a shift-click
        extends it): what a toolkit does with one is its own (a GTK tree view toggles the
        row, Thunar's icon view the file), and no accessible action says it, so it is a real
        pointer click at the element's centre (inside the window, uncovered) or the point,
        with the keys down."""
        if element is not None:
            x, y = await self._p.center(element, rect, window=window)
        else:
            assert action.point is not None
            x, y = to_screen(rect, action.point)
        held = list(action.modifiers)
        await asyncio.to_thread(
            self._p.input().click_holding, x, y, action.button.value, action.count, held
        )
        keys = "+".join(held)
        return Outcome("synthetic", f"xtest {keys}+{action.button.value} x{action.count}")

    async def _qt_menu_item_click(
        self, element: ElementRef, window: XWindow, rect: Rect
    ) -> Outcome | None:
        """A person's click on an item of an open Qt menu: Qt's own action for the item runs
        it but leaves the menus open (and the one under a submenu sends no event), where a
        click chooses and closes them all. None for anything else, or an item whose centre is
        neither inside the window nor inside an open popup (then its action is the way)."""
        if element.atspi_role not in MENU_ITEM_ROLES or "showing" not in element.states:
            return None
        if await self._p.toolkit(element) != "qt":
            return None
        try:
            x, y = await self._p.center(element, rect, window=window, in_popup=True)
        except DeskpilotError:
            return None
        await asyncio.to_thread(self._p.input().click, x, y, "left", 1)
        detail = "xtest left click on a Qt menu item (its action keeps menus open)"
        return Outcome("synthetic", detail)

    async def _qt_menu_button_click(
        self, element: ElementRef, window: XWindow, rect: Rect
    ) -> Outcome | None:
        """A person's click on a Qt tool button that only opens a menu (``InstantPopup``:
        its one action is ShowMenu): Qt's ShowMenu does nothing for it, where a click opens
        the menu. A button that also has Press keeps its action: a click on it presses it
        (its menu is behind the arrow). None for anything else; the centre must be inside
        the window and uncovered (else a refusal says so)."""
        if [a.lower() for a in element.actions] != ["showmenu"]:
            return None
        if await self._p.toolkit(element) != "qt":
            return None
        x, y = await self._p.center(element, rect, window=window)
        await asyncio.to_thread(self._p.input().click, x, y, "left", 1)
        return Outcome("synthetic", "xtest left click on a Qt menu button (ShowMenu opens nothing)")

    async def invoke(
        self,
        action: InvokeElementAction,
        window: XWindow,
        rect: Rect,
        element: ElementRef,
    ) -> Outcome:
        if action.action is not None and action.action.lower() in FOCUS_ACTION_NAMES:
            # "focus" is deskpilot's own verb (type_text/paste into an element send it first),
            # not an AT-SPI action name: keyboard focus through GrabFocus, else a click.
            return await self.focus_text(element, window, rect)
        done = await self._p.semantic(element, SemanticOp.invoke(action.action))
        if done is not None:
            return done
        if action.action is not None:
            raise DeskpilotError(
                ErrorCode.UNSUPPORTED_ACTION,
                "the element has no action of that name",
                details={"elementId": element.id, "available": list(element.actions)[:20]},
            )
        x, y = await self._p.center(element, rect, window=window)
        await asyncio.to_thread(self._p.input().click, x, y, "left", 1)
        return Outcome("synthetic", "xtest left click (no accessible action)")

    async def focus_text(self, element: ElementRef, window: XWindow, rect: Rect) -> Outcome:
        """Keyboard focus on an element, its caret at the end of its text when it takes the
        focus now, as docs/mcp.md promises (host/text_entry.py ``focus_for_typing``)."""
        return await self._entry.focus_for_typing(element, window, rect)

    async def scroll(self, action: ScrollAction, rect: Rect, element: ElementRef | None) -> Outcome:
        if element is not None:
            x, y = await self._p.center(element, rect)
        elif action.point is not None:
            x, y = to_screen(rect, action.point)
        else:
            x, y = rect.x + rect.width // 2, rect.y + rect.height // 2
        await asyncio.to_thread(self._p.input().scroll, x, y, action.direction.value, action.amount)
        return Outcome("synthetic", f"xtest wheel {action.direction.value} x{action.amount}")

    async def drag(self, action: DragAction, rect: Rect) -> Outcome:
        x0, y0 = to_screen(rect, action.start)
        x1, y1 = to_screen(rect, action.end)
        duration = (action.duration_ms or 300) / 1000
        await asyncio.to_thread(self._p.input().drag, x0, y0, x1, y1, min(duration, 10.0))
        return Outcome("synthetic", "xtest drag")

    async def secondary(self, window: XWindow, rect: Rect, element: ElementRef) -> Outcome:
        done = await self._p.semantic(element, SemanticOp(OpKind.SECONDARY))
        if done is not None:
            return done
        x, y = await self._p.center(element, rect, window=window)
        await asyncio.to_thread(self._p.input().click, x, y, "right", 1)
        return Outcome("synthetic", "xtest right click")
