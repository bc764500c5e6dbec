"""Judge one model reply inside a turn: evaluate, then the repeat, shell and final guards."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from deskpilot.provider.protocol import ChatMessage, ToolCall, new_call_id
from deskpilot.provider.tools import shell_problem
from deskpilot.provider.turn.evaluate import Verdict, evaluate
from deskpilot.provider.turn.final_policy import check_final
from deskpilot.provider.turn.ledger import ExecutionLedger
from deskpilot.provider.turn.preparation import PreparedTurn


@dataclass(frozen=True)
class Step:
    """Accept a call, accept a final, or repair with ``code``."""

    call: ToolCall | None = None
    final: str | None = None
    code: str | None = None
    message: str = ""
    reason: str = ""
    verdict: Verdict | None = None

    @property
    def accepted(self) -> bool:
        return self.code is None


def judge(
    content: str,
    native_tool_calls: list[dict[str, Any]] | None,
    prepared: PreparedTurn,
    messages: Sequence[ChatMessage],
    ledger: ExecutionLedger,
) -> Step:
    verdict = evaluate(
        content,
        selected=prepared.selection.names,
        tools=prepared.tools,
        native_tool_calls=native_tool_calls,
    )
    if verdict.kind == "error":
        assert verdict.code is not None
        return Step(
            code=verdict.code, message=verdict.message, reason=verdict.form, verdict=verdict
        )
    if verdict.kind == "tool_call":
        assert verdict.name is not None and verdict.arguments is not None
        name, arguments = verdict.name, verdict.arguments
        if ledger.is_repeat(name, arguments):
            ledger.block(new_call_id(), name, arguments)
            return Step(
                code="repeated_tool_call",
                message=f"{name} was already called with the same arguments",
                reason="repeat",
                verdict=verdict,
            )
        problem = shell_problem(name, arguments)
        if problem:
            return Step(code="shell_mismatch", message=problem, reason="shell", verdict=verdict)
        return Step(call=ToolCall(name, arguments), verdict=verdict)
    text = verdict.text or ""
    check = check_final(
        text, messages, tools_available=bool(prepared.selected), plan_mode=prepared.plan_mode
    )
    if check is not None:
        return Step(
            final=text,
            code=check.code,
            message=check.reason.replace("_", " "),
            reason=check.reason,
            verdict=verdict,
        )
    return Step(final=text, verdict=verdict)
