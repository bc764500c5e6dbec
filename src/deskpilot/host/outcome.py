"""What one dispatched action did, before the dispatcher settles and reports it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from deskpilot.protocol.wire import SelectedText


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
    #: select_text: the selection read back from the element once settled (its text is
    #: never logged)
    selected: SelectedText | None = None
