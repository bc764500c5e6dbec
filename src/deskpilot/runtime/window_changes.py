"""Windows an action opened or closed, and the window a result shows instead of the one acted
on (docs/mcp.md, "Dialogs").

A dialog is a window of its own: the acted-on window's tree does not show it, and without a
window manager it does not even take the X focus. So the windows the host listed with the
state after the action are compared with what the acted-on state knew was open:

* a **dialog** of the acted-on window that opened is where the agent acts next (a modal one
  takes the window's input): the result carries the dialog's state, not the window's under
  it;
* a **new window** of the app is announced with its id (``window_opened``): it may be a
  second document, and which window the agent means next is its choice;
* when the acted-on window **closed** (a dialog's Close, OK or Cancel), the result carries the
  window now in front of the app: the window the dialog belonged to (or its own dialog that is
  still open), else the app's main window.
"""

from __future__ import annotations

from dataclasses import dataclass

from deskpilot.protocol.wire import ObservationBody, WindowInfo
from deskpilot.runtime.apps import AppEntry
from deskpilot.runtime.state_ids import StateRecord
from deskpilot.runtime.window_lists import app_windows, dialogs_of, in_front


@dataclass(frozen=True)
class Opened:
    """The windows as they are after the action, and what of them is new."""

    dialogs: list[WindowInfo]  # every dialog of the acted-on window
    app_windows: list[WindowInfo]  # every visible window of its process
    new_dialogs: list[WindowInfo]
    new_windows: list[WindowInfo]

    @property
    def anything(self) -> bool:
        return bool(self.new_dialogs or self.new_windows)


def opened_by(record: StateRecord, obs: ObservationBody, windows: list[WindowInfo]) -> Opened:
    """What of ``windows`` is new since ``record`` was observed (``record.extras`` holds the
    dialogs and app windows open then, when they were listed; unknown means new)."""
    dialogs = dialogs_of(windows, obs.window.window_id)
    known = record.extras.get("dialogs")
    new_dialogs = [d for d in dialogs if not isinstance(known, set) or d.window_id not in known]
    mine = app_windows(windows, obs.app.pid)
    known_windows = record.extras.get("appWindows")
    new_windows = [
        w
        for w in mine
        if isinstance(known_windows, set)
        and w.window_id not in known_windows
        and w.window_id != obs.window.window_id
        and w not in new_dialogs
    ]
    return Opened(dialogs, mine, new_dialogs, new_windows)


def remember_windows(record: StateRecord, windows: list[WindowInfo]) -> None:
    """Keep with a state what was open when it was observed: the next action's result tells
    what it opened against this."""
    record.extras["dialogs"] = {w.window_id for w in dialogs_of(windows, record.app.window_id)}
    record.extras["appWindows"] = {w.window_id for w in app_windows(windows, record.app.pid)}


def window_in_front(
    closed: WindowInfo, pid: int | None, windows: list[WindowInfo]
) -> WindowInfo | None:
    """The window now in front of the app after ``closed`` went away: the window it was a
    dialog of, if that is still shown (or the dialog open over that one), else the app's
    main window (runtime/apps.py ``AppEntry.main_window``); None when the app shows none."""
    mine = app_windows(windows, pid)
    parent = next((w for w in mine if w.window_id == closed.transient_for), None)
    if parent is not None:
        return in_front(parent, windows)
    if not mine:
        return None
    return AppEntry(pid, mine[0].app, mine).main_window()


def new_window_note(opened: Opened) -> str:
    """The sentence that announces a new window of the app (not a dialog), or ''."""
    if not opened.new_windows:
        return ""
    top = opened.new_windows[0]  # topmost first
    return (
        f'\nA new window of this app opened: "{top.title}" (window {top.window_id}). '
        f"get_app_state with app={top.window_id} shows it."
    )
