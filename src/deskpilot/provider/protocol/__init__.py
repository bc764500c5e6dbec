"""The local JSON action protocol: parsing, final boundary, message content, result receipts."""

from deskpilot.provider.protocol.action import (
    FinalCandidate,
    ParseFailure,
    ParseOutcome,
    ToolCallCandidate,
)
from deskpilot.provider.protocol.boundary import final_violation
from deskpilot.provider.protocol.content import serialise
from deskpilot.provider.protocol.markers import has_markup, neutralise, strip_history
from deskpilot.provider.protocol.messages import ChatMessage, ToolCall, new_call_id
from deskpilot.provider.protocol.parser import parse_output, project_native_calls
from deskpilot.provider.protocol.prompt import PROTOCOL_VERSION, build_payload, system_prompt

__all__ = [
    "PROTOCOL_VERSION",
    "ChatMessage",
    "FinalCandidate",
    "ParseFailure",
    "ParseOutcome",
    "ToolCall",
    "ToolCallCandidate",
    "build_payload",
    "final_violation",
    "has_markup",
    "neutralise",
    "new_call_id",
    "parse_output",
    "project_native_calls",
    "serialise",
    "strip_history",
    "system_prompt",
]
