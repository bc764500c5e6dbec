"""Protocol markers and their neutralisation.

Text that reaches the model from untrusted places (tool results, tool metadata, repair
excerpts) must not be able to open or close a protocol block, so the marker's opening bracket is
swapped for a look-alike. Attribute variants and broken tags (no closing ``>``) are covered
because only the opening bracket and the marker name are matched.
"""

from __future__ import annotations

import re

TOOL_CALL_TAG = "dp_tool_call"
TOOL_RESULT_TAG = "dp_tool_result"
HISTORY_TAG = "dp_tool_call_history"
PREVIOUS_MARKER = "previous_dp_tool_call"
REPAIR_TAG = "dp_repair"
PLAN_TAG = "proposed_plan"
CALL_ID_PREFIX = "dp_tool_"

_NAMES = (
    HISTORY_TAG,
    TOOL_CALL_TAG,
    TOOL_RESULT_TAG,
    PREVIOUS_MARKER,
    REPAIR_TAG,
    "tool_call",
    "tool_calls",
    "tool_result",
    "tool_use",
    "function_call",
    "function_calls",
    "function_results",
)
_ALT = "|".join(sorted(_NAMES, key=len, reverse=True))
_ANGLE = re.compile(rf"<(?=\s*/?\s*(?:{_ALT}|{PLAN_TAG})(?![A-Za-z0-9_]))", re.IGNORECASE)
#: other agents' protocol tags (``<acme_tool_call>``, ``<x:function_calls>``): a prefix, then
#: one of the protocol words — text on a screen or in a file can carry any of them
_FOREIGN = re.compile(
    r"<(?=\s*/?\s*[A-Za-z0-9]+[_:.-](?:tool_calls?|tool_results?|tool_use|function_calls?|"
    r"function_results?)(?![A-Za-z0-9_]))",
    re.IGNORECASE,
)
#: a JSON action envelope (ours, or an OpenAI-style call list) quoted in untrusted text, also
#: JSON-escaped inside another JSON string (``{\"kind\":…``): its opening brace becomes a
#: look-alike, so an echo of it can never parse as a call
_ENVELOPE = re.compile(
    r'\{(?=\s*\\?"(?:(?:kind|type)\\?"\s*:\s*\\?"'
    r'(?:tool_call|final|function_call|function|tool_use)\\?"'
    r'|(?:tool_calls|function_call)\\?"\s*:))',
    re.IGNORECASE,
)
_BRACKET = re.compile(rf"\[(?=\s*/?\s*{PREVIOUS_MARKER}(?![A-Za-z0-9_]))", re.IGNORECASE)
_MARKUP = re.compile(
    rf"<\s*/?\s*(?:{_ALT})(?![A-Za-z0-9_])|\[\s*/?\s*{PREVIOUS_MARKER}(?![A-Za-z0-9_])",
    re.IGNORECASE,
)
_HISTORY_BLOCKS = re.compile(
    rf"\[\s*{PREVIOUS_MARKER}\b[^\]]*\].*?\[\s*/\s*{PREVIOUS_MARKER}\s*\]"
    rf"|<\s*{PREVIOUS_MARKER}\b[^>]*>.*?<\s*/\s*{PREVIOUS_MARKER}\s*>"
    rf"|<\s*{HISTORY_TAG}\b[^>]*>.*?<\s*/\s*{HISTORY_TAG}\s*>",
    re.IGNORECASE | re.DOTALL,
)


def neutralise(text: str) -> str:
    """Make protocol markers inert while keeping them readable: our tags and other agents'
    (``<acme_tool_call>``), history markers, and quoted JSON action envelopes."""
    if "<" not in text and "[" not in text and "{" not in text:
        return text
    text = _FOREIGN.sub("‹", _ANGLE.sub("‹", text))
    return _ENVELOPE.sub("｛", _BRACKET.sub("⟦", text))


#: another agent's history record (``[previous_acme_tool_call]``), a bracketed call or result
#: (``[tool_call]``, ``[acme_tool_result]``), an XML function-call invocation
_FOREIGN_HISTORY = re.compile(
    r"\[\s*/?\s*previous_[A-Za-z0-9]+_tool_call(?![A-Za-z0-9_])"
    r"|\[\s*/?\s*(?:[A-Za-z0-9]+_)?tool_(?:calls?|results?)\s*\]"
    r"|<\s*invoke\s+name\s*=",
    re.IGNORECASE,
)


def has_markup(text: str) -> bool:
    """Protocol markup in text that should be an answer: ours, the generic protocol words, and
    other agents' prefixed forms (``<acme_tool_call>``, ``<x:function_calls>``, their history
    records) — a final that carries any of them is a leak, whoever's protocol it is."""
    if "<" not in text and "[" not in text:
        return False
    return (
        _MARKUP.search(text) is not None
        or _FOREIGN.search(text) is not None
        or _FOREIGN_HISTORY.search(text) is not None
    )


def strip_history(text: str) -> tuple[str, bool]:
    """Remove complete leaked history blocks; report whether any were there."""
    if "<" not in text and "[" not in text:
        return text, False
    stripped, count = _HISTORY_BLOCKS.subn("", text)
    return (stripped.strip(), True) if count else (text, False)


def single_line(text: str, limit: int) -> str:
    """Tool metadata shown to the model: neutralised, one line, bounded."""
    flat = " ".join(neutralise(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
