"""A short, safe summary of a tool call's arguments for the person's view and the JSONL.

Typed text never leaves the loop: for the fields that carry what the agent types or pastes
(``text``, ``value``, and anything named like a secret) the summary says only how long it is.
Long values are cut. A shell command is shown (the person needs to see what runs), bounded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

#: fields whose value is what gets typed, pasted or set: shown as a length only
TEXT_FIELDS = frozenset({"text", "value", "content", "data"})
_SECRET = re.compile(r"pass(word)?|secret|token|api[_-]?key|credential|otp|pin\b", re.IGNORECASE)
#: secrets in a shell command: NAME=value and --name value / --name=value whose name looks
#: like a secret, an Authorization header's credentials, and well-known key shapes. Only the
#: value is replaced, so the command keeps its shape (separators, quotes) in the view.
_VALUE = r"""(?:'[^']*'|"[^"]*"|[^\s;&|'"]+)"""
_SECRET_NAME = r"[A-Za-z_-]*(?:PASS(?:WORD|WD)?|SECRET|TOKEN|API[_-]?KEY|CREDENTIAL)[A-Za-z_-]*"
_COMMAND_SECRETS = (
    re.compile(rf"(\b{_SECRET_NAME}=){_VALUE}", re.IGNORECASE),
    re.compile(rf"((?:^|\s)--?{_SECRET_NAME}(?:=|\s+)){_VALUE}", re.IGNORECASE),
    re.compile(r"(\b(?:Bearer|Basic|Token)\s+)[A-Za-z0-9._~+/=-]{6,}", re.IGNORECASE),
    re.compile(r"()\b(?:sk|pk|rk|ghp|gho|ghs|glpat|xox[abps])[-_][A-Za-z0-9_-]{8,}"),
)
MAX_VALUE_CHARS = 60
MAX_SUMMARY_CHARS = 200


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def hide_secrets(command: str) -> str:
    for pattern in _COMMAND_SECRETS:
        command = pattern.sub(r"\1«hidden»", command)
    return command


def summarise(name: str, arguments: Mapping[str, Any]) -> str:
    parts: list[str] = []
    for key, value in arguments.items():
        if key in TEXT_FIELDS or _SECRET.search(key):
            size = len(value) if isinstance(value, str) else len(json.dumps(value))
            parts.append(f"{key}=«{size} chars»")
        elif key == "command" and name == "bash" and isinstance(value, str):
            parts.append(f"command={_short(hide_secrets(value))}")
        elif isinstance(value, Mapping | list):
            parts.append(f"{key}={_short(value)}")
        else:
            parts.append(f"{key}={_short(value)}")
    out = " ".join(parts)
    return out if len(out) <= MAX_SUMMARY_CHARS else out[: MAX_SUMMARY_CHARS - 1] + "…"
