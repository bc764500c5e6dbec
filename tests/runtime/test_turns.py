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


def _tracker() -> tuple[TurnTracker, list[str]]:
    ended: list[str] = []
    return TurnTracker(lambda m: TaskBudget(m), on_turn_end=lambda t: ended.append(t.key)), ended


def test_a_new_turn_id_moves_only_the_agent_session_that_sent_it() -> None:
    """Two agent sessions in one turn: B's next turn_id takes B out of it, not A."""
    tracker, ended = _tracker()
    shared = tracker.current("a", "same")
    assert tracker.current("b", "same") is shared and shared.members == {"a", "b"}
    shared.budget.admit_action()
    b_next = tracker.current("b", "b-next")
    assert b_next.key == "turn:b-next" and b_next.budget.actions == 0
    assert ended == [] and shared.members == {"a"}
    # A is still in its turn, with its budget, with or without the turn_id
    assert tracker.current("a", None) is shared and tracker.current("a", "same") is shared
    assert tracker.peek("a") is shared and shared.budget.actions == 1
    assert {t.key for t in tracker.turns()} == {"turn:same", "turn:b-next"}
    # the turn ends when its last member moves on
    tracker.current("a", "a-next")
    assert ended == ["turn:same"]
    assert {t.key for t in tracker.turns()} == {"turn:b-next", "turn:a-next"}


def test_a_turn_ended_by_its_last_member_starts_afresh_when_named_again() -> None:
    tracker, ended = _tracker()
    first = tracker.current("a", "t")
    first.budget.admit_action()
    tracker.current("a", "u")
    assert ended == ["turn:t"]
    again = tracker.current("a", "t")
    assert again is not first and again.budget.actions == 0 and again.members == {"a"}


def test_an_implicit_turn_is_its_agent_sessions_own() -> None:
    """session:<agent session> is only ever that session's; joining an explicit turn ends it,
    and another agent session's turn_id never touches it."""
    tracker, ended = _tracker()
    a_implicit = tracker.current("a", None)
    tracker.current("b", None)
    tracker.current("b", "x")
    assert ended == ["session:b"] and tracker.current("a", None) is a_implicit
    tracker.current("a", "x")
    assert ended == ["session:b", "session:a"]
    joined = tracker.peek("a")
    assert joined is not None and joined is tracker.peek("b") and joined.members == {"a", "b"}


def test_a_member_joining_and_leaving_keeps_the_turn_for_the_others() -> None:
    """A reconnect under a new session id joins the turn (same budget); the turn outlives
    either member moving on, and ends once both have."""
    tracker, ended = _tracker()
    t = tracker.current("conn:1", "task")
    t.budget.admit_action()
    assert tracker.current("conn:2", "task").budget.actions == 1
    tracker.current("conn:1", "later")
    assert "turn:task" not in ended and tracker.peek("conn:2") is t
    tracker.current("conn:2", "later")
    assert ended[-1] == "turn:task" and t.members == set()
    assert tracker.peek("conn:1") is tracker.peek("conn:2")
