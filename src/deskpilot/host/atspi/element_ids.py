"""Element ids that stay put: each element keeps its id from one read of its window to the next.

The outline is rendered with line numbers as ids (atspi/render.py, atspi/popup_sections.py),
and line numbers move: one message appearing near the top of a dialog shifted every later id,
so an id an agent read off the last state named another element in the next one. Playwright's
MCP refs do not move, and neither do ours now: after a window's tree (popups included) is
rendered, its *id book* gives every element the id it had in that window before, and an
element never seen before the next number not yet given. An id whose element is gone is not
in the next tree at all, so acting on it is refused as gone; it is never given to another
element.

What names an element from one read to the next is its accessible object — the app's unique
bus name and the object path (atk-bridge, Chromium, Qt and GTK 4 number their objects with a
counter, so a path is not reused for another object while the app runs) — with its role,
so that a path an app did reuse for an object of another kind is not taken for the old one.
Where the app builds a new object for the same thing at each read (a sheet's cell), the
reader sets ``ElementRef.identity`` (its table and its address) and that names it instead.

A window's first read numbers its elements in order, 1 … n, as line numbers did: the ids
only differ from line numbers once the window changed. The book is per window (its frame's
accessible object), so a window's ids stay small; the books of at most ``MAX_WINDOWS``
windows are kept, and a book forgets the identities it has not seen for its last
``FORGET_AFTER`` reads (such an element, should it come back, gets a new id — never an
old one, since the counter only goes up).
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import Final

from deskpilot.host.atspi.model import ElementRef, NodeRef, TreeSnapshot
from deskpilot.host.atspi.snapshot import tree_version
from deskpilot.protocol.tree import SCREEN_TEXT_IDS

#: windows whose books are kept (the least recently read is dropped first)
MAX_WINDOWS: Final = 64
#: reads after which an identity not seen is forgotten
FORGET_AFTER: Final = 64

Identity = tuple[object, ...]
#: an element a translation built: (the element it was built from, its id, its parent's id,
#: the element built) — the first kept so that its ``id()`` is not reused meanwhile
_Made = tuple[ElementRef, int, int | None, ElementRef]


def identity_of(element: ElementRef) -> Identity:
    """What names ``element`` from one read to the next (see the module docstring)."""
    if element.identity is not None:
        return element.identity
    return (element.ref.bus_name, element.ref.path, element.atspi_role)


class IdBook:
    """The ids one window's elements were given, and the next one to give."""

    def __init__(self) -> None:
        self._ids: dict[Identity, int] = {}
        self._seen: dict[Identity, int] = {}  # identity → the read it was last seen in
        self._next = 1
        self._reads = 0
        # the last translation: a tree served again unchanged (a cache hit hands back the
        # same text and elements objects) is not translated twice
        self._last_in: tuple[str, dict[int, ElementRef]] | None = None
        self._last_out: tuple[list[Identity], TreeSnapshot] | None = None
        self._made: dict[int, _Made] = {}

    def assign(self, snap: TreeSnapshot) -> TreeSnapshot:
        """``snap`` (ids = line numbers) with every element's id taken from this book."""
        last_in, last_out = self._last_in, self._last_out
        if (
            last_in is not None
            and last_out is not None
            and last_in[0] is snap.text
            and last_in[1] is snap.elements
        ):
            self._reads += 1
            for key in last_out[0]:
                self._seen[key] = self._reads
            kept = last_out[1]
            return dataclasses.replace(
                snap,
                text=kept.text,
                tree_version=kept.tree_version,
                elements=kept.elements,
                focused_id=kept.focused_id,
                opaque=kept.opaque,
            )
        keys = [identity_of(snap.elements[i]) for i in sorted(snap.elements)]
        mapping = self._number(sorted(snap.elements), keys)
        out = _renumbered(snap, mapping, self._made)
        self._last_in = (snap.text, snap.elements)
        self._last_out = (keys, out)
        return out

    def _number(self, line_ids: list[int], keys: list[Identity]) -> dict[int, int]:
        """Line id → book id for the elements with these line ids and identities."""
        self._reads += 1
        reads = self._reads
        ids, seen = self._ids, self._seen
        mapping: dict[int, int] = {}
        taken: set[int] = set()
        for line_id, key in zip(line_ids, keys, strict=True):
            book_id = ids.get(key)
            if book_id is None or book_id in taken:
                # new, or a second element with the same identity in one tree (which keeps
                # the first one's id): a number not given before
                if self._next == SCREEN_TEXT_IDS:  # the kernel's block for screen text
                    self._next = 2 * SCREEN_TEXT_IDS
                if book_id is None:
                    ids[key] = self._next
                book_id = self._next
                self._next += 1
            taken.add(book_id)
            seen[key] = reads
            mapping[line_id] = book_id
        if len(ids) > len(mapping) * 2 and reads % 8 == 0:
            self._forget(reads)
        return mapping

    def _forget(self, reads: int) -> None:
        old = [k for k, r in self._seen.items() if reads - r >= FORGET_AFTER]
        for key in old:
            self._seen.pop(key, None)
            self._ids.pop(key, None)


class ElementIds:
    """The id books of the windows read lately, by their frame's accessible object."""

    def __init__(self) -> None:
        self._books: OrderedDict[NodeRef, IdBook] = OrderedDict()

    def assign(self, frame: NodeRef, snap: TreeSnapshot) -> TreeSnapshot:
        book = self._books.get(frame)
        if book is None:
            book = self._books[frame] = IdBook()
            while len(self._books) > MAX_WINDOWS:
                self._books.popitem(last=False)
        else:
            self._books.move_to_end(frame)
        return book.assign(snap)


def _renumbered(
    snap: TreeSnapshot, mapping: dict[int, int], made: dict[int, _Made]
) -> TreeSnapshot:
    """``snap`` with its ids changed as ``mapping`` says (line id → book id). ``made``: the
    elements the last translation built, by the identity of the element they were built from
    (updated to this translation's): a patched read keeps most element objects as they were,
    and building ~1,700 again cost ~4 ms on a Chromium page."""
    if all(old == new for old, new in mapping.items()):
        made.clear()
        return snap  # a window's first read: ids are its line numbers
    lines = snap.text.split("\n")
    elements: dict[int, ElementRef] = {}
    now: dict[int, _Made] = {}
    for old, e in snap.elements.items():
        new = mapping[old]
        parent = mapping.get(e.parent_id) if e.parent_id is not None else None
        if new != old:
            line = lines[old - 1]
            suffix = f" [{old}]"
            if line.endswith(suffix):  # always: an element's line ends with its id
                lines[old - 1] = f"{line[: -len(suffix)]} [{new}]"
        if new == old and parent == e.parent_id:
            elements[new] = e
            continue
        kept = made.get(id(e))
        if kept is not None and kept[0] is e and kept[1] == new and kept[2] == parent:
            out = kept[3]
        else:
            out = _with_ids(e, new, parent)
        now[id(e)] = (e, new, parent, out)
        elements[new] = out
    made.clear()
    made.update(now)
    text = "\n".join(lines)
    focused = mapping.get(snap.focused_id) if snap.focused_id is not None else None
    opaque = tuple(
        dataclasses.replace(o, element_id=mapping.get(o.element_id, o.element_id))
        for o in snap.opaque
    )
    return dataclasses.replace(
        snap,
        text=text,
        tree_version=tree_version(text, snap.element_count),
        elements=elements,
        focused_id=focused,
        opaque=opaque,
    )


def _with_ids(e: ElementRef, new: int, parent: int | None) -> ElementRef:
    """``e`` with another id and parent id (``dataclasses.replace`` takes twice as long)."""
    return ElementRef(
        new,
        e.ref,
        e.pid,
        e.role,
        e.atspi_role,
        e.name,
        e.states,
        e.interfaces,
        e.actions,
        e.extents,
        e.secure,
        parent,
        e.index_in_parent,
        e.popup_at,
        e.identity,
        e.shift,
    )
