"""Reading a window listing (``list_windows``, or the one an action's state carries): the
dialogs of a window, the windows of a process, and what is in front of a window.

A dialog is a window whose ICCCM ``WM_TRANSIENT_FOR`` names another; listings are topmost
first, so the first match is the one on top.
"""

from __future__ import annotations

from deskpilot.protocol.wire import WindowInfo


def dialogs_of(windows: list[WindowInfo], window_id: str) -> list[WindowInfo]:
    """The visible windows that are dialogs of ``window_id`` (WM_TRANSIENT_FOR), topmost
    first (the order list_windows gives)."""
    return [w for w in windows if w.transient_for == window_id and w.visible and not w.minimized]


def in_front(window: WindowInfo, windows: list[WindowInfo]) -> WindowInfo:
    """``window``, or the dialog shown over it (the topmost one), and that dialog's own in
    turn: where a person looking at ``window`` acts next."""
    seen = {window.window_id}
    while True:
        dialog = next((d for d in dialogs_of(windows, window.window_id)), None)
        if dialog is None or dialog.window_id in seen:
            return window
        seen.add(dialog.window_id)
        window = dialog


def app_windows(windows: list[WindowInfo], pid: int | None) -> list[WindowInfo]:
    """The visible windows of one process, topmost first."""
    if pid is None:
        return []
    return [w for w in windows if w.app.pid == pid and w.visible and not w.minimized]
