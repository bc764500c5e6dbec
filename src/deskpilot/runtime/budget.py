"""Per-task budgets: unbounded (the MCP default) or bounded (180 s / 30 action attempts).

Unbounded mode creates no deadline and reports its limits as null, but still counts elapsed
time and action attempts, so a switch to bounded mode later sees the real spend: switching
modes changes only whether the limits are checked, never the counters. Only a new user task
(a new turn) starts a new budget.

The clock starts at the task's first desktop call (status queries do not start it) and runs in
wall time: planning between calls, approvals and waits all count. At expiry, calls in flight
are cancelled; cancelling does not undo an action that already ran.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from typing import Any

from deskpilot.protocol.errors import ErrorCode
from deskpilot.runtime.refusals import refusal

BOUNDED_DURATION_MS = 180_000
BOUNDED_MAX_ACTIONS = 30


class BudgetMode(enum.StrEnum):
    UNBOUNDED = "unbounded"
    BOUNDED = "bounded"


class TaskBudget:
    def __init__(
        self,
        mode: BudgetMode = BudgetMode.UNBOUNDED,
        *,
        duration_ms: int = BOUNDED_DURATION_MS,
        max_actions: int = BOUNDED_MAX_ACTIONS,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.mode = mode
        self.duration_ms = duration_ms
        self.max_actions = max_actions
        self._clock = clock or time.monotonic
        self.started_at: float | None = None
        self.actions = 0

    @property
    def bounded(self) -> bool:
        return self.mode is BudgetMode.BOUNDED

    def start(self) -> None:
        if self.started_at is None:
            self.started_at = self._clock()

    def elapsed_ms(self) -> float:
        if self.started_at is None:
            return 0.0
        return (self._clock() - self.started_at) * 1000.0

    def remaining_ms(self) -> float | None:
        if not self.bounded:
            return None
        return max(0.0, self.duration_ms - self.elapsed_ms())

    def remaining_actions(self) -> int | None:
        if not self.bounded:
            return None
        return max(0, self.max_actions - self.actions)

    def deadline(self) -> float | None:
        """Monotonic time at which calls in flight are cancelled (bounded mode only)."""
        if not self.bounded:
            return None
        self.start()
        assert self.started_at is not None
        return self.started_at + self.duration_ms / 1000.0

    def expired(self) -> bool:
        return (
            self.bounded and self.started_at is not None and (self.elapsed_ms() >= self.duration_ms)
        )

    def check_read(self) -> None:
        """Reads need time left; spent actions do not stop them."""
        self.start()
        if self.expired():
            raise refusal(
                ErrorCode.BUDGET_EXHAUSTED,
                f"The bounded budget of this task ({self.duration_ms // 1000} s) is spent. "
                "Report to the user; a new task starts a new budget.",
                budget="time",
            )

    def admit_action(self) -> None:
        """Check, then count one action attempt (it counts even if it later fails)."""
        self.check_read()
        if self.bounded and self.actions >= self.max_actions:
            raise refusal(
                ErrorCode.BUDGET_EXHAUSTED,
                f"The bounded budget of this task ({self.max_actions} action attempts) is "
                "spent. Reads still work; report to the user.",
                budget="actions",
            )
        self.actions += 1

    def switch(self, mode: BudgetMode) -> None:
        """Change only whether limits are checked; the counters are kept."""
        self.mode = mode

    def to_json(self) -> dict[str, Any]:
        bounded = self.bounded
        remaining_ms = self.remaining_ms()
        return {
            "mode": self.mode.value,
            "durationMs": self.duration_ms if bounded else None,
            "maxActions": self.max_actions if bounded else None,
            "remainingMs": None if remaining_ms is None else round(remaining_ms),
            "remainingActions": self.remaining_actions(),
            "elapsedMs": round(self.elapsed_ms()),
            "actions": self.actions,
            "started": self.started_at is not None,
        }
