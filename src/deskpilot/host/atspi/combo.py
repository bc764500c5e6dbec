"""Read a combo box's options live: what a click on an option or a ``set_value`` needs.

A combo box (a Chromium ``<select>``, a GTK 3 ``GtkComboBox``) keeps its options in a popup
list — its child of role menu / list box / list — that exists in the tree even while the
popup is closed (hidden, so an observation does not show it). Choosing an option means
knowing which one is chosen now, whether the popup is open, and which way the toolkit lets
an option be chosen:

* GTK 3: the combo box implements Selection (``SelectChild(i)`` makes option ``i`` the active
  item, popup closed or open); its options' action is "click" (chooses and closes the popup).
* Chromium: the combo box has no Selection and its popup's ``SelectChild`` returns false; an
  option's only action is "select", which *toggles* it (on a chosen option it empties the
  ``<select>``) and leaves an open popup open; the combo's "open" action toggles the popup.
* Firefox: the combo box never says EXPANDED and its own list always says SHOWING; while it
  is open, the list a person sees is another combo box, a child of the window's frame
  (EXPANDED, unnamed, the same options: its *detached* list, atspi/gecko.py), whose options'
  "click" chooses. The combo's own options' "select" changes nothing.

Only reads here; the choosing is ``host/combo_boxes.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from deskpilot.host.atspi.bus import (
    I_ACCESSIBLE,
    I_SELECTION,
    ROOT_PATH,
    AtspiCallError,
    Call,
    Conn,
)
from deskpilot.host.atspi.model import NodeRef
from deskpilot.host.atspi.vocab import COMBO_POPUP_ROLES, ROLE_NUMBER, State, bit, state_mask

POPUP_ROLES: Final = COMBO_POPUP_ROLES
COMBO_BOX_ROLES: Final = frozenset({ROLE_NUMBER["combo box"]})
#: options read at most (a longer list is not a combo box a person scrolls through either)
MAX_OPTIONS: Final = 500
_B_SELECTED: Final = bit(State.SELECTED)
_B_EXPANDED: Final = bit(State.EXPANDED)
_B_EXPANDABLE: Final = bit(State.EXPANDABLE)
_B_SHOWING: Final = bit(State.SHOWING)
_NULL_PATHS: Final = ("/org/a11y/atspi/null", ROOT_PATH)


@dataclass(frozen=True, slots=True)
class ComboOption:
    ref: NodeRef
    name: str
    index: int  # among the popup's children (what the combo's Selection counts)
    selected: bool


@dataclass(frozen=True, slots=True)
class ComboParts:
    """A combo box as it is now: its options, whether its popup is open, what it offers."""

    combo: NodeRef
    popup: NodeRef
    #: the popup is open: the combo is ``expanded`` (Chromium) or its list is showing (GTK)
    expanded: bool
    #: the combo box implements Selection over its options (GTK 3)
    has_selection: bool
    options: tuple[ComboOption, ...]
    #: the combo box's own word on its popup: open (EXPANDED) or closed (EXPANDABLE only);
    #: None when it says neither (Qt 5, whose closed popup list even reads as showing)
    says_open: bool | None = None
    #: its list a person sees lives elsewhere while open (Firefox): its own options are a
    #: copy whose actions change nothing
    detached: bool = False
    #: the options of its detached list while that is open (what a click chooses in)
    open_options: tuple[ComboOption, ...] = ()
    #: the combo box's own name (GTK 3 and Qt name it after the chosen option)
    name: str = ""


async def _role(conn: Conn, ref: NodeRef) -> int:
    return int((await conn.call(ref.bus_name, ref.path, I_ACCESSIBLE, "GetRole"))[0])


async def _parent(conn: Conn, ref: NodeRef) -> NodeRef | None:
    parent = await conn.get_property(ref.bus_name, ref.path, I_ACCESSIBLE, "Parent")
    if not parent or parent[1] in _NULL_PATHS:
        return None
    return NodeRef(str(parent[0]) or ref.bus_name, str(parent[1]))


async def _children(conn: Conn, ref: NodeRef) -> list[NodeRef]:
    kids = (await conn.call(ref.bus_name, ref.path, I_ACCESSIBLE, "GetChildren"))[0]
    return [NodeRef(str(b) or ref.bus_name, str(p)) for b, p in kids[:MAX_OPTIONS]]


async def _state(conn: Conn, ref: NodeRef) -> int:
    return state_mask((await conn.call(ref.bus_name, ref.path, I_ACCESSIBLE, "GetState"))[0])


async def combo_of_option(conn: Conn, option: NodeRef) -> NodeRef | None:
    """The combo box whose popup list ``option`` is in (option → menu/list → combo box), or
    None when it is an item of anything else (a menu bar's menu, a list)."""
    popup = await _parent(conn, option)
    if popup is None or await _role(conn, popup) not in POPUP_ROLES:
        return None
    combo = await _parent(conn, popup)
    if combo is None or await _role(conn, combo) not in COMBO_BOX_ROLES:
        return None
    return combo


async def read_combo(conn: Conn, combo: NodeRef, detached: bool = False) -> ComboParts | None:
    """The combo box's options and popup state; None when it has no popup list of options
    (an editable combo without one, an ARIA combobox whose list lives elsewhere).
    ``detached``: the app keeps the list a person sees apart while it is open (Firefox)."""
    popup = None
    for child in await _children(conn, combo):
        if await _role(conn, child) in POPUP_ROLES:
            popup = child
            break
    if popup is None:
        return None
    options = await _options(conn, popup)
    ifaces = (await conn.call(combo.bus_name, combo.path, I_ACCESSIBLE, "GetInterfaces"))[0]
    name = str(await conn.get_property(combo.bus_name, combo.path, I_ACCESSIBLE, "Name") or "")
    combo_state = await _state(conn, combo)
    popup_showing = bool(await _state(conn, popup) & _B_SHOWING)
    says_open = (
        bool(combo_state & _B_EXPANDED) if combo_state & (_B_EXPANDED | _B_EXPANDABLE) else None
    )
    # Firefox's combo never says it is open: its open list is found by its options
    open_options: tuple[ComboOption, ...] = ()
    if detached and not combo_state & _B_EXPANDED:
        open_options = await _detached_list(conn, combo, options)
    if open_options:
        says_open = True
    expanded = bool(says_open) or (says_open is None and popup_showing)
    return ComboParts(
        combo,
        popup,
        expanded,
        I_SELECTION in ifaces,
        options,
        says_open,
        detached,
        open_options,
        name,
    )


async def _options(conn: Conn, popup: NodeRef) -> tuple[ComboOption, ...]:
    options = []
    for index, ref in enumerate(await _children(conn, popup)):
        try:
            props = await conn.get_all(ref.bus_name, ref.path, I_ACCESSIBLE)
            state = await _state(conn, ref)
        except AtspiCallError as exc:
            if exc.gone:
                continue
            raise
        options.append(
            ComboOption(ref, str(props.get("Name") or ""), index, bool(state & _B_SELECTED))
        )
    return tuple(options)


async def _detached_list(
    conn: Conn, combo: NodeRef, options: tuple[ComboOption, ...]
) -> tuple[ComboOption, ...]:
    """The options of ``combo``'s open list where the app keeps it apart (Firefox: an
    EXPANDED, unnamed combo box that is a child of a window's frame, with the same option
    names); () when no such list is open."""
    names = [o.name for o in options]
    root = NodeRef(combo.bus_name, ROOT_PATH)
    for frame in await _children(conn, root):
        kids = [k for k in await _children(conn, frame) if k != combo]
        calls: list[Call] = []
        for k in kids:
            calls.append((k.bus_name, k.path, I_ACCESSIBLE, "GetRole", "", ()))
            calls.append((k.bus_name, k.path, I_ACCESSIBLE, "GetState", "", ()))
        replies = await conn.batch(calls)
        for j, child in enumerate(kids):
            role, state = replies[2 * j], replies[2 * j + 1]
            if isinstance(role, AtspiCallError) or isinstance(state, AtspiCallError):
                continue
            if int(role[0]) not in COMBO_BOX_ROLES or not state_mask(state[0]) & _B_EXPANDED:
                continue
            for part in await _children(conn, child):
                if await _role(conn, part) in POPUP_ROLES:
                    found = await _options(conn, part)
                    if [o.name for o in found] == names:
                        return found
    return ()


def match_option(options: tuple[ComboOption, ...], wanted: str) -> ComboOption | None:
    """The option named ``wanted``: exactly, else the one option whose name equals it ignoring
    case and surrounding blanks (None when none or several do)."""
    for option in options:
        if option.name == wanted:
            return option
    folded = wanted.strip().casefold()
    loose = [o for o in options if o.name.strip().casefold() == folded]
    return loose[0] if len(loose) == 1 else None
