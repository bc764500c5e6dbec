"""In-flight actions, and the person's physical Escape that cancels only the current one.

The kill-switch thread reports every Escape press it sees on the display. Telling the person's
Escape from the agent's is done by timing, honestly stated: X11 cannot say who pressed a key.
XTEST input from our own host and a person typing through a VNC viewer (which also injects
through XTEST) arrive the same way, so the source device cannot decide it. What we do know is
what our own host is dispatching: an Escape that arrives while one of our in-flight actions
sends Escape (press_key containing Escape, or text containing ESC), or within
:data:`OWN_ESCAPE_TAIL` after such an action ended, is ours and ignored; any other Escape
during an action is the person's and interrupts every in-flight action (each ends
``handoff_required``). An Escape with no action in flight is the person's own business and does
nothing here. Limits: a second deskpilot process's synthetic Escape is not known to this one.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from deskpilot.kernel.policy import signals as sig
from deskpilot.protocol.wire import Action, PasteTextAction, PressKeyAction, TypeTextAction

OWN_ESCAPE_TAIL = 0.25  # seconds an own Escape may arrive after its action returned


def sends_escape(action: Action) -> bool:
    if isinstance(action, PressKeyAction):
        return any(sig.chord_parts(k)[1] in sig.ESCAPE_KEYS for k in action.keys)
    if isinstance(action, TypeTextAction | PasteTextAction):
        return "\x1b" in action.text
    return False


@dataclass(eq=False)
class InFlight:
    session_id: str
    action_id: str
    sends_escape: bool
    started: float = field(default_factory=time.monotonic)
    interrupted: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Future[Any] | None = None
    interrupt_reason: str | None = None


class InFlightRegistry:
    def __init__(self) -> None:
        self._items: dict[str, InFlight] = {}  # by action id
        self._own_escape_until = 0.0

    def add(self, session_id: str, action_id: str, action: Action) -> InFlight:
        item = InFlight(session_id, action_id, sends_escape(action))
        self._items[action_id] = item
        return item

    def remove(self, item: InFlight) -> None:
        self._items.pop(item.action_id, None)
        if item.sends_escape:
            self._own_escape_until = max(self._own_escape_until, time.monotonic() + OWN_ESCAPE_TAIL)

    def for_session(self, session_id: str) -> list[InFlight]:
        return [i for i in self._items.values() if i.session_id == session_id]

    def all(self) -> list[InFlight]:
        return list(self._items.values())

    def physical_escape(self, at: float | None = None) -> list[InFlight]:
        """Handle an Escape press seen on the display (call on the loop thread)."""
        now = time.monotonic() if at is None else at
        items = list(self._items.values())
        if not items:
            return []
        if now <= self._own_escape_until or any(i.sends_escape for i in items):
            return []  # our own host is (or just was) sending Escape
        for item in items:
            item.interrupt_reason = "physical_escape"
            item.interrupted.set()
        return items
