"""Conversation types the rest of deskpilot hands to the provider."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from deskpilot.provider.contract import ProviderError
from deskpilot.provider.protocol.markers import CALL_ID_PREFIX
from deskpilot.provider.tools import fingerprint

Role = Literal["system", "user", "assistant", "tool"]
_ROLES = ("system", "user", "assistant", "tool")


def new_call_id() -> str:
    return CALL_ID_PREFIX + secrets.token_hex(8)


@dataclass(frozen=True)
class ToolCall:
    """A validated call the caller may execute."""

    name: str
    arguments: Mapping[str, Any]
    call_id: str = field(default_factory=new_call_id)

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.name, self.arguments)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.call_id, "name": self.name, "arguments": dict(self.arguments)}


@dataclass(frozen=True)
class ChatMessage:
    """One message. ``role="tool"`` carries a tool result; assistant messages may carry the
    call they requested (never replayed to the model, only used for the execution ledger)."""

    role: Role
    content: str = ""
    tool_call: ToolCall | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    is_error: bool = False

    def __post_init__(self) -> None:
        if self.role not in _ROLES:
            raise ProviderError("invalid_input", f"unknown message role {self.role!r}")
        if not isinstance(self.content, str):
            raise ProviderError("invalid_input", "message content must be text")
        if self.tool_call is not None and self.role != "assistant":
            raise ProviderError("invalid_input", "only assistant messages carry a tool call")

    @classmethod
    def system(cls, text: str) -> ChatMessage:
        return cls("system", text)

    @classmethod
    def user(cls, text: str) -> ChatMessage:
        return cls("user", text)

    @classmethod
    def assistant(cls, text: str = "", *, tool_call: ToolCall | None = None) -> ChatMessage:
        return cls("assistant", text, tool_call=tool_call)

    @classmethod
    def tool_result(cls, call: ToolCall, content: str, *, is_error: bool = False) -> ChatMessage:
        return cls(
            "tool", content, tool_call_id=call.call_id, tool_name=call.name, is_error=is_error
        )
