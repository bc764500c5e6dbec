"""Turns: the boundary that stateIds, preview tokens and the bounded budget end at.

MCP has no turn of its own. A turn is named by ``turn_id`` in the request's ``_meta`` when the
client sends one, otherwise it is the whole MCP client session. A new ``turn_id`` ends the
previous turn of that agent session (its stateIds die, its preview tokens are revoked, a new
budget starts). A call *without* a ``turn_id`` while an explicit turn is open belongs to that
turn: clients do not always stamp every request. Explicit turns are kept by id across
connections, so reconnecting does not reset a bounded budget.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from deskpilot.runtime.budget import BudgetMode, TaskBudget
from deskpilot.runtime.recovery import Recovery


@dataclass
class Turn:
    key: str
    agent_session: str
    explicit: bool
    budget: TaskBudget
    recovery: Recovery | None = None
    #: the user stopped this task; actions are refused until a new turn
    stopped: bool = False
    stop_reason: str | None = None
    stopped_at: float | None = None
    started_at: float = field(default_factory=time.time)


class TurnTracker:
    def __init__(
        self,
        budget_factory: Callable[[BudgetMode], TaskBudget],
        mode: BudgetMode = BudgetMode.UNBOUNDED,
        on_turn_end: Callable[[Turn], None] | None = None,
    ) -> None:
        self._budget_factory = budget_factory
        self.mode = mode
        self._on_turn_end = on_turn_end
        self._turns: dict[str, Turn] = {}
        self._by_session: dict[str, str] = {}

    def current(self, agent_session: str, turn_id: str | None) -> Turn:
        cur_key = self._by_session.get(agent_session)
        cur = self._turns.get(cur_key) if cur_key is not None else None
        if turn_id is None:
            if cur is not None:
                return cur
            key = f"session:{agent_session}"
        else:
            key = f"turn:{turn_id}"
            if cur is not None and cur.key == key:
                return cur
        if cur is not None:
            self._end(cur)
        turn = self._turns.get(key)
        if turn is None:
            turn = Turn(
                key=key,
                agent_session=agent_session,
                explicit=turn_id is not None,
                budget=self._budget_factory(self.mode),
            )
            self._turns[key] = turn
        self._by_session[agent_session] = key
        return turn

    def peek(self, agent_session: str) -> Turn | None:
        key = self._by_session.get(agent_session)
        return self._turns.get(key) if key is not None else None

    def turns(self) -> list[Turn]:
        return list(self._turns.values())

    def set_mode(self, mode: BudgetMode) -> None:
        """Switch every open turn (counters kept) and the default for new turns."""
        self.mode = mode
        for turn in self._turns.values():
            turn.budget.switch(mode)

    def _end(self, turn: Turn) -> None:
        self._turns.pop(turn.key, None)
        for session, key in list(self._by_session.items()):
            if key == turn.key:
                del self._by_session[session]
        if self._on_turn_end is not None:
            self._on_turn_end(turn)
