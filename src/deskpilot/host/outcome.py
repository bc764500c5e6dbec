"""What one dispatched action did, before the dispatcher settles and reports it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from deskpilot.protocol.wire import SelectedText


@dataclass(frozen=True, slots=True)
class Effect:
    """What the host saw of an action's effect where it checked one (``ActionResult.effect``
    and ``effect_note``): the note says why it is unconfirmed, in words for the agent — never
    the text or value read back (it may be a secret)."""

    seen: Literal["confirmed", "unconfirmed"]
    note: str | None = None
    #: it showed only after a first look found it missing (text a field took a moment to
    #: show): a state read before then may not show it, and is read again
    late: bool = False


#: a check of an action's effect, run once the UI settled (host/effect_checks.py)
EffectCheck = Callable[[], Awaitable[Effect]]


@dataclass(slots=True)
class Outcome:
    method: Literal["semantic", "synthetic", "mixed", "none"]
    detail: str
    dispatched: bool = True
    #: a semantic op that still has to settle on the app's events, counted from this moment
    events_since: float | None = None
    #: when the app answered that op's call (the toolkit's delay is counted from here)
    answered_at: float | None = None
    #: a click on a list/table/tree item: "select" (a single click), "activate" (count 2) or
    #: "toggle" (a single click on a check box cell)
    item_click: Literal["select", "activate", "toggle"] | None = None
    #: how its effect is checked once the UI settled (None: it is not)
    check: EffectCheck | None = None
    #: select_text: the selection read back from the element once settled (its text is
    #: never logged)
    selected: SelectedText | None = None
