"""Step 1 of every action: may this session act at all?

The session exists and may act (an executable state); the kill-switch halt does not bind its
agent; the person has not taken the desktop over (kernel/takeover.py: a takeover of *any*
session refuses every session's actions with ``handoff_required`` — checked before the
session's own state, so an action of the taken-over, paused session says so too); computer
use is enabled; the contract's step/runtime/no-op budgets are not spent.
Nothing else is looked at yet — these refusals cost no ledger row, because nothing was rated
(docs/kernel.md, "Broker"). App launches pass the same door (kernel/governed_launch.py).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from deskpilot.desktop.virtual import is_private_display
from deskpilot.kernel.halt import Halt
from deskpilot.kernel.session_manager import SessionManager
from deskpilot.kernel.takeover import Takeover
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.store.session_rows import SessionRow
from deskpilot.store.settings import SettingsModel


def admit(
    sessions: SessionManager,
    halt: Halt,
    takeover: Takeover,
    settings: Callable[[], SettingsModel],
    session_id: str,
) -> tuple[SessionRow, SettingsModel]:
    """The checks every desktop-changing request passes first: the halt, the takeover hold,
    the enabled setting, a session that accepts actions, its budgets."""
    row = sessions.require(session_id)
    halt.check(row.agent_session_id)
    takeover.check()
    current = settings()
    if not current.enabled:
        raise DeskpilotError(
            ErrorCode.COMPUTER_DISABLED,
            "computer use is turned off in the settings (enabled=false); observing works",
        )
    check_environment(current)
    row = sessions.require_executable(session_id)
    check_budgets(row)
    return row, current


def check_environment(current: SettingsModel, display: str | None = None) -> None:
    """The ``environments`` setting: may agents act on the kind of desktop this process drives?

    The desktop is the X display in ``DISPLAY`` (the host this kernel spawns inherits it). It
    is a ``privateDesktop`` when deskpilot started it and it still runs (its state file names
    a live Xvfb: desktop/virtual.py, ``is_private_display``), else ``myDesktop`` — the
    person's own. A kind that is off answers ``computer_disabled`` (reason
    ``environment_disabled``, naming the kind); observing is never gated here. Without a
    display there is nothing to act on and the host says so itself.
    """
    display = display if display is not None else os.environ.get("DISPLAY")
    if not display:
        return
    private = is_private_display(display)
    kind = "privateDesktop" if private else "myDesktop"
    allowed = current.environments.private_desktop if private else current.environments.my_desktop
    if not allowed:
        raise DeskpilotError(
            ErrorCode.COMPUTER_DISABLED,
            f"acting on {'a private virtual desktop' if private else 'your own desktop'} "
            f"({display}) is turned off in the settings (environments.{kind}=false); "
            "observing works",
            details={"reason": "environment_disabled", "environment": kind, "display": display},
        )


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
