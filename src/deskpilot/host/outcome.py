"""What one dispatched action did, before the dispatcher settles and reports it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from deskpilot.host.text_checks import TextCheck


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
    #: text put into a field: the field as it was, and what the action should leave in it
    #: (read back once the action settled: host/text_entry.py)
    check: TextCheck | None = None
