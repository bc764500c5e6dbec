"""What a turn hands back: a validated tool call, a final answer, or a classified error."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from deskpilot.provider.contract import ProviderError
from deskpilot.provider.protocol import ToolCall
from deskpilot.provider.turn.ledger import ExecutionLedger


@dataclass(frozen=True)
class TurnResult:
    kind: Literal["tool_call", "final", "error"]
    ledger: ExecutionLedger
    tool_call: ToolCall | None = None
    text: str | None = None
    error: ProviderError | None = None
    selected_tools: tuple[str, ...] = ()
    recoveries: dict[str, int] = field(default_factory=dict)
    requests: int = 0
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "selectedTools": list(self.selected_tools),
            "recoveries": dict(self.recoveries),
            "requests": self.requests,
            "warnings": list(self.warnings),
            "ledger": self.ledger.to_dict(),
        }
        if self.tool_call is not None:
            out["toolCall"] = self.tool_call.to_dict()
        if self.text is not None:
            out["text"] = self.text
        if self.error is not None:
            out["error"] = self.error.to_dict()
        return out
