"""ToolSpec: what the model may be shown about a tool, checked once on the way in."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from deskpilot.provider.contract import ProviderError

NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$")
_WORD = re.compile(r"[a-z][a-z0-9]{3,}")
_STOP = frozenset(
    [
        "this",
        "that",
        "with",
        "from",
        "into",
        "when",
        "will",
        "your",
        "their",
        "there",
        "these",
        "those",
        "which",
        "what",
        "have",
        "been",
        "only",
        "also",
        "each",
        "other",
        "than",
        "then",
        "them",
        "they",
        "tool",
        "tools",
        "call",
        "calls",
        "used",
        "uses",
        "using",
        "return",
        "returns",
        "given",
        "value",
        "values",
        "string",
        "number",
        "object",
        "array",
        "must",
        "should",
        "could",
        "would",
        "make",
    ]
)
PATH_PARAMS = frozenset({"path", "paths", "file", "file_path", "filepath", "filename", "dir"})
_SPEC_KEYS = frozenset({"name", "description", "parameters", "inputSchema", "input_schema"})


def keywords(text: str, limit: int = 80) -> frozenset[str]:
    words = [w for w in _WORD.findall(text.lower()) if w not in _STOP]
    return frozenset(words[:limit])


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the turn sees it: name, description and a JSON-schema for its arguments."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    keyword_set: frozenset[str] = field(init=False, repr=False, compare=False)
    takes_path: bool = field(init=False, repr=False, compare=False)
    name_lower: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not NAME_RE.match(self.name):
            raise ProviderError("invalid_input", f"invalid tool name {self.name!r}")
        if not isinstance(self.description, str):
            raise ProviderError("invalid_input", f"tool {self.name}: description must be text")
        if not isinstance(self.parameters, Mapping):
            raise ProviderError("invalid_input", f"tool {self.name}: parameters must be an object")
        try:
            plain = json.loads(json.dumps(self.parameters))
        except (TypeError, ValueError):
            raise ProviderError(
                "invalid_input", f"tool {self.name}: parameters must be plain JSON"
            ) from None
        object.__setattr__(self, "parameters", plain)
        object.__setattr__(self, "name_lower", self.name.lower())
        props = plain.get("properties")
        prop_names = list(props) if isinstance(props, Mapping) else []
        name_words = " ".join(re.split(r"[_.:-]", self.name))
        object.__setattr__(self, "keyword_set", keywords(f"{name_words} {self.description}"))
        object.__setattr__(self, "takes_path", any(p.lower() in PATH_PARAMS for p in prop_names))

    @classmethod
    def from_dict(cls, data: Any) -> ToolSpec:
        if not isinstance(data, Mapping):
            raise ProviderError("invalid_input", "a tool must be a JSON object")
        unknown = set(data) - _SPEC_KEYS
        if unknown:
            raise ProviderError("invalid_input", f"tool has unknown keys {sorted(unknown)}")
        params = data.get("parameters", data.get("inputSchema", data.get("input_schema")))
        return cls(
            name=data.get("name"),  # type: ignore[arg-type]  # checked in __post_init__
            description=data.get("description") or "",
            parameters=params if params is not None else {"type": "object", "properties": {}},
        )

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


def tools_from_json(data: Any) -> list[ToolSpec]:
    """A JSON array of {name, description, parameters}; names must be unique."""
    if not isinstance(data, Sequence) or isinstance(data, str | bytes):
        raise ProviderError("invalid_input", "the tool list must be a JSON array")
    tools = [ToolSpec.from_dict(item) for item in data]
    seen: set[str] = set()
    for tool in tools:
        if tool.name in seen:
            raise ProviderError("invalid_input", f"duplicate tool name {tool.name!r}")
        seen.add(tool.name)
    return tools
