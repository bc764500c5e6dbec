"""Unnamed fields named by the named, empty placeholder they sit on.

LibreOffice with its GTK 3 plugin draws the combo boxes of its Formatting toolbar (paragraph
style, font name, font size) as GTK widgets of their own, children of the window, with no
name and no label; its own toolbar keeps a named item where each one sits ("Paragraph
Style", "Font Name", "Font Size") that shows nothing itself. So the outline read
``textField = "Liberation Serif"`` with nothing to say what it was. A field with no name, no
LABELLED_BY label and no label beside it (collect.py ``_labels``) takes the name of the
smallest such placeholder its centre lies in (across; down, within a row's height: VCL
leaves the GTK menu bar out of its items' y, so the two can be 25 px apart): a named
container with nothing named below it and a child the tree does not reach in it (the
widget is drawn elsewhere), at most three times the field's area (a panel the field merely
lies in, such as the sidebar's deck, names nothing). The sidebar's own fields have no such
place and no label: they stay unnamed, their values ("Liberation Serif", "12 pt") say what
they hold.

Cost: the extents of the placeholders and of the fields still unnamed, in the batch that
reads the labels' extents — only in a window that has both (LibreOffice: eight calls; none
in a GTK 4 app, whose cache leaves no child unreached).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from deskpilot.host.atspi.vocab import (
    GENERIC_CONTAINER_ROLES,
    LABELLED_ROLES,
    ROLE_NUMBER,
    TEXT_LEAF_ROLES,
    State,
    bit,
)

if TYPE_CHECKING:
    from deskpilot.host.atspi.collect import RawNode

#: most placeholders whose extents one read asks for
MAX_PLACEHOLDERS: Final = 32
#: a placeholder is the field's own place: at most this many times its area (the toolbar
#: item holds the field and its drop-down button)
MAX_AREA_RATIO: Final = 3

_B_VISIBLE_ANY: Final = bit(State.VISIBLE) | bit(State.SHOWING)
_R_TOOL_BAR: Final = ROLE_NUMBER["tool bar"]
#: containers that can stand for a widget (labels and paragraphs are text, not places)
_HOLDER_ROLES: Final = GENERIC_CONTAINER_ROLES - TEXT_LEAF_ROLES


def placeholders(nodes: list[RawNode]) -> list[int]:
    """Named containers, visible, with nothing named below them and a child the tree does
    not reach in them: the widget drawn elsewhere (a node counting more children than it
    gives) — or, for a toolbar's item, the unnamed field itself, where a walk reached it
    through the item (which lists it as its child while its Parent says the window). Only a
    toolbar's: an unnamed field inside any other named container (GTK's file chooser's
    location entry in its "Location Layer" group) is not named by it."""
    named_below = [False] * len(nodes)
    hole_below = [False] * len(nodes)
    field_below = [False] * len(nodes)
    for i in range(len(nodes) - 1, 0, -1):
        n = nodes[i]
        if 0 <= len(n.children) < n.child_count:
            hole_below[i] = True
        if n.parent >= 0:
            if n.name.strip() or named_below[i]:
                named_below[n.parent] = True
            hole_below[n.parent] |= hole_below[i]
            unnamed_field = n.role in LABELLED_ROLES and not n.name.strip()
            field_below[n.parent] |= field_below[i] or unnamed_field
    out = [
        i
        for i, n in enumerate(nodes)
        if i
        and n.role in _HOLDER_ROLES
        and n.name.strip()
        and not named_below[i]
        and (hole_below[i] or (field_below[i] and nodes[n.parent].role == _R_TOOL_BAR))
        and n.states & _B_VISIBLE_ANY
    ]
    return out[:MAX_PLACEHOLDERS]


def name_by_place(nodes: list[RawNode], fields: list[int], holders: list[int]) -> None:
    """Name each unnamed field of ``fields`` after the smallest placeholder its centre lies
    in (extents read already; a field or placeholder without them is left alone)."""
    for i in fields:
        n = nodes[i]
        if n.name.strip() or n.extents is None:
            continue
        x, y, w, h = n.extents
        if w <= 0 or h <= 0:
            continue
        cx, cy = x + w // 2, y + h // 2
        best: tuple[int, str] | None = None
        for j in holders:
            e = nodes[j].extents
            if e is None or e[2] <= 0 or e[3] <= 0:
                continue
            area = e[2] * e[3]
            if area > MAX_AREA_RATIO * w * h:
                continue  # a panel the field is in, not its place (the sidebar's deck)
            # the two are placed by different code (GTK's widget, VCL's toolbar item), and
            # VCL leaves the GTK menu bar out of its y: 25 px apart, so the row may be off
            # by up to a height
            hy = e[1] + e[3] // 2
            inside = e[0] <= cx < e[0] + e[2] and abs(hy - cy) <= max(h, e[3])
            if inside and (best is None or area < best[0]):
                best = (area, " ".join(nodes[j].name.split()))
        if best is not None:
            n.name = best[1]
