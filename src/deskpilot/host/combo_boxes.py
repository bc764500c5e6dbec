"""Choosing an option of a combo box, as a person's click in its popup does.

A person's click on an option of an open ``<select>`` popup chooses it and closes the popup;
a click on the option already chosen keeps it. The option's own AT-SPI action does not do
that everywhere (see ``atspi/combo.py`` for what each toolkit exposes):

* **Chromium**: the option's only action is "select", which *toggles* it (on the chosen
  option it empties the ``<select>`` — a state no mouse can produce) and leaves the popup
  open. So a left click on such an option runs "select" only when the option is not chosen
  yet, then closes the popup with the combo box's own action ("open" toggles it) when it is
  still expanded.
* **GTK 3**: the option's action is "click", which chooses and closes the popup as a real
  click does; such options keep the ordinary invoke (no rule here).
* **Firefox**: the list a person sees is a detached one (atspi/combo.py); its options'
  "click" chooses and closes as a real click does, so they keep the ordinary invoke too.

``set_value`` on a combo box (one without text of its own) with an option's name chooses
that option without opening the popup: through the combo box's Selection (GTK 3), else the
option's "select" action when it is not chosen yet (Chromium), else as a person does — the
combo box's own action opens the popup and a pointer click chooses the option (Qt), or,
where the list is detached (Firefox: its own options' "select" changes nothing, and its
list's ``SelectChild`` changes the value without the page's change event), the option's
"click" in the open list. A name that is none of the options is refused before anything is
dispatched.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from deskpilot.host.atspi.combo import ComboOption, ComboParts, match_option
from deskpilot.host.atspi.model import ElementRef, NodeRef, OpKind, SemanticOp
from deskpilot.host.atspi.vocab import CLICK_ACTIONS, COMBO_ROLES, ROLE_NUMBER, SELECT_ACTIONS
from deskpilot.host.item_clicks import NamesFn, PointerFn, SemanticFn, named_action
from deskpilot.host.outcome import Outcome
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import Rect

#: the combo box (or an option's combo box) read now; None when it has no options list
PartsFn = Callable[[ElementRef], Awaitable[ComboParts | None]]
#: the window brought to the front, as a person does before opening a list in it (a covered
#: Firefox window opens no list)
FrontFn = Callable[[], Awaitable[object]]
#: where the mapped popups are now
PopupsFn = Callable[[], list[Rect]]
#: a click at an element's centre if it lies inside an area (False: it does not, none sent)
ClickInsideFn = Callable[[ElementRef, Rect], Awaitable[bool]]

R_MENU_ITEM = ROLE_NUMBER["menu item"]
R_LIST_ITEM = ROLE_NUMBER["list item"]
#: how long an opened popup may take to show its options
POPUP_WAIT_S = 1.5
#: how long a chosen option may take to say it is chosen
CHOSEN_WAIT_S = 0.5
R_COMBO_BOX = ROLE_NUMBER["combo box"]
ALREADY_CHOSEN = "the option is already chosen (its 'select' action would unchoose it)"


def _live(ref: NodeRef, like: ElementRef, role: str, atspi_role: int) -> ElementRef:
    """An element for a node the observation did not show (a hidden option, the combo of an
    option): interfaces and actions are read live when it is acted on."""
    return ElementRef(
        id=like.id,
        ref=ref,
        pid=like.pid,
        role=role,
        atspi_role=atspi_role,
        name="",
        states=frozenset(),
        interfaces=frozenset(),
        actions=(),
        extents=None,
    )


@dataclass(slots=True)
class ComboBoxes:
    """The combo box rules, run with the dispatcher's primitives."""

    semantic: SemanticFn
    action_names: NamesFn
    parts_of: PartsFn
    combo_of_option: PartsFn
    pointer: PointerFn
    popups: PopupsFn
    click_inside: ClickInsideFn

    async def click_option(self, item: ElementRef) -> Outcome | None:
        """A left single click on an option of a combo box whose options only toggle (see
        the module doc); None for anything else, which keeps the ordinary click."""
        if item.atspi_role != R_MENU_ITEM:
            return None
        names = await self.action_names(item)
        if named_action(names, CLICK_ACTIONS) is not None:
            return None  # GTK 3: "click" chooses and closes, as a person's click
        if named_action(names, SELECT_ACTIONS) is None:
            return None
        parts = await self.combo_of_option(item)
        option = _option_at(parts, item.ref) if parts is not None else None
        if parts is None or option is None:
            return None
        return await self._choose(parts, option, item)

    async def set_value(
        self, element: ElementRef, value: str, rect: Rect, front: FrontFn | None = None
    ) -> Outcome | None:
        """Choose the option named ``value`` of a combo box; None when the element is no
        combo box with an options list (the ordinary set_value rules apply). Raises
        UNSUPPORTED_ACTION (reason ``not_an_option``) when no option has that name."""
        if element.atspi_role not in COMBO_ROLES or "EditableText" in element.interfaces:
            return None
        parts = await self.parts_of(element)
        if parts is None or not parts.options:
            return None
        option = match_option(parts.options, value)
        if option is None:
            raise DeskpilotError(
                ErrorCode.UNSUPPORTED_ACTION,
                f"the combo box has no option with that name (it has {len(parts.options)} "
                "options): set_value takes the text of one of them",
                details={
                    "elementId": element.id,
                    "reason": "not_an_option",
                    "optionCount": len(parts.options),
                },
            )
        return await self._choose(parts, option, element, rect, front)

    async def _choose(
        self,
        parts: ComboParts,
        option: ComboOption,
        like: ElementRef,
        rect: Rect | None = None,
        front: FrontFn | None = None,
    ) -> Outcome:
        """Make ``option`` the chosen one and leave the popup closed (``rect``: the window's,
        where a person's two clicks may go when nothing semantic chooses)."""
        combo = _live(parts.combo, like, "comboBox", R_COMBO_BOX)
        done = None
        if parts.has_selection:
            done = await self.semantic(combo, SemanticOp(OpKind.CHOOSE_OPTION, index=option.index))
        if done is None and not option.selected and parts.detached:
            return await self._choose_in_open_list(parts, option, like, front)
        if done is None and not option.selected:
            target = _live(option.ref, like, "menuItem", R_MENU_ITEM)
            done = await self.semantic(target, SemanticOp.invoke(SELECT_ACTIONS[0]))
        if done is not None and not await self._chosen(combo, option):
            done = None  # the app answered and chose nothing: a person's way, if there is one
        if done is None and not option.selected:
            if rect is not None:
                return await self._choose_by_pointer(parts, option, like, rect, front)
            raise _needs_clicks(like)
        steps = [done.detail if done is not None else ALREADY_CHOSEN]
        closed = await self._close_popup(combo)
        if closed is not None:
            steps.append(f"then closed the popup: {closed.detail}")
        first = done or closed
        detail = f"chose option {option.index + 1} of {len(parts.options)}: " + ", ".join(steps)
        if first is None:
            return Outcome("none", detail, dispatched=False)
        return Outcome(
            "semantic", detail, events_since=first.events_since, answered_at=first.answered_at
        )

    async def _choose_by_pointer(
        self,
        parts: ComboParts,
        option: ComboOption,
        like: ElementRef,
        rect: Rect,
        front: FrontFn | None = None,
    ) -> Outcome:
        """A person's way where no action chooses (Qt: the popup's SelectChild and an option's
        Toggle answer true and change nothing): open the popup with the combo box's own
        action, wait until it shows, click the option. Refused, the popup closed again, when
        the option never shows inside the window."""
        combo = _live(parts.combo, like, "comboBox", R_COMBO_BOX)
        if parts.says_open is None:
            return await self._choose_in_new_popup(parts, option, like, front)
        opened = None
        if front is not None:
            await front()
        if not parts.says_open:
            opened = await self.semantic(combo, SemanticOp.invoke())
        deadline = time.monotonic() + POPUP_WAIT_S
        while True:
            now = await self.parts_of(combo)
            if now is not None and now.says_open:
                try:
                    await self.pointer(_live(option.ref, like, "listItem", R_LIST_ITEM), rect, 1)
                except DeskpilotError:
                    pass  # not laid out yet, or outside the window
                else:
                    how = "opened the popup with its action, " if opened is not None else ""
                    return Outcome("synthetic", f"{how}clicked option {option.index + 1}")
            if time.monotonic() > deadline:
                await self._close_popup(combo)
                raise _needs_clicks(like)
            await asyncio.sleep(0.05)

    async def _choose_in_new_popup(
        self, parts: ComboParts, option: ComboOption, like: ElementRef, front: FrontFn | None
    ) -> Outcome:
        """Qt 5: its combo box cannot say whether its list is open (the closed list reads as
        showing, its options at stale places: a click there could land on anything). A
        person's way still tells: open it with its own action, and once a popup window is
        mapped that was not before, click the option where it lies inside that popup.
        Refused when none opens, or the option is not inside it."""
        combo = _live(parts.combo, like, "comboBox", R_COMBO_BOX)
        if front is not None:
            await front()
        before = self.popups()
        if await self.semantic(combo, SemanticOp.invoke()) is None:
            raise _needs_clicks(like)
        target = _live(option.ref, like, "listItem", R_LIST_ITEM)
        deadline = time.monotonic() + POPUP_WAIT_S
        while True:
            for area in self.popups():
                if area not in before and await self.click_inside(target, area):
                    return Outcome(
                        "synthetic",
                        f"opened the popup with its action, clicked option {option.index + 1} "
                        "in the popup that opened",
                    )
            if time.monotonic() > deadline:
                raise _needs_clicks(like)
            await asyncio.sleep(0.05)

    async def _chosen(self, combo: ElementRef, option: ComboOption) -> bool:
        """Whether ``option`` is the chosen one now — it says it is selected, or the combo
        box is named after it (GTK 3, Qt) — read until it is (up to ``CHOSEN_WAIT_S``:
        Chromium's renderer chooses a moment after the call answers)."""
        deadline = time.monotonic() + CHOSEN_WAIT_S
        while True:
            now = await self.parts_of(combo)
            if now is None:
                return False
            if now.name == option.name or any(
                o.selected and o.name == option.name for o in now.options
            ):
                return True
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.03)

    async def _choose_in_open_list(
        self, parts: ComboParts, option: ComboOption, like: ElementRef, front: FrontFn | None
    ) -> Outcome:
        """A person's way where the list a person sees is detached (Firefox): open it with
        the combo box's own action, wait until it shows, and click the option there (its
        "click" chooses and closes it, and the page hears a change). Refused when the list
        never shows."""
        combo = _live(parts.combo, like, "comboBox", R_COMBO_BOX)
        opened = None
        now: ComboParts | None = parts
        if not parts.open_options:
            if front is not None:
                await front()
            opened = await self.semantic(combo, SemanticOp.invoke())
            if opened is None:
                raise _needs_clicks(like)
            now = None
        deadline = time.monotonic() + POPUP_WAIT_S
        while True:
            if now is None:
                now = await self.parts_of(combo)
            listed = now.open_options if now is not None else ()
            if option.index < len(listed) and listed[option.index].name == option.name:
                target = _live(listed[option.index].ref, like, "menuItem", R_MENU_ITEM)
                done = await self.semantic(target, SemanticOp.invoke())
                if done is None:
                    raise _needs_clicks(like)
                how = "opened its list with its action, then " if opened is not None else ""
                first = opened or done
                return Outcome(
                    "semantic",
                    f"chose option {option.index + 1} of {len(parts.options)}: {how}"
                    f"{done.detail} on the option in the open list",
                    events_since=first.events_since,
                    answered_at=first.answered_at,
                )
            if time.monotonic() > deadline:
                raise _needs_clicks(like)
            now = None
            await asyncio.sleep(0.05)

    async def _close_popup(self, combo: ElementRef) -> Outcome | None:
        """The combo box's own action (Chromium "open", GTK "press" toggle the popup) when its
        popup is open now; None when it is closed."""
        now = await self.parts_of(combo)
        if now is None or not now.expanded:
            return None
        return await self.semantic(combo, SemanticOp.invoke())


def _needs_clicks(like: ElementRef) -> DeskpilotError:
    return DeskpilotError(
        ErrorCode.UNSUPPORTED_ACTION,
        "the combo box's options cannot be chosen without opening it: click the combo box, "
        "then the option",
        details={"elementId": like.id, "reason": "combo_needs_clicks"},
    )


def _option_at(parts: ComboParts, ref: NodeRef) -> ComboOption | None:
    for option in parts.options:
        if option.ref == ref:
            return option
    return None
