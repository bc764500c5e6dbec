"""The final-answer firewall: a tool call dressed as a final answer is not a final answer.

It fires on high-confidence protocol shapes only (a JSON action, an object naming a tool of this
turn or carrying a protocol call id, an array of those, OpenAI ``tool_calls`` /
``function_call`` / ``function`` wrappers, a pseudo call ``tool({...})``), so ordinary business
JSON that happens to have ``name`` and ``arguments`` passes.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from deskpilot.provider.contract.bounded_json import JSONRejected, raw_decode
from deskpilot.provider.protocol.action import ARG_ALIASES, NAME_ALIASES
from deskpilot.provider.protocol.markers import CALL_ID_PREFIX, has_markup

_HINTS = (
    '"kind"',
    "tool_calls",
    "function_call",
    '"function"',
    '"arguments',
    '"args"',
    '"input"',
    '"parameters"',
    CALL_ID_PREFIX,
)
_PSEUDO_CALL = re.compile(r"(?m)^\s*`?([A-Za-z0-9_][A-Za-z0-9_.:-]*)\s*\(\s*[{)\"']")
_MAX_SCAN = 64


def looks_like_call(value: Any, selected: Collection[str], known: Collection[str]) -> bool:
    if isinstance(value, list):
        return any(looks_like_call(v, selected, known) for v in value if isinstance(v, dict))
    if not isinstance(value, dict):
        return False
    kind = value.get("kind")
    if kind == "tool_call" or (isinstance(kind, str) and kind in selected):
        return True
    calls = value.get("tool_calls")
    if isinstance(calls, list) and any(
        isinstance(c, dict) and ("function" in c or "name" in c) for c in calls
    ):
        return True
    for wrapper in ("function_call", "function"):
        inner = value.get(wrapper)
        if isinstance(inner, dict) and "name" in inner:
            return True
    call_id = value.get("id")
    if isinstance(call_id, str) and call_id.startswith(CALL_ID_PREFIX):
        return True
    has_args = any(a in value for a in ARG_ALIASES)
    names = [value[n] for n in NAME_ALIASES if isinstance(value.get(n), str)]
    return has_args and any(n in known or n in selected for n in names)


def count_calls(text: str, selected: Collection[str], known: Collection[str]) -> int:
    """How many call-shaped JSON values the text holds (0 when it has no protocol hints)."""
    return _scan(text, selected, known)[0]


def _scan(text: str, selected: Collection[str], known: Collection[str]) -> tuple[int, bool]:
    """(call-shaped values, whether a value was too deeply nested to inspect)."""
    if not any(h in text for h in _HINTS):
        return 0, False
    found = 0
    too_deep = False
    scanned = 0
    index = 0
    while scanned < _MAX_SCAN:
        positions = [p for p in (text.find("{", index), text.find("[", index)) if p >= 0]
        if not positions:
            break
        start = min(positions)
        scanned += 1
        try:
            value, end = raw_decode(text, start)
        except JSONRejected as exc:
            too_deep = too_deep or exc.reason == "too_deep"
            index = start + 1
            continue
        if isinstance(value, list):
            found += sum(1 for v in value if looks_like_call(v, selected, known))
        elif looks_like_call(value, selected, known):
            found += 1
        index = end
    return found, too_deep


def final_violation(text: str, selected: Collection[str], known: Collection[str]) -> str | None:
    """The error code that keeps ``text`` from being a final answer, or None."""
    if has_markup(text):
        return "raw_protocol_markup"
    calls, too_deep = _scan(text, selected, known)
    if calls > 1:
        return "multiple_tool_calls"
    if calls:
        return "tool_call_like_final"
    if too_deep:
        return "invalid_json"  # protocol hints around JSON too deep to inspect: fail closed
    for match in _PSEUDO_CALL.finditer(text):
        if match.group(1) in selected or match.group(1) in known:
            return "tool_call_like_final"
    return None
