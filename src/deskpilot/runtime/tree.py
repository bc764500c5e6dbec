"""Reading the host's rendered tree: element ids and element signatures.

The host renders the accessibility tree as a Markdown outline with each element's id in
brackets at the end of its line (``- button "OK" [7]``). The host keeps an element's id from
one state of a window to the next while the element exists (host/atspi/element_ids.py), so an
id of an older state names the same element in a newer one, or no element at all: it is then
gone, and never moved to another element.

An OCR outline (a window with no accessibility tree, vision/outline.py) has no objects to keep
ids by: its ids are line numbers. There, and for the ``[ocr]`` items the kernel adds to a
host's tree (text a widget draws but does not expose: their ids are their places), a
*signature* (depth, role, name) is what lets an action be rebuilt against a fresh frame, and
only when it picks out exactly one element.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ID_AT_END = re.compile(r"\[(\d+)\]\s*$")
#: what an element read off the screenshot into a host's tree has before its id
#: (kernel/opaque_text.py): its id is its place, the host's elements keep theirs
SCREEN_TEXT = " [ocr] ["
_LINE = re.compile(r'^(?P<indent>\s*)- (?P<role>[^\s"\[]+)(?: "(?P<name>(?:[^"\\]|\\.)*)")?')


@dataclass(frozen=True)
class Signature:
    depth: int
    role: str
    name: str


def element_lines(tree: str) -> dict[int, str]:
    """id → line, for every line that ends with an element id."""
    out: dict[int, str] = {}
    for line in tree.splitlines():
        m = _ID_AT_END.search(line)
        if m:
            out.setdefault(int(m.group(1)), line)
    return out


def element_ids(tree: str) -> list[int]:
    ids: list[int] = []
    for line in tree.splitlines():
        m = _ID_AT_END.search(line)
        if m:
            ids.append(int(m.group(1)))
    return ids


def signature(line: str) -> Signature | None:
    m = _LINE.match(line)
    if not m:
        return None
    return Signature(len(m.group("indent")), m.group("role"), m.group("name") or "")


def role_of(tree: str, element_id: int) -> str | None:
    line = element_lines(tree).get(element_id)
    sig = signature(line) if line is not None else None
    return sig.role if sig else None


def in_popup(tree: str, element_id: int) -> bool:
    """Whether the element lies in a popup section (a ``- popup [N]`` outline after the
    window's: an open menu the host shows with its window, docs/host-tree.md)."""
    popup = False
    for line in tree.splitlines():
        if line.startswith("- "):  # a top-level outline begins: the window's or a popup's
            popup = line.startswith("- popup ")
        m = _ID_AT_END.search(line)
        if m and int(m.group(1)) == element_id:
            return popup
    return False


def remap(old_tree: str, new_tree: str, element_id: int, *, line_ids: bool = False) -> int | None:
    """The id in ``new_tree`` of the element ``element_id`` named in ``old_tree``; None when
    it is gone.

    Host trees keep their ids: the same id, when ``new_tree`` still has an element of the same
    role there. ``line_ids`` (both trees are OCR outlines, whose ids are line numbers): the
    same id when the signature still matches there, otherwise the one element with the same
    signature. Never for an item of a popup: a menu that closed is not the menu open now,
    though its items have the same names ("Delete" of one row's menu is not "Delete" of the
    next row's).
    """
    if in_popup(old_tree, element_id):
        return None
    old_line = element_lines(old_tree).get(element_id)
    if old_line is None:
        return None
    sig = signature(old_line)
    if sig is None:
        return None
    new_lines = element_lines(new_tree)
    here = new_lines.get(element_id)
    if line_ids and SCREEN_TEXT not in old_line and SCREEN_TEXT in old_tree:
        line_ids = False  # a host element of a tree with text read off the screen added
    if not line_ids:
        same = here is not None and (s := signature(here)) is not None and s.role == sig.role
        return element_id if same else None
    if here is not None and signature(here) == sig:
        return element_id
    matches = [i for i, line in new_lines.items() if signature(line) == sig]
    return matches[0] if len(matches) == 1 else None
