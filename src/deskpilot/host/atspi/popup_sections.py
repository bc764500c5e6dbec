"""A window's tree with the trees of the popups over it (menus, lists) appended as sections.

Each popup is read as a snapshot of its own (through the tree cache, like the window), and
shown after the window's tree as one more top-level outline whose root line says ``popup``:

    - window "Untitled 1 - Mousepad" [1]
      …
    - popup [13]
      - menu [14]
        - menuItem "Undo" [15]

A popup whose elements the tree shows already is left out: a GTK 3 combo box's open list is
a popup window of its own *and* the combo's child in the window's tree. So is one that shows
nothing below its root: a Qt combo box's or a Chromium ``<select>``'s list window, whose
options the combo shows (a click on such an empty line would land on some option).

Their elements carry where their popup lies (``ElementRef.popup_at``): an action on one is
refused once no popup is mapped there any more, or the element no longer says it is showing
(host/action_checks.py): a menu closed since the look would otherwise still run the item
(GTK), click what lies under it (Qt) or crash the app (Chromium, whose closed menu's items
still say they are showing).

Element ids are line numbers here (atspi/render.py), so a popup's ids move by the number of
lines before it, and its lines are renumbered to match; the window's id book then gives every
element, the popup's too, the id it keeps (atspi/element_ids.py). ``treeVersion`` is the hash
of the whole text, so a menu opening or closing changes it as any other change of what is
shown.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Final

from deskpilot.host.atspi.model import TreeSnapshot
from deskpilot.host.atspi.snapshot import tree_version
from deskpilot.protocol.wire import Rect, Truncation

#: the role word a popup's root line shows (whatever its own role: window, frame, menu)
POPUP_ROLE: Final = "popup"


def with_popups(main: TreeSnapshot, popups: Sequence[tuple[TreeSnapshot, Rect]]) -> TreeSnapshot:
    """``main`` with each of ``popups`` (a popup's tree, and where the popup lies on
    screen) appended as a section (see the module docstring)."""
    seen = {e.ref for e in main.elements.values()}
    shown: list[tuple[TreeSnapshot, Rect]] = []
    for p, at in popups:
        refs = {e.ref for e in p.elements.values()}
        if p.element_count > 1 and not refs & seen:
            shown.append((p, at))
            seen |= refs
    if not shown:
        return main
    lines = main.text.splitlines()
    elements = dict(main.elements)
    regions = list(main.sensitive_regions)
    focused = main.focused_id
    for popup, at in shown:
        offset = len(lines)
        section = popup.text.splitlines()
        for old in popup.elements:
            line = section[old - 1]
            suffix = f" [{old}]"
            if line.endswith(suffix):  # always: an element's line ends with its id
                section[old - 1] = f"{line[: -len(suffix)]} [{old + offset}]"
        if 1 in popup.elements:  # the popup's root: its first line (render.py keeps it)
            section[0] = _as_popup_root(section[0])
        for old, e in popup.elements.items():
            parent = e.parent_id + offset if e.parent_id is not None else None
            elements[old + offset] = dataclasses.replace(
                e, id=old + offset, parent_id=parent, popup_at=at
            )
        if popup.focused_id is not None:  # the keyboard is in the popup while it is open
            focused = popup.focused_id + offset
        lines += section
        regions += popup.sensitive_regions
    text = "\n".join(lines)
    trees = [p for p, _ in shown]
    count = main.element_count + sum(p.element_count for p in trees)
    return dataclasses.replace(
        main,
        text=text,
        tree_version=tree_version(text, count),
        element_count=count,
        elements=elements,
        truncation=_truncation(main.truncation, [p.truncation for p in trees]),
        sensitive_regions=regions,
        focused_id=focused,
        node_count=main.node_count + sum(p.node_count for p in trees),
        partial=main.partial or next((p.partial for p in trees if p.partial), None),
        unread_subtrees=main.unread_subtrees + sum(p.unread_subtrees for p in trees),
        details_unread=main.details_unread or any(p.details_unread for p in trees),
    )


def _as_popup_root(line: str) -> str:
    """The root line of a popup section, its role word replaced by ``popup``."""
    indent = len(line) - len(line.lstrip())
    rest = line[indent:]
    if not rest.startswith("- "):
        return line
    _, sep, tail = rest[2:].partition(" ")
    return f"{line[:indent]}- {POPUP_ROLE}{sep}{tail}"


def _truncation(main: Truncation, popups: list[Truncation]) -> Truncation:
    every = [main, *popups]
    return Truncation(
        omitted_elements=sum(t.omitted_elements for t in every),
        elided_children=sum(t.elided_children for t in every),
        noise_dropped=sum(t.noise_dropped for t in every),
        element_cap_hit=any(t.element_cap_hit for t in every),
        text_budget_hit=any(t.text_budget_hit for t in every),
        tree_unavailable=main.tree_unavailable,
    )
