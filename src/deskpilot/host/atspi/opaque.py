"""Widgets that draw content they do not expose: where they are, so the kernel can read it.

Thunar's default icon view (an ``ExoIconView``, libexo 4.18) shows the folder's files, but
its accessible is a plain ``panel`` with no children, no Selection, no Table, no Text: exo
registers its own accessible through an ATK factory that GTK 3 never consults (it uses the
class's accessible type, here GtkContainer's), so six files on screen were
``group "Icon view"`` with nothing below. Nothing on the bus names them; only the pixels do.

Such a widget is found by its shape: a focusable, showing, childless node of a generic
container role (panel, filler, drawing area, canvas, unknown) with no name, no value and no
action, at least ``MIN_WIDTH`` × ``MIN_HEIGHT``, whose parent says what it shows (a name:
the icon view's ``directory pane "Icon view"``). A person can click into it and it is as big
as a list; an empty spacer is neither focusable nor does it draw text. GIMP's canvas has the
same shape in unnamed boxes: its content is a picture, and reading it cost ~0.4 s a look.

The host reads its extents (one ``GetExtents`` each, in the finish step that reads secure
fields' bounds) and says where it is and which element it belongs to — itself when it is
shown, else its nearest shown ancestor (the icon view's ``group "Icon view"``) — as
``opaque_regions``. The kernel reads the text in that part of the screenshot and lists it
under that element (kernel/opaque_text.py); the host reads no pixels' text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from deskpilot.host.atspi.collect import RawNode
from deskpilot.host.atspi.vocab import ROLE_NUMBER, State, bit

#: a widget smaller than this draws no list worth reading (an icon, a spacer)
MIN_WIDTH: Final = 64
MIN_HEIGHT: Final = 32
#: at most this many per window (a split view shows two icon views)
MAX_OPAQUE: Final = 4

OPAQUE_ROLES: Final = frozenset(
    ROLE_NUMBER[r] for r in ("panel", "filler", "drawing area", "canvas", "unknown")
)
_B_NEEDED: Final = bit(State.FOCUSABLE) | bit(State.SHOWING) | bit(State.VISIBLE)


@dataclass(frozen=True, slots=True)
class Opaque:
    """A widget whose content only its pixels show: its node in the read, and the element it
    is shown under (its own line, else its nearest shown ancestor's)."""

    node: int
    element_id: int


def candidates(nodes: Sequence[RawNode]) -> list[int]:
    """The nodes that may be such widgets (see the module docstring), before their extents
    are known (``showing`` says its ancestors are on screen too)."""
    out: list[int] = []
    for i, n in enumerate(nodes):
        if i == 0 or n.role not in OPAQUE_ROLES or n.child_count or n.children:
            continue
        if n.states & _B_NEEDED != _B_NEEDED or n.name.strip() or n.value:
            continue
        if n.actions or not nodes[n.parent].name.strip():
            continue  # a drawing surface in unnamed boxes (GIMP's canvas): a picture
        out.append(i)
        if len(out) >= MAX_OPAQUE:
            break
    return out


def placed(nodes: Sequence[RawNode], which: Sequence[int], shown: dict[int, int]) -> list[Opaque]:
    """Those of ``which`` whose extents (read by then) are large enough, each with the
    element it is shown under."""
    out: list[Opaque] = []
    for i in which:
        e = nodes[i].extents
        if e is None or e[2] < MIN_WIDTH or e[3] < MIN_HEIGHT:
            continue
        anchor = _anchor(nodes, i, shown)
        if anchor is not None:
            out.append(Opaque(i, anchor))
    return out


def _anchor(nodes: Sequence[RawNode], i: int, shown: dict[int, int]) -> int | None:
    while i >= 0:
        if i in shown:
            return shown[i]
        i = nodes[i].parent
    return None
