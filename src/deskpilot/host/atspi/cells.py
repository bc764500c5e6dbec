"""A GTK 3 tree view's cell that packs several renderers is one cell, named by its text.

A column of a ``GtkTreeView`` may draw a row with several cell renderers: an icon and a name
in a file list, or Thunar's side pane, whose one column has seven (a heading, padding, an
icon, the name, an eject button, a spinner…). GTK's accessible for such a cell is a container
cell with one child cell per renderer, every one of them with the same three actions, the
ones not drawn with no size, and the name in two of them. So Thunar's six places read as 48
cells, half of them nameless, each place twice, and a file of its detailed list as an
unnamed cell holding an unnamed one and the file's name.

A container cell (a cell whose children are all childless cells) is shown as one cell named
by its renderers' distinct texts in order ("Computer", "alpha.txt"); a renderer adds nothing
of its own when it has no value and no state word its container lacks (a toggle
renderer's ``checked`` is its own), and is then left out (``merged``). Its container keeps
its actions: a click on it selects the row, as a click on any of its renderers did.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from deskpilot.host.atspi.collect import RawNode
from deskpilot.host.atspi.vocab import ROLE_NUMBER, State, bit

R_TABLE_CELL: Final = ROLE_NUMBER["table cell"]
_B_EXPANDABLE: Final = bit(State.EXPANDABLE)
#: GTK's cells all offer this action, expandable or not: shown only where it does something
EXPAND_ACTION: Final = "expand or contract"
#: a check box drawn in a cell (GTK's toggle renderer) says so only by this action: its
#: states are a text cell's, with CHECKED when ticked and nothing when not
TOGGLE_ACTION: Final = "toggle"


def merged_renderers(
    nodes: Sequence[RawNode],
    names: list[str],
    cells: Sequence[int],
    shown: Callable[[int], bool],
    words: Callable[[RawNode], list[str]],
) -> list[int]:
    """Name each container cell among ``cells`` (shown cells with children) after its
    renderers (in ``names``, where it has none of its own) and return the renderers that add
    nothing to it. ``shown``: whether a node is not hidden (a hidden renderer lends no
    name); ``words``: a node's rendered state words."""
    merged: list[int] = []
    for i in cells:
        n = nodes[i]
        kids = n.children
        if any(nodes[c].role != R_TABLE_CELL or nodes[c].children for c in kids):
            continue
        texts: list[str] = []
        for c in kids:
            if shown(c) and names[c] and names[c] not in texts:
                texts.append(names[c])
        if not names[i]:
            names[i] = " ".join(texts)
        own = set(words(n))
        for c in kids:
            child = nodes[c]
            if shown(c) and not child.value and set(words(child)) <= own:
                merged.append(c)
    return merged


def shown_cell_actions(node: RawNode) -> tuple[str, ...] | None:
    """A cell's actions without "expand or contract" unless it can expand (GTK lists it on
    every cell of a tree view, a flat file list's too); a check box cell's only toggle."""
    actions = node.actions
    if toggles(node):
        # GTK's toggle cell lists its text cell's actions after Toggle, named by their
        # descriptions ("Creates a widget in which the contents o…"): a check box toggles
        return tuple(a for a in actions or () if a.lower() == TOGGLE_ACTION)
    if actions is None or node.role != R_TABLE_CELL or node.states & _B_EXPANDABLE:
        return actions
    return tuple(a for a in actions if a.lower() != EXPAND_ACTION)


def toggles(node: RawNode) -> bool:
    """A cell that is a check box (its ``[checked]``/``[unchecked]`` is its answer, even
    with no text: zenity's checklist, a file chooser's options)."""
    return node.role == R_TABLE_CELL and any(a.lower() == TOGGLE_ACTION for a in node.actions or ())
