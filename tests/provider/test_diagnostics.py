"""Health and capability probes against endpoints that hang or answer badly."""

from __future__ import annotations

import json
import time

from provider_helpers import TEST_KEY, make_config
from provider_server import Reply, ScriptedServer

from deskpilot.provider import RuntimePolicy
from deskpilot.provider.diagnostics import HEALTH_DEADLINE_MS, capability, health, health_config


def test_health_bound_caps_the_turn_profile() -> None:
    assert 10_000 <= HEALTH_DEADLINE_MS <= 15_000
    from deskpilot.provider import ProviderConfig

    config = ProviderConfig(base_url="http://127.0.0.1:9/v1", model="m", api_key=TEST_KEY)
    assert config.limits.total_deadline_ms == 180_000  # reliability: 3 x 60 s for turns
    capped = health_config(config).limits
    assert capped.total_deadline_ms == HEALTH_DEADLINE_MS
    assert capped.per_attempt_timeout_ms == HEALTH_DEADLINE_MS
    assert config.limits.total_deadline_ms == 180_000  # the caller's config is untouched


async def test_health_against_a_silent_server_times_out_quickly(server: ScriptedServer) -> None:
    server.script(*[Reply(delay_s=30, body="{}") for _ in range(4)])
    config = make_config(server, policy=RuntimePolicy.for_profile("reliability"))
    started = time.monotonic()
    out = await health(config, deadline_ms=800)
    elapsed = time.monotonic() - started
    assert elapsed < 3, elapsed
    assert out["ok"] is False and out["timedOut"] is True and out["deadlineMs"] == 800
    assert out["error"]["code"] in ("request_timeout", "deadline_exceeded")
    assert out["error"]["category"] == "timeout"


async def test_health_success_is_not_marked_timed_out(server: ScriptedServer) -> None:
    server.script(Reply.chat("O"))
    out = await health(make_config(server))
    assert out["ok"] is True and "timedOut" not in out


def _probe_reply(recorded) -> Reply:  # type: ignore[no-untyped-def]
    body = recorded.json
    if "tools" in body:
        return Reply.chat("no tools here")
    fmt = (body.get("response_format") or {}).get("type")
    if fmt in ("json_object", "json_schema"):
        return Reply.chat("not json {")
    return Reply.chat("")


async def test_failed_probes_carry_a_typed_reason(server: ScriptedServer) -> None:
    server.script(*[_probe_reply for _ in range(20)])
    out = await capability(make_config(server), json_action_runs=1)
    probes = out["probes"]
    assert all(p["ok"] is False for p in probes.values())
    assert probes["plain_chat"]["reason"] == "empty_response"
    assert probes["json_object"]["reason"] == "invalid_json"
    assert probes["json_schema_strict"]["reason"] == "invalid_json"
    assert probes["native_tools_forced"]["reason"] == "no_tool_call"
    assert probes["role_tool_followup"]["reason"] == "tool_result_not_used"
    assert probes["json_action_1"]["reason"] == "no_tool_call"  # prose, not an action
    assert all("latencyMs" in p for p in probes.values())


async def test_probe_transport_failures_carry_the_error_code(server: ScriptedServer) -> None:
    server.script(Reply(status=401, body='{"error":{"message":"bad key sk-leaked-in-body"}}'))
    out = await capability(make_config(server), json_action_runs=1)
    probes = out["probes"]
    assert probes["plain_chat"] == {"ok": False, "error": "http_401", "reason": "http_401"}
    assert probes["json_object"] == {"ok": False, "skipped": True, "reason": "http_401"}
    text = json.dumps(out)
    assert TEST_KEY not in text and "sk-leaked" not in text and "bad key" not in text
