"""Turns: the boundary that stateIds, preview tokens and the bounded budget end at.

MCP has no turn of its own. A turn is named by ``turn_id`` in the request's ``_meta`` when the
client sends one, otherwise it is the whole MCP client session (``session:<agent session>``).
A call *without* a ``turn_id`` while an explicit turn is open belongs to that turn: clients do
not always stamp every request.

Explicit turns are kept by id, not by agent session, so reconnecting with the same
``turn_id`` keeps its bounded budget, and two agent sessions that send the same ``turn_id``
are in one turn (one budget, each other's stateIds, one ``stop``). A turn therefore has
*members*: a new ``turn_id`` moves only the agent session that sent it, and the turn it left
ends (its stateIds die, its preview tokens are revoked) once no agent session is in it any
more. Ending it on the first member's move would end another agent's task under it: its next
action, on a state it had just read, would be refused ``other_turn`` although that agent never
started a new turn. The cost is that a member that went away without moving on (a reconnect
under a new session id) keeps its turn open; its stateIds still run out after 60 s and its
preview tokens after their own TTL.
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
    explicit: bool
    budget: TaskBudget
    #: the agent sessions in this turn now; the turn ends when the last one leaves
    members: set[str] = field(default_factory=set)
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
        """The turn of a call of ``agent_session`` carrying ``turn_id`` (None: not sent)."""
        cur = self.peek(agent_session)
        if turn_id is None:
            if cur is not None:
                return cur
            key = f"session:{agent_session}"
        else:
            key = f"turn:{turn_id}"
            if cur is not None and cur.key == key:
                return cur
        if cur is not None:
            self._leave(cur, agent_session)
        turn = self._turns.get(key)
        if turn is None:
            turn = Turn(
                key=key, explicit=turn_id is not None, budget=self._budget_factory(self.mode)
            )
            self._turns[key] = turn
        turn.members.add(agent_session)
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

    def leave(self, agent_session: str) -> None:
        """The agent session's user task is over (deskpilot's own agent ends each one): the
        turn ends once no member is left in it."""
        cur = self.peek(agent_session)
        if cur is not None:
            self._leave(cur, agent_session)

    def _leave(self, turn: Turn, agent_session: str) -> None:
        turn.members.discard(agent_session)
        self._by_session.pop(agent_session, None)
        if turn.members:
            return  # another agent session is still working in it
        self._turns.pop(turn.key, None)
        if self._on_turn_end is not None:
            self._on_turn_end(turn)
