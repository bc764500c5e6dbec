"""GTK 2's open menus: gail never says a menu's items are showing, so an open menu is found
through its menu bar's selection.

GTK 2 apps (GIMP 2.10; their toolkit says ``GAIL``) export a menu bar's menus as GTK 3 does: a
``menu`` node per menu, its items as its children, a submenu as a ``menu`` among them. But
gail sets ``showing`` on none of the items, whether the menu is open or closed (both kinds say
``visible``), so the outline's rule for menus — an item is shown while it is showing
(atspi/render.py ``is_hidden``) — hid the items of an open menu too: an agent that opened
"Image" saw nothing open. Their extents do not tell either: a menu that was open once keeps
its items' last places after it closes.

What does tell is the selection: while a menu of a menu bar is open, the bar's
``Selection`` holds that menu (GTK's active menu item), and an open submenu is the selected
child of its menu; closing the menus (Escape, a click elsewhere, an item chosen) empties it.
So before the details are read, each menu bar that is showing is asked for its selected
child, then each menu found open for its own, level by level, and the visible items of an
open menu are marked showing. One ``Selection.GetSelectedChild`` per menu bar when no menu is
open (one call for GIMP), one more per open menu.
"""

from __future__ import annotations

from typing import Final

from deskpilot.host.atspi.bus import I_SELECTION, AtspiCallError, Conn
from deskpilot.host.atspi.collect import RawNode
from deskpilot.host.atspi.vocab import ROLE_NUMBER, State, bit

#: menus more deeply nested than this are not followed (GIMP's deepest is 4)
MAX_LEVELS: Final = 8

_R_MENU: Final = ROLE_NUMBER["menu"]
_R_MENU_BAR: Final = ROLE_NUMBER["menu bar"]
_B_VISIBLE: Final = bit(State.VISIBLE)
_B_SHOWING: Final = bit(State.SHOWING)


async def mark_open_menus(conn: Conn, nodes: list[RawNode]) -> list[int]:
    """Mark the visible items of every open menu as showing (see the module docstring);
    returns the menus found open (node indexes), outermost first."""
    level = [i for i, n in enumerate(nodes) if n.role == _R_MENU_BAR and n.states & _B_SHOWING]
    opened: list[int] = []
    for _ in range(MAX_LEVELS):
        if not level:
            break
        answers = await conn.batch(
            [
                (nodes[i].bus, nodes[i].path, I_SELECTION, "GetSelectedChild", "i", (0,))
                for i in level
            ]
        )
        found: list[int] = []
        for parent, answer in zip(level, answers, strict=True):
            menu = _selected_menu(nodes, parent, answer)
            if menu is not None:
                found.append(menu)
        for menu in found:
            opened.append(menu)
            for item in nodes[menu].children:
                if nodes[item].states & _B_VISIBLE:
                    nodes[item].states |= _B_SHOWING
        level = found
    return opened


def _selected_menu(nodes: list[RawNode], parent: int, answer: object) -> int | None:
    """The child of ``parent`` that ``answer`` (a GetSelectedChild reply) names, when it is a
    menu (an open one); None for no selection, an error, or a plain item."""
    if isinstance(answer, AtspiCallError) or not isinstance(answer, list) or not answer:
        return None
    ref = answer[0]
    if not isinstance(ref, (list, tuple)) or len(ref) != 2:
        return None
    path = str(ref[1])
    for child in nodes[parent].children:
        if nodes[child].path == path and nodes[child].role == _R_MENU:
            return child
    return None
