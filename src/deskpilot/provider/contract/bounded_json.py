"""The one decoder for JSON the provider did not write: model replies, tool-call arguments and
endpoint response bodies.

``json`` recurses once per nesting level, so a reply of 100,000 ``[`` (or 5,000 levels of
``{"a":`` inside tool-call arguments) escapes as a raw ``RecursionError`` instead of a typed
outcome, and values that do decode near the interpreter limit break every recursive consumer
after it (validator, fingerprint, firewall). Nesting is therefore measured *before* decoding,
with a scan that skips string literals in C (regex) and stops as soon as the first value closes
or the depth passes :data:`MAX_JSON_DEPTH`. Every rejection — syntax, encoding or depth — is one
:class:`JSONRejected`, which callers map to their typed code (``invalid_json`` in the protocol,
``non_json_response`` in the transport).
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

# Deepest accepted nesting (``[]`` is depth 1). Real tool arguments and chat-completions bodies
# stay far below it; it is far enough under the interpreter's recursion limit that every
# recursive consumer of a decoded value is safe.
MAX_JSON_DEPTH = 64

_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)
_WS = " \t\r\n"
_DECODER = json.JSONDecoder()

Reason = Literal["syntax", "too_deep"]


class JSONRejected(ValueError):
    """Not decodable within the rules: ``reason`` is ``syntax`` or ``too_deep``."""

    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(message)
        self.reason: Reason = reason


def nesting_exceeds(text: str, start: int = 0, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when the JSON value beginning at ``start`` nests deeper than ``limit``."""
    while start < len(text) and text[start] in _WS:
        start += 1
    if start >= len(text) or text[start] not in "[{":
        return False
    if text.count("[", start) + text.count("{", start) <= limit:
        return False  # cannot open more containers than it holds
    depth = 0
    for match in _TOKEN.finditer(text, start):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                return True
        elif token in "]}":
            depth -= 1
            if depth <= 0:
                return False  # the first value closed; what follows is not part of it
    return False


def _too_deep() -> JSONRejected:
    return JSONRejected("too_deep", f"JSON nested deeper than {MAX_JSON_DEPTH} levels")


def loads(data: str | bytes) -> Any:
    """``json.loads`` with the nesting limit; raises only :class:`JSONRejected`."""
    try:
        text = data.decode(json.detect_encoding(data)) if isinstance(data, bytes) else data
    except UnicodeDecodeError:
        raise JSONRejected("syntax", "JSON text is not valid Unicode") from None
    if nesting_exceeds(text):
        raise _too_deep()
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise JSONRejected("syntax", f"invalid JSON: {exc.msg}") from None
    except RecursionError:  # belt and braces: the scan above should make this unreachable
        raise _too_deep() from None


def raw_decode(text: str, start: int = 0) -> tuple[Any, int]:
    """Decode the value at ``start`` and return it with the index after it."""
    if nesting_exceeds(text, start):
        raise _too_deep()
    try:
        return _DECODER.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise JSONRejected("syntax", f"invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise _too_deep() from None
