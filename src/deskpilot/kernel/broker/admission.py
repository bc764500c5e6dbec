"""Step 1 of every action: may this session act at all?

The session exists and may act (an executable state); the kill-switch halt does not bind its
agent; computer use is enabled; the contract's step/runtime/no-op budgets are not spent.
Nothing else is looked at yet — these refusals cost no ledger row, because nothing was rated
(docs/kernel.md, "Broker"). App launches pass the same door (kernel/governed_launch.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from deskpilot.kernel.halt import Halt
from deskpilot.kernel.session_manager import SessionManager
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.store.session_rows import SessionRow
from deskpilot.store.settings import SettingsModel


def admit(
    sessions: SessionManager,
    halt: Halt,
    settings: Callable[[], SettingsModel],
    session_id: str,
) -> tuple[SessionRow, SettingsModel]:
    """The checks every desktop-changing request passes first: the halt, the enabled
    setting, a session that accepts actions, its budgets."""
    row = sessions.require(session_id)
    halt.check(row.agent_session_id)
    current = settings()
    if not current.enabled:
        raise DeskpilotError(
            ErrorCode.COMPUTER_DISABLED,
            "computer use is turned off in the settings (enabled=false); observing works",
        )
    row = sessions.require_executable(session_id)
    check_budgets(row)
    return row, current


def check_budgets(row: SessionRow) -> None:
    """The task contract's limits: steps taken, time since the session opened, and actions in
    a row that changed nothing (a loop that makes no progress ends instead of spinning)."""
    c = row.contract
    if row.steps >= c.max_steps:
        raise DeskpilotError(
            ErrorCode.TASK_STEP_LIMIT_EXCEEDED,
            f"the session used its {c.max_steps} steps",
            details={"maxSteps": c.max_steps},
        )
    if (time.time() - row.created_at) * 1000 > c.max_runtime_ms:
        raise DeskpilotError(
            ErrorCode.TASK_RUNTIME_EXCEEDED,
            f"the session ran longer than {c.max_runtime_ms} ms",
            details={"maxRuntimeMs": c.max_runtime_ms},
        )
    if row.consecutive_noops >= c.max_consecutive_noops:
        raise DeskpilotError(
            ErrorCode.TASK_NOOP_LIMIT_EXCEEDED,
            f"{row.consecutive_noops} actions in a row changed nothing",
            details={"maxConsecutiveNoops": c.max_consecutive_noops},
        )
