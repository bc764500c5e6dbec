"""Outcomes of reading one model reply: a tool-call candidate, a final, or a classified failure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class ToolCallCandidate:
    """Normalised but not yet whitelisted or schema-checked."""

    name: str
    arguments: dict[str, Any]
    form: str
    call_id: str | None = None


@dataclass(frozen=True, slots=True)
class FinalCandidate:
    text: str
    form: str
    stripped_history: bool = False


@dataclass(frozen=True, slots=True)
class ParseFailure:
    code: str
    message: str
    form: str = "unknown"
    detail: dict[str, Any] = field(default_factory=dict)


ParseOutcome = ToolCallCandidate | FinalCandidate | ParseFailure

NAME_ALIASES = ("name", "tool", "tool_name", "function_name")
ARG_ALIASES = ("arguments", "args", "input", "parameters", "arguments_json")
