"""Call fingerprints: key-order-insensitive, so reordering arguments is still the same call."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any


def _canon(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int | float):
        return value
    if isinstance(value, Mapping):
        return {str(k): _canon(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canon(v) for v in value]
    return str(value)


def canonical_call(name: str, arguments: Mapping[str, Any]) -> str:
    return json.dumps(
        {"name": name, "arguments": _canon(arguments)},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )


def fingerprint(name: str, arguments: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_call(name, arguments).encode("utf-8")).hexdigest()


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: object key order ignored, ``true`` is not ``1``, ``1`` equals ``1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def tools_hash(tools: Iterable[Any]) -> str:
    """A short, stable hash of the tools a request shows (names, descriptions, schemas): two
    runs with the same hash showed the model the same tools."""
    canon = [
        {"name": t.name, "description": t.description, "parameters": _canon(t.parameters)}
        for t in tools
    ]
    text = json.dumps(canon, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
