"""Which of an app's other top-level accessibles are popups shown over the observed window.

A context menu (GTK's, Chromium's), a drop-down list or a tooltip is an override-redirect X
window of its own, and its accessible is another child of the application, beside the
window's frame. Observing only the window's frame left such a menu out of the tree: an agent
that right-clicked saw nothing open, and could reach the menu only by pixels.

An app child is taken as a popup of the observed window when the X server shows a mapped
override-redirect window exactly where it says it is (x11/popups.py), and that window lies
over the observed one (and does not name another window as its own: the observer passes
only the popups whose ``WM_TRANSIENT_FOR`` is the window or unset). The X side is needed
because the accessibility side is not enough: Chromium keeps hidden helper frames (its
address bar's suggestion list) that claim to be showing. Qt leaves its popup menus out of
the application's children altogether: for a popup no app child is placed on, the objects
the app said became showing (its recent ``StateChanged:showing`` events, atspi/events.py)
are the candidates instead, and a Qt menu is found that way (docs/host-tree.md, "Popups
over the window").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from deskpilot.host.atspi.model import FrameInfo
from deskpilot.protocol.wire import Rect

#: pixels an accessible's extents may differ from its X window's geometry (borders, shadows)
SLACK: Final = 2
#: popups shown with one window, at most (a menu and its open submenus)
MAX_POPUPS: Final = 8


def popup_frames(
    frames: Sequence[FrameInfo], main: FrameInfo, window: Rect, popups: Sequence[Rect]
) -> list[FrameInfo]:
    """The frames among ``frames`` (one app's top-level accessibles) that are popups over
    ``window`` (its bounds): showing, placed exactly on one of the mapped override-redirect
    windows ``popups`` (topmost first), and overlapping the window. Topmost last, as a
    person reads a menu and then its open submenu."""
    out: list[tuple[int, FrameInfo]] = []
    for f in frames:
        if f.ref == main.ref or f.extents is None or "showing" not in f.states:
            continue
        at = next((i for i, r in enumerate(popups) if same_place(f.extents, r)), None)
        if at is not None and _overlap(f.extents, window):
            out.append((at, f))
    out.sort(key=lambda p: -p[0])
    return [f for _, f in out[-MAX_POPUPS:]]


def unplaced(popups: Sequence[Rect], found: Sequence[FrameInfo], window: Rect) -> list[Rect]:
    """The popups over ``window`` that none of the frames ``found`` is placed on."""
    return [
        r
        for r in popups
        if _overlap(r, window)
        and not any(f.extents is not None and same_place(f.extents, r) for f in found)
    ]


def same_place(a: Rect, b: Rect) -> bool:
    """Two screen rectangles are the same place (within ``SLACK``)."""
    return (
        abs(a.x - b.x) <= SLACK
        and abs(a.y - b.y) <= SLACK
        and abs(a.width - b.width) <= SLACK
        and abs(a.height - b.height) <= SLACK
    )


def _overlap(a: Rect, b: Rect) -> bool:
    return (
        a.x < b.x + b.width
        and b.x < a.x + a.width
        and a.y < b.y + b.height
        and b.y < a.y + a.height
    )
