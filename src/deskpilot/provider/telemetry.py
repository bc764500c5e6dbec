"""Debug JSONL: versioned, redacted, never raw tool results or prompt text.

Telemetry is how a run is audited after the fact (latency, retries, recoveries, selection), so
it must be safe to attach to a bug report: credential-like fields are redacted by key and by
value shape, and callers pass only counts, names and codes.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

SCHEMA = "deskpilot.provider.debug.v1"
REDACTED = "[redacted]"

_SECRET_KEY = re.compile(
    r"(authorization|api[-_]?key|x-api-key|token|password|passwd|secret|cookie|session|"
    r"credential|bearer)",
    re.IGNORECASE,
)
_BENIGN_KEY = re.compile(r"(tokens|_count|_chars|Count|Chars)$", re.IGNORECASE)
_HASH_KEY = re.compile(r"(hash|sha256|fingerprint)$", re.IGNORECASE)
_SECRET_VALUE = re.compile(
    r"(?i)(bearer\s+[A-Za-z0-9._~+/=-]{8,}|\bsk-[A-Za-z0-9_-]{8,}"
    r"|\b(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{32,}\b)"
)
# Keys whose values are user/tool content; dropped entirely rather than trimmed.
_CONTENT_KEYS = frozenset({"content", "text", "raw", "prompt", "result", "arguments", "messages"})
_MAX_STRING = 500


def redact(value: Any, *, key: str = "") -> Any:
    """Return a copy safe for the debug log."""
    if key and _SECRET_KEY.search(key) and not _BENIGN_KEY.search(key):
        return REDACTED
    if key in _CONTENT_KEYS:
        return f"[omitted {len(value) if isinstance(value, str | list | dict) else 0}]"
    if isinstance(value, Mapping):
        return {str(k): redact(v, key=str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v, key=key) for v in value]
    if isinstance(value, str):
        if key and _HASH_KEY.search(key):
            return value[:_MAX_STRING]
        cleaned = _SECRET_VALUE.sub(REDACTED, value)
        return cleaned if len(cleaned) <= _MAX_STRING else cleaned[:_MAX_STRING] + "…"
    return value


class Telemetry(Protocol):
    def emit(self, event: str, **data: Any) -> None: ...


class NullTelemetry:
    """Telemetry off: the default, so nothing is written unless debugging is asked for."""

    def emit(self, event: str, **data: Any) -> None:
        return None


class DebugLog:
    """Append-only JSONL writer; the file is created 0600 because it describes a user's work."""

    def __init__(self, path: Path | str, *, run_id: str | None = None) -> None:
        self.path = path = Path(path)
        self.run_id = run_id or f"{int(time.time() * 1000):x}-{os.getpid()}"
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)

    def emit(self, event: str, **data: Any) -> None:
        record = {
            "schema": SCHEMA,
            "ts": round(time.time(), 3),
            "run": self.run_id,
            "event": event,
            "data": redact(data),
        }
        line = json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, line.encode("utf-8"))
            finally:
                os.close(fd)


class MemoryTelemetry:
    """Collects redacted events in memory; used by the CLI and tests to inspect a run."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def emit(self, event: str, **data: Any) -> None:
        self.events.append({"event": event, "data": redact(data)})


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for line in path.read_text("utf-8").splitlines():
        if line.strip():
            out.append(json.loads(line))
    return out
