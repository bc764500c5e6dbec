"""Budgets: unbounded reports null limits but counts; bounded refuses; switching keeps counts."""

from __future__ import annotations

import pytest

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.runtime.budget import BudgetMode, TaskBudget
from deskpilot.runtime.turns import TurnTracker


class Clock:
    def __init__(self) -> None:
        self.t = 50.0

    def __call__(self) -> float:
        return self.t


def test_unbounded_counts_with_null_limits() -> None:
    clock = Clock()
    b = TaskBudget(clock=clock)
    for _ in range(100):
        b.admit_action()
    clock.t += 500
    b.check_read()
    snap = b.to_json()
    assert snap["mode"] == "unbounded"
    assert snap["durationMs"] is None and snap["maxActions"] is None
    assert snap["remainingMs"] is None and snap["remainingActions"] is None
    assert snap["actions"] == 100
    assert snap["elapsedMs"] == 500_000
    assert b.deadline() is None


def test_bounded_actions_spent_reads_still_work() -> None:
    clock = Clock()
    b = TaskBudget(BudgetMode.BOUNDED, clock=clock)
    for _ in range(30):
        b.admit_action()
    with pytest.raises(DeskpilotError) as exc:
        b.admit_action()
    assert exc.value.code is ErrorCode.BUDGET_EXHAUSTED
    assert exc.value.details["budget"] == "actions"
    b.check_read()  # time is left: reads work
    assert b.to_json()["remainingActions"] == 0


def test_bounded_time_runs_out_for_reads_too() -> None:
    clock = Clock()
    b = TaskBudget(BudgetMode.BOUNDED, clock=clock)
    b.check_read()
    assert b.deadline() == pytest.approx(50.0 + 180.0)
    clock.t += 179.9
    b.admit_action()
    clock.t += 0.2
    with pytest.raises(DeskpilotError) as exc:
        b.check_read()
    assert exc.value.details["budget"] == "time"


def test_switching_modes_never_resets_counters() -> None:
    clock = Clock()
    tracker = TurnTracker(lambda m: TaskBudget(m, clock=clock))
    turn = tracker.current("s", None)
    for _ in range(31):
        turn.budget.admit_action()
    clock.t += 200
    tracker.set_mode(BudgetMode.BOUNDED)
    assert turn.budget.actions == 31
    assert turn.budget.to_json()["remainingActions"] == 0
    with pytest.raises(DeskpilotError):
        turn.budget.check_read()  # a long unbounded task may already be over a bounded budget
    tracker.set_mode(BudgetMode.UNBOUNDED)
    turn.budget.admit_action()
    assert turn.budget.actions == 32


def test_status_does_not_start_the_clock() -> None:
    clock = Clock()
    b = TaskBudget(BudgetMode.BOUNDED, clock=clock)
    clock.t += 1000
    assert b.to_json()["elapsedMs"] == 0 and b.to_json()["started"] is False
    b.check_read()
    assert b.to_json()["remainingMs"] == 180_000
