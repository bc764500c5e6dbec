"""What Firefox (Gecko) says over AT-SPI that is not so, and how a read gets past it.

Measured on Debian 12's firefox-esr (Gecko 153, its own atk-bridge), docs/host-tree.md
("Firefox") has the long form:

* **Action names**: ``Action.GetActions`` answers every action with its key binding string in
  all three fields (";;", "<Alt>F;" for a menu); ``GetName(i)`` gives the real name ("press",
  "jump", "open", "select", "clickAncestor"). The snapshot reads names as it does Chromium's
  blank ones, and ``element_reads.action_names`` asks ``GetName`` where a triple is one string
  three times (``unreliable_name``).
* **Chrome it does not draw**: the auto-hidden menu bar's toolbar, the empty notification
  toolbar and the live-region announcer say SHOWING and VISIBLE, but have no layout: their
  extents are -1,-1,-1,-1. The window frame's children are the browser's chrome, so their
  extents are read (one batch of a few dozen calls) and those without an area are hidden.
* **Background documents**: the preloaded "New Tab" page (~25 nodes) and background tabs
  are VISIBLE but not SHOWING, under an internal frame that is not showing either: a
  document or internal frame that is not showing is hidden, with all below it.
* **A covered window** (another window over all of it): Firefox then says SHOWING of nothing
  below the frame, and VISIBLE of its toolbar buttons' closed menus ("Back", "New Tab"): a
  page is then told a background tab's by its title (not the selected tab's), and a
  button's menu is taken as closed. (A general "not showing → not listed" rule would list
  nothing of such a window.)
* **EditableText**: ``InsertText``, ``SetTextContents`` and ``DeleteText`` answer true and
  change nothing (page fields and the address bar alike). The host finds that out on the
  first field (it reads the field back) and types into Firefox's fields by keyboard focus
  and keys from then on, as a person does (host/text_entry.py).
* **<select>**: its combo box never says EXPANDED, and its open list is another combo box,
  a child of the window's frame (EXPANDED, unnamed, the same options), which the outline
  shows under the ``<select>`` it belongs to (atspi/combo_view.py). An option's own "select"
  action changes nothing; the list's ``Selection.SelectChild`` changes the value without the
  page's change event; the open list's options' "click" chooses as a person's click does
  (host/combo_boxes.py).

Only :func:`hide_undrawn` acts on a read; the rest are facts the other modules ask for.
"""

from __future__ import annotations

from typing import Final

from deskpilot.host.atspi.bus import I_COMPONENT, AtspiCallError, Call, Conn
from deskpilot.host.atspi.collect import RawNode
from deskpilot.host.atspi.vocab import DOCUMENT_ROLES, ROLE_NUMBER, State, bit

_B_SHOWING: Final = bit(State.SHOWING)
_B_EXPANDED: Final = bit(State.EXPANDED)
_B_ON_SCREEN: Final = bit(State.VISIBLE) | bit(State.SHOWING)
_B_SELECTED: Final = bit(State.SELECTED)
#: a page's document, and the internal frame a tab's page sits in
BACKGROUND_ROLES: Final = DOCUMENT_ROLES | {ROLE_NUMBER["internal frame"]}
_R_PAGE_TAB: Final = ROLE_NUMBER["page tab"]
_R_MENU: Final = ROLE_NUMBER["menu"]
_R_PUSH_BUTTON: Final = ROLE_NUMBER["push button"]


def unreliable_name(action: tuple[str, str, str] | list[str]) -> bool:
    """An action triple (name, description, key binding) whose name cannot be trusted: blank
    (Chromium), or one string three times (Firefox's key binding in every field)."""
    name = str(action[0])
    return not name or (len(action) >= 3 and name == action[1] == action[2])


async def hide_undrawn(conn: Conn, nodes: list[RawNode]) -> None:
    """Mark as hidden (VISIBLE and SHOWING cleared) what Firefox keeps but does not draw: a
    child of the root without an area on screen (other than an open ``<select>``'s list),
    and the pages of background tabs. One batch of ``GetExtents`` for the root's children;
    the rest is a pass over the nodes already read.

    A window another covers whole says SHOWING of nothing below its frame (and VISIBLE of
    its toolbar buttons' closed menus): then a page is a background tab's when its title is
    not the selected tab's, and a button's menu is closed."""
    if not nodes:
        return
    root = nodes[0]
    # an open <select>'s list is a combo box with no layout of its own (its list has one)
    kids = [
        c
        for c in root.children
        if nodes[c].states & _B_ON_SCREEN and not nodes[c].states & _B_EXPANDED
    ]
    drawn = []
    if kids:
        calls: list[Call] = [
            (nodes[c].bus, nodes[c].path, I_COMPONENT, "GetExtents", "u", (0,)) for c in kids
        ]
        for c, reply in zip(kids, await conn.batch(calls), strict=True):
            if isinstance(reply, AtspiCallError):
                continue
            _x, _y, width, height = reply[0]
            if int(width) <= 0 or int(height) <= 0:
                nodes[c].states &= ~_B_ON_SCREEN
            else:
                drawn.append(c)
    # covered: no drawn child says it shows (one without layout may still say so)
    covered = bool(drawn) and not any(nodes[c].states & _B_SHOWING for c in drawn)
    if not covered:
        for i, node in enumerate(nodes):
            if i and node.role in BACKGROUND_ROLES and not node.states & _B_SHOWING:
                node.states &= ~_B_ON_SCREEN
        return
    tab = next((n.name for n in nodes if n.role == _R_PAGE_TAB and n.states & _B_SELECTED), None)
    for i, node in enumerate(nodes):
        background = node.role in DOCUMENT_ROLES and tab is not None and node.name != tab
        closed_menu = node.role == _R_MENU and nodes[node.parent].role == _R_PUSH_BUTTON
        if i and (background or closed_menu):
            node.states &= ~_B_ON_SCREEN
