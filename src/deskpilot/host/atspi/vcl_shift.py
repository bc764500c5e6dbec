"""Where LibreOffice's own drawing area says it is, and where it is.

LibreOffice with its GTK 3 plugin draws its window in two parts: a GTK menu bar, and below it
everything VCL draws (toolbars, the sheet, the document, the sidebar) under a ``root pane``.
The root pane's extents, and so those of everything in it, can be the ones it had before the
menu bar took its place: a trial's Calc said its root pane was at (57, 50) while its parent
panel, where GTK had put it, was at (57, 75). Every cell and button was then 25 px higher
than drawn, and a click aimed at cell A1 landed on column A's header and selected the whole
column (the check that A1 became the current cell passed: it was). It came and went between
runs, as LibreOffice placed its menu bar before or after VCL took its position.

A root pane lies where its parent is (it fills it); so where it starts above or left of its
parent, the difference is how far its own coordinates, and its descendants', are from the
screen's. :func:`shifts` reads the root panes' and their parents' extents (one batch, two
calls each: LibreOffice windows have one) and gives every node under a shifted root pane the
shift; ``ElementRef.shift`` carries it, and the element's extents read to aim at it are
moved by it (atspi/element_reads.py). Coordinates the app is asked about in its own terms
(``GetAccessibleAtPoint`` within a table, atspi/on_screen.py) stay in its own terms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from deskpilot.host.atspi.bus import I_COMPONENT, AtspiCallError, Call, Conn
from deskpilot.host.atspi.vocab import ROLE_NUMBER

if TYPE_CHECKING:
    from deskpilot.host.atspi.collect import RawNode

_R_ROOT_PANE: Final = ROLE_NUMBER["root pane"]

Shift = tuple[int, int]
Box = tuple[int, int, int, int]


def shift_of(pane: Box, parent: Box) -> Shift | None:
    """How far a root pane's own coordinates are from where it is: the amount its top-left
    lies above or left of its parent's; None when it does not (a shift of nothing)."""
    dx = max(0, parent[0] - pane[0])
    dy = max(0, parent[1] - pane[1])
    if parent[2] <= 0 or parent[3] <= 0 or (dx == 0 and dy == 0):
        return None
    return dx, dy


def spread(nodes: list[RawNode], roots: dict[int, Shift]) -> dict[int, Shift]:
    """Each node under a shifted root pane (itself included) with that pane's shift; the
    nodes are in preorder, a parent before its children."""
    out: dict[int, Shift] = {}
    for i, n in enumerate(nodes):
        own = roots.get(i)
        if own is not None:
            out[i] = own
        elif n.parent >= 0 and n.parent in out:
            out[i] = out[n.parent]
    return out


async def shifts(conn: Conn, nodes: list[RawNode]) -> dict[int, Shift]:
    """The shift of every node under a root pane that lies off its parent (see the module
    docstring); {} when none does, or the extents cannot be read."""
    panes = [i for i, n in enumerate(nodes) if n.role == _R_ROOT_PANE and n.parent >= 0]
    if not panes:
        return {}
    calls: list[Call] = []
    for i in panes:
        for j in (i, nodes[i].parent):
            calls.append((nodes[j].bus, nodes[j].path, I_COMPONENT, "GetExtents", "u", (0,)))
    replies = await conn.batch(calls)
    roots: dict[int, Shift] = {}
    for k, i in enumerate(panes):
        pane, parent = replies[2 * k], replies[2 * k + 1]
        if isinstance(pane, AtspiCallError) or isinstance(parent, AtspiCallError):
            continue
        found = shift_of(_box(pane[0]), _box(parent[0]))
        if found is not None:
            roots[i] = found
    return spread(nodes, roots) if roots else {}


def _box(value: tuple[int, int, int, int]) -> Box:
    x, y, w, h = value
    return int(x), int(y), int(w), int(h)
