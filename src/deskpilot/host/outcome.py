"""What one dispatched action did, before the dispatcher settles and reports it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

#: what the host saw of an action's effect, and why it could not see it (ActionResult)
Effect = tuple[Literal["confirmed", "unconfirmed"], str | None]


@dataclass(slots=True)
class Outcome:
    method: Literal["semantic", "synthetic", "mixed", "none"]
    detail: str
    dispatched: bool = True
    #: a semantic op that still has to settle on the app's events, counted from this moment
    events_since: float | None = None
    #: when the app answered that op's call (the toolkit's delay is counted from here)
    answered_at: float | None = None
    #: a click on a list/table/tree item: "select" (a single click) or "activate" (count 2)
    item_click: Literal["select", "activate"] | None = None
    #: the check of the action's effect, run once the action settled (typing into a sheet
    #: cell: host/sheet_cells.py); None: nothing to check
    check: Callable[[], Awaitable[Effect]] | None = None
