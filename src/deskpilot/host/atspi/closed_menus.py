"""A Collection read that leaves out the items of closed menus (docs/host-tree.md, "How the
tree is read").

LibreOffice keeps every item of every menu of its menu bar in the tree, twice (its GTK 3 menu
bar and VCL's own, at height 0): in a Writer window ~1,700 of ~1,950 nodes are menu items and
separators that no closed menu shows. Reading each costs three calls, so they were most of
a Writer observe (~200 ms). A read with Collection therefore asks ``GetMatches`` for every
node *but* menu items and separators (``RULE``: any role but those — atk-bridge compares
MATCH_ANY roles in AT-SPI's numbering; MATCH_NONE would compare ATK's, which differs), then
reads in full (every role) the subtrees where what it left out could be shown: any node
missing children, except a menu in a menu bar (or in such a menu) that is not open — GTK 3
and LibreOffice mark an open one SELECTED — and anything hidden. An open menu's items, a
toolbar's separators, a popup menu's items, a menu item placed straight in a menu bar are
all read as before.

Chromium is always read whole: its cached tree must be exactly what a Collection read of
everything gives (``tree_patch.same_shape`` compares the two).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from deskpilot.host.atspi.vocab import ATSPI_ROLE_NAMES, ROLE_NUMBER, State, bit

if TYPE_CHECKING:
    from deskpilot.host.atspi.collect import RawNode

#: roles left out of the first GetMatches
LEFT_OUT: Final = frozenset(
    ROLE_NUMBER[r]
    for r in (
        "menu",
        "menu item",
        "check menu item",
        "radio menu item",
        "tearoff menu item",
        "separator",
    )
)
#: rounds of filling in what was left out (a left-out item's own children take a second)
MAX_ROUNDS: Final = 3

_R_MENU: Final = ROLE_NUMBER["menu"]
_R_MENU_BAR: Final = ROLE_NUMBER["menu bar"]
_B_OPEN: Final = bit(State.SELECTED) | bit(State.EXPANDED)


def _role_words() -> list[int]:
    """Every AT-SPI role but ``LEFT_OUT``, as the rule's bit set (signed 32-bit words)."""
    words = [0] * ((len(ATSPI_ROLE_NAMES) + 31) // 32)
    for role in range(len(ATSPI_ROLE_NAMES)):
        if role not in LEFT_OUT:
            words[role // 32] |= 1 << (role % 32)
    return [w - (1 << 32) if w >= 1 << 31 else w for w in words]


#: a Collection match rule: every state, every attribute, any role but ``LEFT_OUT``
RULE: Final[tuple[Any, ...]] = ([0, 0], 1, {}, 1, _role_words(), 2, [], 1, False)


def incomplete(nodes: list[RawNode]) -> list[int]:
    """The nodes missing children that may be needed: any node with fewer children read
    than it counts, unless it is a menu of a menu bar (or in one) that is not open. (A
    hidden combo box's menu counts: its items name the combo box's value.)"""
    out: list[int] = []
    closed = [False] * len(nodes)  # a closed menu of a menu bar, or in one
    for i, n in enumerate(nodes):
        p = n.parent
        if p >= 0:
            parent = nodes[p]
            closed[i] = closed[p] or (
                n.role == _R_MENU
                and parent.role in (_R_MENU_BAR, _R_MENU)
                and not n.states & _B_OPEN
            )
        if closed[i] or n.child_count < 0 or len(n.children) >= n.child_count:
            continue
        out.append(i)
    return out
