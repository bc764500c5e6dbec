"""What a click on a list, table or tree item did, told to the agent in the result.

The host decides what a left click on an item means (``host/item_clicks.py``): one click
selects it, two activate it, one on a check box cell flips the box; it reports which
(``ActionResult.item_click``) and, through the method, whether that went through
accessibility or had to be a real pointer click. The agent is told so in words, and the new
state is checked: for a selection the item (or the row of a cell, the row of a label) must
show ``[selected]`` there, for a toggle the box must show the other of ``[checked]`` /
``[unchecked]``; when it does not the result says so rather than letting the agent assume it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from deskpilot.protocol.tree import parse_tree
from deskpilot.protocol.wire import ActionResult
from deskpilot.runtime.tree import remap


@dataclass(frozen=True, slots=True)
class ItemClick:
    """A click the host treated as a click on an item."""

    what: Literal["select", "activate", "toggle"]
    semantic: bool
    element_id: int

    @classmethod
    def of(cls, result: ActionResult, element_id: int | None) -> ItemClick | None:
        if result.item_click is None or element_id is None:
            return None
        return cls(result.item_click, result.method == "semantic", element_id)

    def note(self, old_tree: str, new_tree: str | None) -> str:
        """One or two sentences for the result: what the click did, and for a selection
        whether the new state shows it."""
        if self.what == "toggle":
            said = (
                "The click flipped the check box in the cell (its toggle action), as a "
                "person's click on the box does; it did not select or activate the row."
            )
            return f"{said} {self._toggle_shown(old_tree, new_tree)}"
        if self.what == "activate":
            how = "its activate action" if self.semantic else "a real double click at its centre"
            return f"The double click activated the item ({how})."
        if self.semantic:
            said = (
                "The click selected the item through accessibility; it did not activate it "
                "(one click on a list, table or tree item selects it: click it with count 2 to "
                "activate or open it)."
            )
        else:
            said = (
                "The item offers no accessible selection, so a real single click was sent at "
                "its centre (in GTK and Chromium lists that selects; it was not sent as the "
                "item's activate action). Click it with count 2 to activate or open it."
            )
        return f"{said} {self._selection_shown(old_tree, new_tree)}"

    def _selection_shown(self, old_tree: str, new_tree: str | None) -> str:
        new_id = remap(old_tree, new_tree, self.element_id) if new_tree is not None else None
        if new_tree is None or new_id is None:
            return "Whether it is selected now could not be checked in a new state."
        if _selected(new_tree, new_id):
            return "The new state shows it [selected]."
        return (
            "The new state does not show it [selected]: check the state before relying on "
            "the selection."
        )

    def _toggle_shown(self, old_tree: str, new_tree: str | None) -> str:
        before = _checked(old_tree, self.element_id)
        new_id = remap(old_tree, new_tree, self.element_id) if new_tree is not None else None
        after = _checked(new_tree, new_id) if new_tree is not None and new_id is not None else None
        if after is None:
            return "Whether the box changed could not be checked in a new state."
        shown = "[checked]" if after else "[unchecked]"
        if before is None or before != after:
            return f"The new state shows it {shown}."
        return (
            f"The new state still shows it {shown}: the app did not take the toggle. Check "
            "the state before relying on it."
        )


def _checked(tree: str, element_id: int) -> bool | None:
    """Whether the element shows ``[checked]`` (True) or ``[unchecked]`` (False); None when
    it is not in the tree or shows neither."""
    node = parse_tree(tree).elements.get(element_id)
    if node is None:
        return None
    if "checked" in node.states:
        return True
    if "unchecked" in node.states:
        return False
    return None


def _selected(tree: str, element_id: int) -> bool:
    """The element, or its parent (the row of a cell, the item of a label), is shown
    ``[selected]``."""
    nodes = parse_tree(tree).elements
    node = nodes.get(element_id)
    if node is None:
        return False
    parent = nodes.get(node.parent) if node.parent is not None else None
    return any("selected" in n.states for n in (node, parent) if n is not None)
