"""One decision action through the atomic tool path, on the state the model just saw.

The operator never invents a stateId: it passes the one of the state it showed the model, so
the kernel's freshness check applies to every action exactly as it does to an agent's own
call. The argument check is the runtime's (runtime/tool_args.py); a refusal comes back as
text for the model, unless it ends the task (runtime/delegated/endings.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.runtime import action_tools
from deskpilot.runtime import tool_args as ta
from deskpilot.runtime.budget import BudgetMode, TaskBudget
from deskpilot.runtime.call import Call, ToolOutcome
from deskpilot.runtime.context import ToolContext
from deskpilot.runtime.delegated.decision_tools import ACTIONS
from deskpilot.runtime.delegated.endings import End, ending
from deskpilot.runtime.diagnostics import Diagnostic, Stopwatch, Timings
from deskpilot.runtime.refusals import safe_error
from deskpilot.runtime.task_registry import DelegatedTask
from deskpilot.runtime.turns import Turn


def operator_turn(task: DelegatedTask) -> Turn:
    """The operator's own turn: its stateIds are its own, and no bridge budget applies (the
    task contract's limits do)."""
    return Turn(key=task.key, explicit=True, budget=TaskBudget(BudgetMode.UNBOUNDED))


def new_call(task: DelegatedTask, turn: Turn, tool: str) -> Call:
    timings = Timings()
    return Call(tool, task.key, turn, Diagnostic(tool=tool, timings=timings), Stopwatch(timings))


@dataclass
class Acted:
    """What one action did: its outcome (None when it was refused or failed), the text the
    model reads, whether it was an error, and the end of the task it means, if any."""

    outcome: ToolOutcome | None
    text: str
    is_error: bool
    end: End | None = None


async def act(
    ctx: ToolContext,
    task: DelegatedTask,
    turn: Turn,
    name: str,
    arguments: dict[str, Any],
    state_id: str | None,
) -> Acted:
    call = new_call(task, turn, name)
    try:
        if state_id is None:
            raise DeskpilotError(ErrorCode.STATE_ID_INVALID, "there is no current state to act on")
        args = ta.validate_args(name, ACTIONS[name][0], {**arguments, "state_id": state_id})
        out = await action_tools.act(ctx, call, args)
    except DeskpilotError as exc:
        _note(task, call, exc.code.value)
        code, message, _, details = safe_error(exc)
        reason = details.get("reason") or details.get("policyReason")
        why = f" (reason: {reason})" if isinstance(reason, str) and reason else ""
        text = f"{name} was not done: {code.value}{why}: {message}"
        return Acted(None, text, True, ending(exc))
    _note(task, call, call.diag.code)
    return Acted(out, out.text, False)


def _note(task: DelegatedTask, call: Call, code: str | None) -> None:
    steps = call.diag.steps
    task.actions += 1
    task.last_action = {
        "tool": call.tool,
        "outcome": call.diag.action_outcome.value,
        "risk": next((s.risk for s in reversed(steps) if s.risk), None),
        "code": code,
        "noop": call.diag.noop,
        "at": time.time(),
    }
