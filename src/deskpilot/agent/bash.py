"""``bash``: a POSIX shell command as a governed action.

The provider's shell guard has already refused PowerShell and bare backslash paths before the
call got here. What remains is an action like any other: it spends one action attempt of the
user task's budget (the loop admits it), it runs in the agent's kernel session
(``DesktopTools.kernel_session``: the halt, a user's stop, a displacement refuse it), and the
kernel rates it (kernel/policy/shell_rules.py: destructive, privileged, network and
outside-the-working-directory commands are L3 and wait for the person's one-time
confirmation; the task contract can forbid ``bash``), records it in the ledger without its
text or output, and runs it with a timeout (agent/shell.py). Its output goes back to the model
as an untrusted tool result, bounded, saying when it was cut.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deskpilot.agent.shell import governed_bash
from deskpilot.agent.tools import ACT, ToolResult, TurnScope
from deskpilot.provider import ToolSpec as ModelTool

DEFAULT_TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 300.0


class BashTool:
    kind = ACT
    spec = ModelTool(
        "bash",
        "Run a POSIX sh command in the working directory (stdin is closed; output is "
        "returned). Commands that delete recursively, need privileges, use the network or "
        "write outside the working directory wait for the person's confirmation.",
        {
            "type": "object",
            "properties": {
                "command": {"type": "string", "minLength": 1},
                "timeout_s": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_TIMEOUT_S},
            },
            "required": ["command"],
            "additionalProperties": False,
        },
    )

    async def run(self, arguments: Mapping[str, Any], scope: TurnScope) -> ToolResult:
        command = str(arguments["command"])
        timeout_s = float(arguments.get("timeout_s") or DEFAULT_TIMEOUT_S)
        async with scope.desktop.kernel_session(scope.turn_id) as session_id:
            outcome = await governed_bash(
                scope.desktop.kernel, session_id, command, cwd=str(scope.cwd), timeout_s=timeout_s
            )
        return ToolResult(
            outcome.text(),
            is_error=outcome.failed,
            code="command_failed" if outcome.failed else None,
            kind=ACT,
            risk=outcome.risk,
            details={
                "actionId": outcome.action_id,
                "exitCode": outcome.exit_code,
                "commandMs": round(outcome.duration_ms, 1),
            },
        )
