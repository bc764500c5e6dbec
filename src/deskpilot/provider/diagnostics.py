"""Health and capability probes: real requests that show what the endpoint actually supports.

Health proves plain chat works (one request, ``max_tokens`` 1). The capability probe is the only
place native tool fields are ever sent, to measure them; the runtime never uses them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from deskpilot.provider.config import ProviderConfig
from deskpilot.provider.contract import ProviderError
from deskpilot.provider.protocol import build_payload, system_prompt
from deskpilot.provider.telemetry import NullTelemetry, Telemetry
from deskpilot.provider.tools import ToolSpec, validate_arguments
from deskpilot.provider.transport import ChatClient, ChatResponse
from deskpilot.provider.turn import evaluate

HEALTH_SCHEMA = "deskpilot.provider.health.v1"
CAPABILITY_SCHEMA = "deskpilot.provider.capabilities.v1"
PROBE_TOOL = "get_probe_value"
PROBE_SENTINEL = "PROBE_VALUE_7319"
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


async def health(config: ProviderConfig, *, telemetry: Telemetry | None = None) -> dict[str, Any]:
    client = ChatClient(config, telemetry=telemetry or NullTelemetry())
    base: dict[str, Any] = {
        "schema": HEALTH_SCHEMA,
        "endpoint": config.endpoint,
        "model": config.model,
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
        return {**base, "ok": False, "error": _error_info(err)}
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


def _args_ok(response: ChatResponse) -> bool:
    calls = response.native_tool_calls or []
    if len(calls) != 1 or not isinstance(calls[0].get("function"), dict):
        return False
    fn = calls[0]["function"]
    try:
        args = json.loads(fn.get("arguments") or "")
    except (TypeError, json.JSONDecodeError):
        return False
    return bool(
        fn.get("name") == PROBE_TOOL
        and isinstance(args, dict)
        and validate_arguments(_PROBE_PARAMS, args).ok
    )


def _json_object_ok(response: ChatResponse) -> bool:
    try:
        return isinstance(json.loads(response.content), dict)
    except json.JSONDecodeError:
        return False


def _strict_ok(response: ChatResponse) -> bool:
    try:
        value = json.loads(response.content)
    except json.JSONDecodeError:
        return False
    return validate_arguments(_STRICT_SCHEMA, value).ok


def _json_action_ok(response: ChatResponse) -> bool:
    verdict = evaluate(
        response.content,
        selected={"read"},
        tools={"read": _READ},
        native_tool_calls=response.native_tool_calls,
    )
    return verdict.kind == "tool_call" and verdict.arguments == {"path": "package.json"}


def _probes(
    model: str, runs: int, skip_native: bool
) -> list[tuple[str, dict[str, Any], Callable[[ChatResponse], bool]]]:
    def msg(role: str, content: str | None, **extra: Any) -> dict[str, Any]:
        return {"role": role, "content": content, **extra}

    plan: list[tuple[str, dict[str, Any], Callable[[ChatResponse], bool]]] = [
        (
            "plain_chat",
            {
                "model": model,
                "messages": [msg("user", "Reply with the single word: pong")],
                "max_tokens": 16,
            },
            lambda r: bool(r.content.strip()),
        ),
        (
            "json_object",
            {
                "model": model,
                "messages": [msg("user", 'Return a JSON object with the key "ok" set to true.')],
                "response_format": {"type": "json_object"},
                "max_tokens": 64,
            },
            _json_object_ok,
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
            _strict_ok,
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
                    _args_ok,
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
                lambda r: PROBE_SENTINEL.split("_")[-1] in r.content,
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
    plan.extend((f"json_action_{i}", action, _json_action_ok) for i in range(1, runs + 1))
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
                probes[name] = {"ok": False, "error": err.code}
                if err.code in ("api_key_missing", "http_401", "http_403", "network_error"):
                    stop = err
                continue
            probes[name] = {"ok": check(response), "latencyMs": round(response.latency_ms, 1)}
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
