"""Judge one model reply inside a turn: evaluate (parser, whitelist, schema, shell guard), then
the guards that need the conversation: repeats, vision refusals and premature finals."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from deskpilot.provider.protocol import ChatMessage, ToolCall, new_call_id
from deskpilot.provider.turn.evaluate import Verdict, evaluate
from deskpilot.provider.turn.final_policy import check_final
from deskpilot.provider.turn.ledger import ExecutionLedger
from deskpilot.provider.turn.preparation import PreparedTurn
from deskpilot.provider.turn.vision_policy import check_vision_final


@dataclass(frozen=True)
class Step:
    """Accept a call, accept a final, or repair with ``code``."""

    call: ToolCall | None = None
    final: str | None = None
    code: str | None = None
    message: str = ""
    reason: str = ""
    verdict: Verdict | None = None
    repair_tool: str | None = None  # the tool a repair should show the schema of
    suggestion: str = ""  # an extra repair line (never logged)

    @property
    def accepted(self) -> bool:
        return self.code is None

    @property
    def tool_name(self) -> str | None:
        return self.repair_tool or (self.verdict.name if self.verdict else None)


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
        reason = "shell" if verdict.code == "shell_mismatch" else verdict.form
        return Step(code=verdict.code, message=verdict.message, reason=reason, verdict=verdict)
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
        return Step(call=ToolCall(name, arguments), verdict=verdict)
    text = verdict.text or ""
    refusal = check_vision_final(text, messages, prepared)
    if refusal is not None:
        return Step(
            final=text,
            code="vision_refusal",
            message=refusal.message,
            reason="vision_refusal",
            verdict=verdict,
            repair_tool=refusal.tool,
            suggestion=refusal.suggestion,
        )
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
