"""What the live view outlines: where each live session's agent is acting.

Read from the database, so it is right whichever process drives the session (``deskpilot
serve``, ``deskpilot run``, ``deskpilot agent``): the ledger row of the session's latest
action, and

* once the action has run, ``outcome.target_bounds`` — the screen rectangle the host aimed
  at (the element's extents in the tree the action was checked against, or a 1×1 rectangle at
  a positional action's point; ``ActionResult.target_bounds``);
* while it is still requested or executing (the host answers only when it is done), the
  window of the frame it was made against (the ``observation_created`` event with that
  frameId): the whole window is outlined as "the agent is acting here".

An action's outline stays :data:`HOLD_S` seconds after it finished, so a click that took a
tenth of a second is still seen. Only the rating and the target's geometry are read — never
typed text, which the ledger does not hold anyway.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Literal

from deskpilot.protocol.session import EventType
from deskpilot.protocol.wire import Rect
from deskpilot.store.db import Database
from deskpilot.store.ledger import ActionRepository, ActionRow
from deskpilot.store.session_rows import SessionRepository

#: how long a finished action stays outlined (seconds)
HOLD_S = 3.0
#: the database is read at most this often per source (seconds); frames in between reuse it
READ_EVERY_S = 0.2
#: how far back the frame an action was made against is looked for
FRAME_EVENTS = 50

TargetState = Literal["acting", "done", "failed"]


@dataclass(frozen=True, slots=True)
class AgentTarget:
    session_id: str
    kind: str  # the action's kind: click, type_text, …
    risk: str  # "L0" … "L4"
    state: TargetState
    #: screen pixels; None while only the window is known
    bounds: Rect | None
    window_id: str | None
    point: bool = False  # a positional action: bounds is the 1×1 point

    def wire(self, origin: Rect, windows: dict[str, Rect]) -> dict[str, Any] | None:
        """The outline in the frame's pixels (a frame taken at ``origin``), or None when its
        place is not in this frame."""
        rect = self.bounds
        shape = "point" if self.point else "element"
        if rect is None:
            rect = windows.get(self.window_id or "")
            shape = "window"
        if rect is None:
            return None
        return {
            "x": rect.x - origin.x,
            "y": rect.y - origin.y,
            "w": rect.width,
            "h": rect.height,
            "shape": shape,
            "kind": self.kind,
            "risk": self.risk,
            "state": self.state,
            "session": self.session_id,
        }


def _state(row: ActionRow) -> TargetState | None:
    if row.status in ("requested", "executing"):
        return "acting"
    if row.status in ("executed", "noop"):
        return "done"
    if row.status == "failed":
        return "failed"
    return None  # blocked: nothing reached the desktop


def _bounds(row: ActionRow) -> Rect | None:
    raw = (row.outcome or {}).get("target_bounds")
    if not isinstance(raw, dict):
        return None
    try:
        return Rect.model_validate(raw)
    except ValueError:
        return None


class AgentTargets:
    """The live sessions' current targets, read at most every :data:`READ_EVERY_S`."""

    def __init__(self, db: Database, *, clock: Any = time.time) -> None:
        self.db = db
        self._clock = clock
        self._sessions = SessionRepository(db)
        self._actions = ActionRepository(db)
        self._cached: tuple[float, list[AgentTarget]] | None = None

    def current(self) -> list[AgentTarget]:
        now = time.monotonic()
        if self._cached is not None and now - self._cached[0] < READ_EVERY_S:
            return self._cached[1]
        found = self.read()
        self._cached = (now, found)
        return found

    def read(self) -> list[AgentTarget]:
        out: list[AgentTarget] = []
        wall = self._clock()
        for session in self._sessions.list_active():
            latest = self.db.query_one(
                "SELECT id FROM actions WHERE session_id = ? "
                "ORDER BY created_at DESC, rowid DESC LIMIT 1",
                (session.id,),
            )
            row = self._actions.get(str(latest["id"])) if latest is not None else None
            if row is None:
                continue
            state = _state(row)
            if state is None:
                continue
            if state != "acting" and (row.finished_at is None or wall - row.finished_at > HOLD_S):
                continue
            bounds = _bounds(row)
            out.append(
                AgentTarget(
                    session_id=session.id,
                    kind=row.kind,
                    risk=row.risk_level.label,
                    state=state,
                    bounds=bounds,
                    window_id=None if bounds is not None else self._window_of(row),
                    point=bounds is not None and bounds.width == 1 and bounds.height == 1,
                )
            )
        return out

    def _window_of(self, row: ActionRow) -> str | None:
        """The window of the frame the action was made against."""
        if row.frame_id is None:
            return None
        events = self.db.query(
            "SELECT payload_json FROM timeline_events WHERE session_id = ? AND type = ? "
            "ORDER BY seq DESC LIMIT ?",
            (row.session_id, EventType.OBSERVATION_CREATED.value, FRAME_EVENTS),
        )
        for event in events:
            try:
                payload = json.loads(event["payload_json"] or "{}")
            except ValueError:
                continue
            if payload.get("frameId") == row.frame_id:
                window = payload.get("windowId")
                return str(window) if window else None
        return None
