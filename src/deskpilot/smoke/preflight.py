"""The provider health preflight: one cheap request before any case, so a dead or rate-limited
endpoint costs seconds instead of every case's timeout.

It is the provider's own health check (``max_tokens`` 1, no tools) with the smoke's bounds:
a few attempts, each with its own timeout; an immediate retry only for transient failures
(timeouts, network errors, 408, 5xx, a malformed answer — the provider's error contract says
which); a 429 is marked retryable but not retried at once (retrying into a rate limit spends
the limit). Each attempt is recorded from the provider's own telemetry.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from deskpilot.provider import MemoryTelemetry, ProviderConfig
from deskpilot.provider.diagnostics import health
from deskpilot.smoke.schema import HEALTH_SCHEMA

DEFAULT_ATTEMPTS = 2
DEFAULT_TIMEOUT_MS = 30_000
DEFAULT_RETRY_DELAY_MS = 1_000


def preflight_config(
    config: ProviderConfig, *, attempts: int, timeout_ms: int, retry_delay_ms: int
) -> ProviderConfig:
    policy = dataclasses.replace(
        config.limits,
        request_attempts=attempts,
        per_attempt_timeout_ms=timeout_ms,
        retry_delay_ms=retry_delay_ms,
        retry_max_delay_ms=retry_delay_ms,
        retry_jitter_ms=0,
        total_deadline_ms=attempts * timeout_ms + (attempts - 1) * retry_delay_ms + 1_000,
    )
    return dataclasses.replace(config, policy=policy)


def run_preflight(
    config: ProviderConfig,
    *,
    attempts: int = DEFAULT_ATTEMPTS,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
    retry_delay_ms: int = DEFAULT_RETRY_DELAY_MS,
) -> dict[str, Any]:
    """The preflight record (``HEALTH_SCHEMA``); never raises for an endpoint's failure."""
    bounded = preflight_config(
        config, attempts=attempts, timeout_ms=timeout_ms, retry_delay_ms=retry_delay_ms
    )
    telemetry = MemoryTelemetry()
    deadline = bounded.limits.total_deadline_ms
    result = asyncio.run(health(bounded, telemetry=telemetry, deadline_ms=deadline))
    error = result.get("error") if not result.get("ok") else None
    return {
        "schema": HEALTH_SCHEMA,
        "ok": bool(result.get("ok")),
        "skipped": False,
        "endpoint": result.get("endpoint"),
        "model": result.get("model"),
        "latencyMs": result.get("latencyMs"),
        "timeoutMs": timeout_ms,
        "maxAttempts": attempts,
        "retryDelayMs": retry_delay_ms,
        "attempts": attempt_rows(telemetry.events),
        "error": _error(error) if isinstance(error, dict) else None,
        "retrySuppressedReason": error.get("retrySuppressedReason")
        if isinstance(error, dict)
        else None,
    }


def skipped(reason: str) -> dict[str, Any]:
    return {
        "schema": HEALTH_SCHEMA,
        "ok": True,
        "skipped": True,
        "reason": reason,
        "attempts": [],
        "error": None,
        "retrySuppressedReason": None,
    }


def attempt_rows(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per attempt from the transport's ``response`` / ``error.provider`` events."""
    rows: list[dict[str, Any]] = []
    for event in events:
        data = event.get("data") or {}
        if event.get("event") == "response":
            rows.append(
                {
                    "attempt": data.get("attempt"),
                    "ok": True,
                    "latencyMs": data.get("request_latency_ms"),
                    "status": data.get("status"),
                }
            )
        elif event.get("event") == "error.provider":
            rows.append(
                {
                    "attempt": data.get("attempt"),
                    "ok": False,
                    "latencyMs": data.get("request_latency_ms"),
                    "errorCode": data.get("errorCode"),
                    "errorCategory": data.get("errorCategory"),
                    "retryable": data.get("retryable"),
                    "httpStatus": data.get("httpStatus"),
                }
            )
    return rows


def _error(info: dict[str, Any]) -> dict[str, Any]:
    """The failure without anything that could hold a secret (the message is the provider's
    own, already free of keys)."""
    keep = ("code", "category", "retryable", "httpStatus", "message", "attempts")
    return {k: info.get(k) for k in keep if k in info}
