"""The controls of a live session as the dashboard offers them, and how they reach it.

Which buttons a session shows follows its state (the row and the takeover hold), never its
last event, and only the ones that can work are shown:

* running (any live phase but paused): Pause, Take over, Stop;
* handed to the person (``handoff_required``: their Escape, or the operator asked for them):
  Resume (the kernel pauses and resumes it), Take over, Stop;
* paused: Resume, Take over, Change window, Stop;
* taken over (paused with the person holding the desktop): Hand back (a resume), Change
  window, Stop;
* ended: none.

A control is carried out by the process that drives the session (its kernel holds the
operator and the action in flight): the dashboard asks it through the kernel's control
channel (``deskpilot.kernel.control_requests.ControlClient``) and waits for the answer. A
refusal comes back as a typed :class:`DeskpilotError` that the page shows in words — seed
003 §12.2's tray wrote its failures only to a log.

Change window lists the desktop's windows through a host client of this process (the host
process is spawned on first use and kept), minimised windows left out: a window the person
cannot see is not one they mean to hand the agent.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Literal, get_args

from deskpilot.kernel.control_requests import ControlClient
from deskpilot.oversight.host_access import SharedHost
from deskpilot.oversight.sessions_view import TAKEN_OVER, SessionSummary
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import WindowInfo
from deskpilot.store.db import Database
from deskpilot.store.session_rows import SessionRow

Verb = Literal["pause", "takeover", "resume", "stop", "bind_target"]
VERBS: tuple[Verb, ...] = get_args(Verb)
WINDOW_ID_RE = re.compile(r"^0x[0-9a-fA-F]{1,16}$")
#: how long the dashboard waits for the owning process to carry a control out
CONTROL_TIMEOUT_S = 10.0
LIST_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class Control:
    verb: Verb
    #: the i18n key of its label
    label: str
    style: str = ""


def available(summary: SessionSummary) -> list[Control]:
    """The controls that apply to the session now, in the order they are shown."""
    if not summary.live:
        return []
    stop = Control("stop", "sessions.control.stop", "danger")
    if summary.badge == TAKEN_OVER:
        return [Control("resume", "sessions.control.hand_back", "primary"), stop]
    if summary.state in ("paused", "handoff_required"):
        return [
            Control("resume", "sessions.control.resume", "primary"),
            Control("takeover", "sessions.control.takeover"),
            stop,
        ]
    return [
        Control("pause", "sessions.control.pause"),
        Control("takeover", "sessions.control.takeover"),
        stop,
    ]


def can_change_window(summary: SessionSummary) -> bool:
    """Change window is offered only while the session is paused (taken over included)."""
    return summary.live and summary.state == "paused"


def parse_verb(value: str | None) -> Verb:
    for verb in VERBS:
        if value == verb:
            return verb
    raise DeskpilotError(
        ErrorCode.INVALID_REQUEST,
        f"unknown control {str(value)[:20]!r}; use one of {', '.join(VERBS)}",
    )


def parse_window_id(value: str | None) -> str:
    if not value or not WINDOW_ID_RE.match(value):
        raise DeskpilotError(
            ErrorCode.INVALID_REQUEST,
            "choose a window from the list (a window id looks like 0x1a00003)",
            details={"windowId": str(value or "")[:20]},
        )
    return value


async def send(
    db: Database,
    session_id: str,
    verb: Verb,
    *,
    window_id: str | None = None,
    by: str = "person",
    timeout_s: float = CONTROL_TIMEOUT_S,
) -> SessionRow:
    """Carry out one control through the kernel's control channel; raises its refusal."""
    args = None
    if verb == "bind_target":
        args = {"windowId": parse_window_id(window_id)}
    return await ControlClient(db).send(session_id, verb, args, by=by, timeout_s=timeout_s)


@dataclass(frozen=True, slots=True)
class WindowChoice:
    window_id: str
    title: str
    app: str
    focused: bool


def choices(windows: list[WindowInfo]) -> list[WindowChoice]:
    """The windows a person may pick: not minimised, each with its app and title."""
    out = []
    for w in windows:
        if w.minimized:
            continue
        app = w.app.name or w.app.executable or w.app.wm_class or ""
        out.append(WindowChoice(w.window_id, w.title, app, w.focused))
    return out


class WindowLister:
    """``list_windows`` through the dashboard's shared reading host."""

    def __init__(self, host: SharedHost) -> None:
        self._host = host

    async def windows(self, timeout_s: float = LIST_TIMEOUT_S) -> list[WindowChoice]:
        backend = await self._host.backend()
        try:
            listed = await asyncio.wait_for(backend.list_windows(), timeout_s)
        except TimeoutError:
            raise DeskpilotError(
                ErrorCode.ENVIRONMENT_UNAVAILABLE,
                f"the desktop did not list its windows within {timeout_s:g} s",
            ) from None
        return choices(listed)


__all__ = [
    "VERBS",
    "Control",
    "Verb",
    "WindowChoice",
    "WindowLister",
    "available",
    "can_change_window",
    "choices",
    "parse_verb",
    "parse_window_id",
    "send",
]
