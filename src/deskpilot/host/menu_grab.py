"""An open menu of another app (or of another window) takes every key and click.

A menu or a drop-down list holds the keyboard and the pointer while it is open: keys meant
for another window choose in it (a trial's Down, Return ran another app's Undo and erased its
document), and a click elsewhere only closes it. A person closes that menu first; so input
that would reach it is refused before anything is sent (x11/desktop.py ``foreign_menu``):
keys (host/primitives.py ``ensure_focus``, which every key-sending action passes) and
pointer input (aimed at an element, ``Primitives.center``, or at a point,
host/action_checks.py ``check_aim``). Semantic actions go through the app itself and are
not refused.
"""

from __future__ import annotations

from deskpilot.host.x11.desktop import X11Desktop
from deskpilot.host.x11.windows import XWindow
from deskpilot.protocol.errors import DeskpilotError, ErrorCode


def refuse_if_menu_open(desktop: X11Desktop, window: XWindow) -> None:
    """Raise ``other_menu_open`` when a menu that is not ``window``'s is open."""
    owner = desktop.foreign_menu(window)
    if owner is not None:
        raise DeskpilotError(
            ErrorCode.UNSUPPORTED_ACTION,
            "a menu of another app or window is open: it takes every key and click until it closes",
            details={"reason": "other_menu_open", "menuPid": owner},
        )
