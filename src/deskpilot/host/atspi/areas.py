"""Which nodes are on screen where their states do not say: the extents the outline needs.

Most toolkits say what is on screen with VISIBLE and SHOWING (render.py ``is_hidden``). Where
they do not, a node's extents do, and these are read for the few nodes that need them, in
the first batch of the details step (``collect.enrich``), at no extra round trip:

* **GTK 4.8** sets SHOWING on nothing below the window and VISIBLE on everything, and keeps
  what it does not show in the tree: gnome-text-editor's infobars ("Could Not Open File",
  "Document Restored" with its Discard button) sit in a revealer at 690×0, its "Start or Open
  a Document" page in a stack at 0×0. In a GTK 4 app that sets SHOWING on no node below its
  window, every container's extents are read; one with no area (zero width or height) is not
  shown, nor anything in it. (A GTK that sets SHOWING is trusted as the others are.)
* **Menu bars and tool bars**, in any app: LibreOffice with its GTK 3 plugin exports its own
  menu bar twice, the GTK one on screen and VCL's at height 0, both SHOWING — the outline
  listed every menu twice; Firefox's hidden menu bar sits in a SHOWING tool bar whose
  extents are -1×-1.
* **Documents whose children are only the paragraphs on screen** (Writer: a MANAGES_DESCENDANTS
  document of paragraphs): the first paragraph reaching the document's top edge means more of
  the document lies above, the last reaching its bottom edge more below — said by the outline
  (``TextState.before``/``after`` = -1 on the document).

``RawNode.empty`` is None until a node's extents were read: a patch of the tree cache reads
the nodes it read again (new ``RawNode`` objects) and keeps what it knew of the others, so a
patched tree and a full read agree.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final

from deskpilot.host.atspi.bus import I_COMPONENT, AtspiCallError, Call
from deskpilot.host.atspi.doc_text import TextState
from deskpilot.host.atspi.vocab import (
    DOCUMENT_ROLES,
    GENERIC_CONTAINER_ROLES,
    ROLE_NUMBER,
    TEXT_CONTENT_ROLES,
    TEXT_LEAF_ROLES,
    State,
    bit,
)

if TYPE_CHECKING:
    from deskpilot.host.atspi.collect import RawNode

#: most containers whose extents one read asks for (GTK 4 apps are small: the calculator
#: has ~40, gnome-text-editor ~70)
MAX_BOXES: Final = 400

#: menu bars and tool bars: read in every app (a hidden one can still say SHOWING)
_BARS: Final = frozenset({ROLE_NUMBER["menu bar"], ROLE_NUMBER["tool bar"]})
#: the containers whose extents a GTK 4 read asks for (text roles are leaves here)
_BOX_ROLES: Final = GENERIC_CONTAINER_ROLES - TEXT_LEAF_ROLES
#: GTK 4.8's names for unlabelled widgets ("GtkBox", "AdwGizmo", "EditorInfoBar")
_TYPE_NAME: Final = re.compile(r"^(?:[A-Z][a-z0-9]+){2,}$")
_R_HEADING: Final = ROLE_NUMBER["heading"]
_B_SHOWING: Final = bit(State.SHOWING)
_B_VISIBLE_ANY: Final = bit(State.VISIBLE) | bit(State.SHOWING)
_B_MANAGES: Final = bit(State.MANAGES_DESCENDANTS)


def no_showing(nodes: list[RawNode]) -> bool:
    """Whether the tree's app sets SHOWING on no node below its window (GTK 4.8)."""
    return not any(n.states & _B_SHOWING for n in nodes[1:])


def box_nodes(nodes: list[RawNode], containers: bool) -> list[int]:
    """The nodes whose extents the outline needs and does not have yet: menu and tool bars,
    scrolled documents and their first and last child, and (``containers``: a GTK 4.8 app)
    every container that could hide something shown; none under a node hidden by its
    states."""
    out: list[int] = []
    hidden = [False] * len(nodes)
    for i, n in enumerate(nodes):
        p = n.parent
        if p >= 0 and (hidden[p] or not n.states & _B_VISIBLE_ANY):
            hidden[i] = True
            continue
        if i == 0 or n.empty is not None or not n.children:
            continue
        boxed = containers and len(out) < MAX_BOXES and _holds_shown(nodes, i)
        if n.role in _BARS or boxed:
            out.append(i)
        elif scrolled_document(nodes, i):
            out.extend((i, n.children[0], n.children[-1]))
    return out


def _holds_shown(nodes: list[RawNode], i: int) -> bool:
    """A container whose having no area could hide something the outline shows: one with a
    name of its own (GTK 4's class names are none), or with a child that is not a container
    (a button, a label, a field). A container holding only containers is left to them: GTK
    gives a hidden container's children no area either."""
    n = nodes[i]
    if n.role not in _BOX_ROLES:
        return False
    if n.name.strip() and not _TYPE_NAME.match(n.name.strip()):
        return True
    return any(nodes[c].role not in _BOX_ROLES for c in n.children)


def scrolled_document(nodes: list[RawNode], i: int) -> bool:
    """A document whose children are only the part on screen (it manages its descendants,
    and they are paragraphs or headings: Writer)."""
    n = nodes[i]
    if n.role not in DOCUMENT_ROLES or not n.states & _B_MANAGES or not n.children:
        return False
    first, last = nodes[n.children[0]], nodes[n.children[-1]]
    return all(c.role in TEXT_CONTENT_ROLES or c.role == _R_HEADING for c in (first, last))


def box_calls(nodes: list[RawNode], which: list[int]) -> list[Call]:
    return [(nodes[i].bus, nodes[i].path, I_COMPONENT, "GetExtents", "u", (0,)) for i in which]


def apply_boxes(nodes: list[RawNode], which: list[int], replies: list[Any]) -> None:
    """Mark the nodes with no area, and say of each scrolled document whether more of it lies
    above or below the paragraphs on screen."""
    rects: dict[int, tuple[int, int, int, int]] = {}
    for i, r in zip(which, replies, strict=True):
        if not isinstance(r, AtspiCallError):
            x, y, w, h = r[0]
            rects[i] = (int(x), int(y), int(w), int(h))
    for i in which:
        n = nodes[i]
        rect = rects.get(i)
        if n.empty is None and rect is not None and n.children:
            n.empty = rect[2] <= 0 or rect[3] <= 0
        if rect is not None and scrolled_document(nodes, i):
            first = rects.get(n.children[0])
            last = rects.get(n.children[-1])
            if first is None or last is None:
                continue
            above = first[1] <= rect[1]
            below = last[1] + last[3] >= rect[1] + rect[3]
            n.text = TextState(before=-1 if above else 0, after=-1 if below else 0)
