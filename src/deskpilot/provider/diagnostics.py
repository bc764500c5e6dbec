"""Health and capability probes: real requests that show what the endpoint actually supports.

Health proves plain chat works (one request, ``max_tokens`` 1). The capability probe is the only
place native tool fields are ever sent, to measure them; the runtime never uses them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from deskpilot.provider.config import ProviderConfig
from deskpilot.provider.contract import ProviderError
from deskpilot.provider.contract.bounded_json import JSONRejected, loads
from deskpilot.provider.protocol import build_payload, system_prompt
from deskpilot.provider.telemetry import NullTelemetry, Telemetry
from deskpilot.provider.tools import ToolSpec, validate_arguments
from deskpilot.provider.transport import ChatClient, ChatResponse
from deskpilot.provider.turn import evaluate

HEALTH_SCHEMA = "deskpilot.provider.health.v1"
CAPABILITY_SCHEMA = "deskpilot.provider.capabilities.v1"
PROBE_TOOL = "get_probe_value"
PROBE_SENTINEL = "PROBE_VALUE_7319"
# The whole health check (all attempts and waits) ends within this; see ``health_config``.
HEALTH_DEADLINE_MS = 12_000
_STRICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["answer"],
    "additionalProperties": False,
}
_PROBE_PARAMS: dict[str, Any] = {
    "type": "object",
    "properties": {"key": {"type": "string"}},
    "required": ["key"],
    "additionalProperties": False,
}
_READ = ToolSpec(
    "read",
    "Read a text file from the workspace.",
    {
        "type": "object",
        "properties": {"path": {"type": "string", "minLength": 1}},
        "required": ["path"],
        "additionalProperties": False,
    },
)


def _error_info(err: ProviderError) -> dict[str, Any]:
    info = err.to_dict()
    info.pop("detail", None)
    if "attempts" in err.detail:
        info["attempts"] = err.detail["attempts"]
    if "retrySuppressedReason" in err.detail:
        info["retrySuppressedReason"] = err.detail["retrySuppressedReason"]
    return info


def health_config(config: ProviderConfig, deadline_ms: int = HEALTH_DEADLINE_MS) -> ProviderConfig:
    """The turn profile's bounds (60 s per attempt, 180 s in all for ``reliability``) are for
    long generations; a one-token liveness check that has not answered in ``deadline_ms`` is
    unhealthy, so its per-attempt timeout and total deadline are capped there (retries of fast
    failures still fit inside)."""
    policy = config.limits
    capped = dataclasses.replace(
        policy,
        per_attempt_timeout_ms=min(policy.per_attempt_timeout_ms, deadline_ms),
        total_deadline_ms=min(policy.total_deadline_ms, deadline_ms),
    )
    return dataclasses.replace(config, policy=capped)


async def health(
    config: ProviderConfig,
    *,
    telemetry: Telemetry | None = None,
    deadline_ms: int = HEALTH_DEADLINE_MS,
) -> dict[str, Any]:
    config = health_config(config, deadline_ms)
    client = ChatClient(config, telemetry=telemetry or NullTelemetry())
    base: dict[str, Any] = {
        "schema": HEALTH_SCHEMA,
        "endpoint": config.endpoint,
        "model": config.model,
        "deadlineMs": config.limits.total_deadline_ms,
    }
    payload = build_payload(
        config.model,
        [{"role": "user", "content": "Reply with OK."}],
        max_tokens=1,
        json_object_hint=False,
        temperature=None,
    )
    try:
        response = await client.complete(payload)
    except ProviderError as err:
        timed_out = err.category == "timeout"
        return {**base, "ok": False, "timedOut": timed_out, "error": _error_info(err)}
    finally:
        await client.aclose()
    return {
        **base,
        "ok": True,
        "latencyMs": round(response.latency_ms, 1),
        "attempts": response.attempts,
        "finishReason": response.finish_reason,
    }


def _native_tools(strict: bool) -> list[dict[str, Any]]:
    function: dict[str, Any] = {
        "name": PROBE_TOOL,
        "description": "Return the probe value for a key.",
        "parameters": _PROBE_PARAMS,
    }
    if strict:
        function["strict"] = True
    return [{"type": "function", "function": function}]


def _args_reason(response: ChatResponse) -> str | None:
    calls = response.native_tool_calls or []
    if not calls:
        return "no_tool_call"
    if len(calls) != 1:
        return "multiple_tool_calls"
    fn = calls[0].get("function")
    if not isinstance(fn, dict):
        return "invalid_tool_call"
    if fn.get("name") != PROBE_TOOL:
        return "unknown_tool"
    raw = fn.get("arguments")
    if not isinstance(raw, str) or not raw.strip():
        return "empty_arguments"
    try:
        args = loads(raw)
    except JSONRejected:
        return "invalid_json"
    if not isinstance(args, dict):
        return "arguments_not_object"
    return None if validate_arguments(_PROBE_PARAMS, args).ok else "invalid_arguments"


def _json_object_reason(response: ChatResponse) -> str | None:
    try:
        value = loads(response.content)
    except JSONRejected:
        return "invalid_json"
    return None if isinstance(value, dict) else "not_an_object"


def _strict_reason(response: ChatResponse) -> str | None:
    try:
        value = loads(response.content)
    except JSONRejected:
        return "invalid_json"
    return None if validate_arguments(_STRICT_SCHEMA, value).ok else "schema_mismatch"


def _plain_reason(response: ChatResponse) -> str | None:
    return None if response.content.strip() else "empty_response"


def _followup_reason(response: ChatResponse) -> str | None:
    return None if PROBE_SENTINEL.split("_")[-1] in response.content else "tool_result_not_used"


def _json_action_reason(response: ChatResponse) -> str | None:
    verdict = evaluate(
        response.content,
        selected={"read"},
        tools={"read": _READ},
        native_tool_calls=response.native_tool_calls,
    )
    if verdict.kind == "error":
        return verdict.code or "invalid_tool_call"
    if verdict.kind != "tool_call":
        return "no_tool_call"
    return None if verdict.arguments == {"path": "package.json"} else "unexpected_arguments"


def _probes(
    model: str, runs: int, skip_native: bool
) -> list[tuple[str, dict[str, Any], Callable[[ChatResponse], str | None]]]:
    def msg(role: str, content: str | None, **extra: Any) -> dict[str, Any]:
        return {"role": role, "content": content, **extra}

    plan: list[tuple[str, dict[str, Any], Callable[[ChatResponse], str | None]]] = [
        (
            "plain_chat",
            {
                "model": model,
                "messages": [msg("user", "Reply with the single word: pong")],
                "max_tokens": 16,
            },
            _plain_reason,
        ),
        (
            "json_object",
            {
                "model": model,
                "messages": [msg("user", 'Return a JSON object with the key "ok" set to true.')],
                "response_format": {"type": "json_object"},
                "max_tokens": 64,
            },
            _json_object_reason,
        ),
        (
            "json_schema_strict",
            {
                "model": model,
                "messages": [msg("user", "Is water wet? Answer with the schema.")],
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "probe", "strict": True, "schema": _STRICT_SCHEMA},
                },
                "max_tokens": 64,
            },
            _strict_reason,
        ),
    ]
    if not skip_native:
        forced = {"type": "function", "function": {"name": PROBE_TOOL}}
        ask = msg("user", "What is the probe value for the key 'probe'? Use the tool.")
        for name, strict in (("native_tools_forced", False), ("native_tools_strict_forced", True)):
            plan.append(
                (
                    name,
                    {
                        "model": model,
                        "messages": [ask],
                        "tools": _native_tools(strict),
                        "tool_choice": forced,
                        "max_tokens": 128,
                    },
                    _args_reason,
                )
            )
        call = {
            "id": "call_probe",
            "type": "function",
            "function": {"name": PROBE_TOOL, "arguments": json.dumps({"key": "probe"})},
        }
        plan.append(
            (
                "role_tool_followup",
                {
                    "model": model,
                    "messages": [
                        ask,
                        msg("assistant", None, tool_calls=[call]),
                        msg("tool", PROBE_SENTINEL, tool_call_id="call_probe"),
                    ],
                    "tools": _native_tools(False),
                    "max_tokens": 128,
                },
                _followup_reason,
            )
        )
    action = {
        "model": model,
        "messages": [
            {"role": "system", "content": system_prompt([_READ])},
            {"role": "user", "content": "Read the file package.json."},
        ],
        "response_format": {"type": "json_object"},
        "max_tokens": 256,
    }
    plan.extend((f"json_action_{i}", action, _json_action_reason) for i in range(1, runs + 1))
    return plan


async def capability(
    config: ProviderConfig,
    *,
    json_action_runs: int = 3,
    skip_native: bool = False,
    telemetry: Telemetry | None = None,
) -> dict[str, Any]:
    client = ChatClient(config, telemetry=telemetry or NullTelemetry())
    probes: dict[str, dict[str, Any]] = {}
    stop: ProviderError | None = None

    async def call(payload: dict[str, Any]) -> ChatResponse:
        return await client.complete(payload, allow_native=True, attempts=1)

    try:
        for name, payload, check in _probes(config.model, json_action_runs, skip_native):
            if stop is not None:
                probes[name] = {"ok": False, "skipped": True, "reason": stop.code}
                continue
            try:
                response = await call(payload)
            except ProviderError as err:
                probes[name] = {"ok": False, "error": err.code, "reason": err.code}
                if err.code in ("api_key_missing", "http_401", "http_403", "network_error"):
                    stop = err
                continue
            reason = check(response)
            probes[name] = {"ok": reason is None, "latencyMs": round(response.latency_ms, 1)}
            if reason is not None:
                probes[name]["reason"] = reason
    finally:
        await client.aclose()
    passed = sum(1 for i in range(1, json_action_runs + 1) if probes[f"json_action_{i}"]["ok"])
    native = all(
        probes.get(n, {}).get("ok")
        for n in ("native_tools_strict_forced", "role_tool_followup", "json_schema_strict")
    )
    if native and not skip_native:
        mode = "native_strict_tools"
    elif json_action_runs and passed == json_action_runs:
        mode = "local_json_action_protocol"
    else:
        mode = "unsupported_json_action"
    return {
        "schema": CAPABILITY_SCHEMA,
        "endpoint": config.endpoint,
        "model": config.model,
        "probes": probes,
        "jsonActionRuns": json_action_runs,
        "jsonActionPassed": passed,
        "recommendedMode": mode,
    }
