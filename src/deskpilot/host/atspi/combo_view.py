"""How the outline shows a combo box: its options while closed, its open list under it.

A combo box keeps its options in a popup list (a child of role menu, list box or list) that
stays in the tree while it is closed. Toolkits differ in what they say of it (measured:
docs/host-tree.md, "Combo boxes"):

* Chromium and Qt 6 say EXPANDABLE, and EXPANDED while open; their closed list is hidden.
* GTK 3 says neither; its list is hidden while closed, showing while open.
* Qt 5 says neither, and its list reads as showing open or closed.
* Firefox says EXPANDABLE and never EXPANDED; its closed list is showing, with the chosen
  option showing and the others not. Its open list is another combo box, a child of the
  window's root (EXPANDED, unnamed, the same options) that the frame lists first.

The rules, pure over the nodes read (no calls):

* **closed** (EXPANDABLE without EXPANDED, or a list that is neither visible nor showing):
  the list is not shown — it is not on screen — and the combo's line names its options,
  ``[options: "Red", "Green", "Blue"]`` (a long list: its first ones, then how many more),
  so an agent can ``set_value`` one without opening it; the line says ``[collapsed]``.
* **detached open list** (Firefox): a combo box that is a child of the root, EXPANDED and
  unnamed, whose options are exactly a closed combo's, is that combo's open list: shown
  under it (not as a new section of the window), the combo ``[expanded]``. Two combos with
  the same options are told apart by the chosen one; still two: the list stays where it is.
* anything else (open, or Qt 5's, which cannot tell): shown as the toolkit says.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from deskpilot.host.atspi.collect import RawNode
from deskpilot.host.atspi.vocab import COMBO_POPUP_ROLES, COMBO_ROLES, State, bit

#: options looked at per combo box (a longer list is no list a person scrolls through)
MAX_OPTIONS_READ: Final = 500

_B_EXPANDABLE: Final = bit(State.EXPANDABLE)
_B_EXPANDED: Final = bit(State.EXPANDED)
_B_ON_SCREEN: Final = bit(State.VISIBLE) | bit(State.SHOWING)
_B_CHOSEN: Final = bit(State.SELECTED) | bit(State.CHECKED)


@dataclass(slots=True)
class ComboView:
    """What render does differently for the combo boxes of one tree."""

    #: popup lists not shown (a closed combo's; an adopted combo's own, a stale copy)
    hidden: set[int] = field(default_factory=set)
    #: closed combo -> its options' names, for the line
    options: dict[int, tuple[str, ...]] = field(default_factory=dict)
    #: combo -> whether its line says expanded (True) or collapsed (False)
    expanded: dict[int, bool] = field(default_factory=dict)
    #: combo -> the open list shown as its only child (a detached list it owns)
    adopted: dict[int, int] = field(default_factory=dict)
    #: detached lists' own nodes, not shown where they are (their list is under its combo)
    moved: set[int] = field(default_factory=set)


def combo_view(nodes: list[RawNode]) -> ComboView:
    """The combo boxes' rules applied to ``nodes`` (preorder, as read)."""
    view = ComboView()
    combos = [i for i, n in enumerate(nodes) if n.role in COMBO_ROLES]
    if not combos:
        return view
    closed: list[tuple[int, int, tuple[str, ...]]] = []  # (combo, popup, options)
    detached: list[tuple[int, int, tuple[str, ...]]] = []
    for i in combos:
        node = nodes[i]
        popup = next((c for c in node.children if nodes[c].role in COMBO_POPUP_ROLES), None)
        if popup is None:
            continue
        st = node.states
        if st & _B_EXPANDED:
            if node.parent == 0 and not node.name.strip():
                detached.append((i, popup, _names(nodes, popup)))
            continue
        if st & _B_EXPANDABLE or not nodes[popup].states & _B_ON_SCREEN:
            closed.append((i, popup, _names(nodes, popup)))
    for i, popup, names in closed:
        view.hidden.add(popup)
        if names:
            view.options[i] = names
        view.expanded[i] = False
    for d, popup, names in detached:
        owner = _owner(nodes, d, popup, names, closed)
        if owner is None:
            continue
        view.adopted[owner] = popup
        view.moved.add(d)
        view.options.pop(owner, None)
        view.expanded[owner] = True
    return view


def _names(nodes: list[RawNode], popup: int) -> tuple[str, ...]:
    """The list's options: its named descendants with no children, up to three levels down
    (an ``<optgroup>``'s options inside its group), in order."""
    out: list[str] = []

    def walk(children: list[int], depth: int) -> None:
        for c in children:
            if len(out) >= MAX_OPTIONS_READ:
                return
            n = nodes[c]
            if n.children:
                if depth < 3:
                    walk(n.children, depth + 1)
            elif n.name.strip():
                out.append(" ".join(n.name.split()))

    walk(nodes[popup].children, 1)
    return tuple(out)


def _chosen(nodes: list[RawNode], popup: int) -> str | None:
    for c in nodes[popup].children:
        if nodes[c].states & _B_CHOSEN:
            return nodes[c].name
    return None


def _owner(
    nodes: list[RawNode],
    detached: int,
    popup: int,
    names: tuple[str, ...],
    closed: list[tuple[int, int, tuple[str, ...]]],
) -> int | None:
    """The closed combo a detached open list belongs to: the one with the same options (the
    same chosen one, when two have them); None when none or still several do."""
    if not names:
        return None
    same = [(i, p) for i, p, n in closed if n == names and i != detached]
    if len(same) > 1:
        chosen = _chosen(nodes, popup)
        same = [(i, p) for i, p in same if _chosen(nodes, p) == chosen]
    return same[0][0] if len(same) == 1 else None
