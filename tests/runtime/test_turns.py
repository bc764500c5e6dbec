"""Turns: turn_id from _meta, else the client session; a new turn_id ends the previous one."""

from __future__ import annotations

from deskpilot.runtime.budget import TaskBudget
from deskpilot.runtime.turns import Turn, TurnTracker


def test_turn_ids_and_sessions() -> None:
    ended: list[str] = []

    def on_end(turn: Turn) -> None:
        ended.append(turn.key)

    tracker = TurnTracker(lambda m: TaskBudget(m), on_turn_end=on_end)
    implicit = tracker.current("conn:1", None)
    assert implicit.key == "session:conn:1" and not implicit.explicit
    assert tracker.current("conn:1", None) is implicit
    t1 = tracker.current("conn:1", "a")
    assert ended == ["session:conn:1"] and t1.key == "turn:a"
    # a call without turn_id while an explicit turn is open belongs to it
    assert tracker.current("conn:1", None) is t1
    t1.budget.admit_action()
    t2 = tracker.current("conn:1", "b")
    assert ended[-1] == "turn:a" and t2.budget.actions == 0
    # another connection naming turn b shares it (a reconnect keeps the budget)
    t2.budget.admit_action()
    assert tracker.current("conn:2", "b").budget.actions == 1
    # sessions are independent
    other = tracker.current("conn:3", None)
    assert other.key == "session:conn:3"
