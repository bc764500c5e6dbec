"""The popups on screen: mapped override-redirect top-level windows (menus, tooltips, lists).

A context menu, an open menu or a drop-down list is a window of its own that no window
manager handles (override-redirect), so it is in no client list and in no window listing
(x11/windows.py leaves such windows out on purpose). The host shows them with the window of
the app that opened them (host/popups.py): their places on screen are what this module reads.

A root child's override-redirect flag is set when it is created and hardly ever changes, so
each root child is asked once whether it is one; only those are asked again, on every call,
whether they are mapped and where they are. A window manager's frames (most root children on
a real desktop) then cost nothing after the first call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from Xlib import X, error

from deskpilot.host.x11.connection import XConnection
from deskpilot.protocol.wire import Rect

#: a popup smaller than this on either side is not one a person can act on (1×1 helpers)
MIN_SIDE = 4
#: ``_NET_WM_WINDOW_TYPE`` values of a popup that takes no input: every other popup on
#: screen is taken as a menu or list, which holds the keyboard and pointer until it closes
#: (GTK says popup_menu, Chromium menu, but Qt 6.4 says normal for its menus)
PASSIVE_TYPES = ("tooltip", "notification", "dnd")


@dataclass(frozen=True, slots=True)
class Popup:
    """A mapped popup: where it is, and the window it says it belongs to."""

    rect: Rect
    #: ``WM_TRANSIENT_FOR``: the top-level window that opened it (GTK and Qt set it on their
    #: menus); None when it does not say
    transient_for: int | None = None
    #: the owning client's pid, as the X server knows it; None when it cannot say
    pid: int | None = None
    #: a menu or list: on screen, and not a tooltip, notification or drag icon
    #: (``PASSIVE_TYPES``)
    menu: bool = False


class PopupLister:
    """Lists the mapped override-redirect root children, remembering which children are."""

    def __init__(self, conn: XConnection) -> None:
        self._conn = conn
        #: root child id → whether it is override-redirect
        self._override: dict[int, bool] = {}

    def popups(self) -> list[Popup]:
        """The mapped override-redirect windows, topmost first."""
        try:
            children = self._conn.root.query_tree().children
        except error.XError:
            return []
        live = {int(c.id) for c in children}
        for gone in set(self._override) - live:
            del self._override[gone]
        out: list[Popup] = []
        for child in reversed(children):
            popup = self._popup(child)
            if popup is not None:
                out.append(popup)
        return out

    def _popup(self, win: Any) -> Popup | None:
        xid = int(win.id)
        if self._override.get(xid) is False:
            return None
        try:
            attrs = win.get_attributes()
        except error.XError:
            return None
        self._override[xid] = bool(attrs.override_redirect)
        if not attrs.override_redirect or attrs.map_state != X.IsViewable:
            return None
        try:
            geom = win.get_geometry()
        except error.XError:
            return None
        if geom.width < MIN_SIDE or geom.height < MIN_SIDE:
            return None
        # a root child's position is its geometry's (no window manager reparents it)
        rect = Rect(x=int(geom.x), y=int(geom.y), width=int(geom.width), height=int(geom.height))
        owner = next(iter(self._conn.card_prop(win, "WM_TRANSIENT_FOR")), None)
        pid = self._conn.client_pid(int(win.id))
        # on screen: GTK keeps a mapped 10×10 helper at -100,-100
        menu = self._conn.on_screen(rect) and not self._passive(win)
        return Popup(rect, owner or None, pid, menu)

    def _passive(self, win: Any) -> bool:
        """Whether the window says it takes no input (``PASSIVE_TYPES``)."""
        types = self._conn.card_prop(win, "_NET_WM_WINDOW_TYPE")
        passive = {self._conn.atom(f"_NET_WM_WINDOW_TYPE_{t.upper()}") for t in PASSIVE_TYPES}
        return any(t in passive for t in types)
