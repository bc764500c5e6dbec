"""Text rules shared by the checks, and a view of an observation's tree.

Contains-checks fold case and collapse whitespace (UI text wraps and capitalises freely);
equality checks are exact. The host cuts names and values at 200 characters and marks the cut
with "…" (docs/host-tree.md), so a check that needs the text beyond the cut is undecidable
rather than failed. A tree the host truncated (element cap, text budget, elided children),
could not read, cut at its read deadline (partial) or answered from the last read of an app
that did not answer (stale) is *incomplete*: an absence seen in it proves nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from deskpilot.protocol.tree import ElementTree, TreeElement, parse_tree
from deskpilot.protocol.wire import ObservationBody

from .evidence import EXCERPT_CHARS, clip

#: the host's cut for names and values (host/atspi/render.py NAME_MAX_CHARS)
HOST_TEXT_CAP: Final = 200
_ELISION_ROLE: Final = "…"  # "- … N more items": a line, not an element
_TRUNCATION_MARKER: Final = "[truncated:"


def fold(text: str) -> str:
    return " ".join(text.split()).casefold()


def contains(haystack: str, needle: str) -> bool:
    return fold(needle) in fold(haystack)


def was_cut(text: str | None) -> bool:
    """The host cut this name or value (its 200 characters plus the "…")."""
    return text is not None and len(text) == HOST_TEXT_CAP + 1 and text.endswith("…")


@dataclass(frozen=True, slots=True)
class TreeView:
    """The elements of one observation's tree, and whether the tree is complete."""

    elements: list[TreeElement]  # in rendered (pre-)order
    tree: ElementTree
    complete: bool
    unavailable: bool
    omitted: int
    elided: int

    @property
    def empty(self) -> bool:
        return not self.elements

    def descendants(self, element: TreeElement) -> Iterator[TreeElement]:
        """The element's rendered subtree below it (pre-order makes it a contiguous run)."""
        started = False
        for e in self.elements:
            if e is element:
                started = True
                continue
            if started:
                if e.depth <= element.depth:
                    return
                yield e

    def completeness(self) -> dict[str, object]:
        """For evidence records: why an absence could not be trusted, when it could not."""
        if self.complete:
            return {"treeComplete": True}
        out: dict[str, object] = {"treeComplete": False}
        if self.unavailable:
            out["treeUnavailable"] = True
        if self.omitted:
            out["omittedElements"] = self.omitted
        if self.elided:
            out["elidedChildren"] = self.elided
        return out


def tree_view(obs: ObservationBody) -> TreeView:
    tree = parse_tree(obs.tree)
    elements = [e for e in tree.elements.values() if e.role != _ELISION_ROLE]
    elements.sort(key=lambda e: e.id)
    t = obs.truncation
    elided_lines = len(tree.elements) - len(elements)
    marker = any(line.startswith(_TRUNCATION_MARKER) for line in obs.tree.splitlines())
    complete = not (
        t.omitted_elements
        or t.elided_children
        or t.element_cap_hit
        or t.text_budget_hit
        or t.tree_unavailable
        or elided_lines
        or marker
        or not obs.tree_read.reusable  # cut at its deadline, or the last tree of a stopped app
    )
    return TreeView(
        elements=elements,
        tree=tree,
        complete=complete,
        unavailable=t.tree_unavailable,
        omitted=t.omitted_elements,
        elided=t.elided_children or elided_lines,
    )


def element_texts(element: TreeElement) -> list[str]:
    return [t for t in (element.name, element.value) if t]


def element_line(element: TreeElement) -> str:
    """The element as a short line for evidence (not the host's exact line: cut, no indent)."""
    parts = [element.role]
    if element.name:
        parts.append(f'"{clip(element.name, 60)}"')
    if element.value is not None:
        parts.append(f'= "{clip(element.value, 60)}"')
    parts.extend(f"[{s}]" for s in sorted(element.states) if not s.startswith("actions"))
    parts.append(f"[{element.id}]")
    return clip(" ".join(parts), EXCERPT_CHARS)
