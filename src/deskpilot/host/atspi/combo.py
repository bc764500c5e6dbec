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

Only reads here; the choosing is ``host/combo_boxes.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from deskpilot.host.atspi.bus import I_ACCESSIBLE, I_SELECTION, ROOT_PATH, AtspiCallError, Conn
from deskpilot.host.atspi.model import NodeRef
from deskpilot.host.atspi.vocab import ROLE_NUMBER, State, bit, state_mask

#: a combo box's child that holds its options
POPUP_ROLES: Final = frozenset(ROLE_NUMBER[n] for n in ("menu", "list box", "list"))
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


async def read_combo(conn: Conn, combo: NodeRef) -> ComboParts | None:
    """The combo box's options and popup state; None when it has no popup list of options
    (an editable combo without one, an ARIA combobox whose list lives elsewhere)."""
    popup = None
    for child in await _children(conn, combo):
        if await _role(conn, child) in POPUP_ROLES:
            popup = child
            break
    if popup is None:
        return None
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
    ifaces = (await conn.call(combo.bus_name, combo.path, I_ACCESSIBLE, "GetInterfaces"))[0]
    combo_state = await _state(conn, combo)
    expanded = bool(combo_state & _B_EXPANDED) or bool(await _state(conn, popup) & _B_SHOWING)
    says_open = (
        bool(combo_state & _B_EXPANDED) if combo_state & (_B_EXPANDED | _B_EXPANDABLE) else None
    )
    return ComboParts(combo, popup, expanded, I_SELECTION in ifaces, tuple(options), says_open)


def match_option(options: tuple[ComboOption, ...], wanted: str) -> ComboOption | None:
    """The option named ``wanted``: exactly, else the one option whose name equals it ignoring
    case and surrounding blanks (None when none or several do)."""
    for option in options:
        if option.name == wanted:
            return option
    folded = wanted.strip().casefold()
    loose = [o for o in options if o.name.strip().casefold() == folded]
    return loose[0] if len(loose) == 1 else None
