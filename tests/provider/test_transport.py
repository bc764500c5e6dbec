"""ChatClient against a real scripted HTTP server: timeouts, retries, limits, abort."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import pytest
from provider_helpers import TEST_KEY, fast_policy, make_config
from provider_server import Reply, ScriptedServer

from deskpilot.provider import MemoryTelemetry, ProviderConfig, ProviderError
from deskpilot.provider.transport import ChatClient, parse_retry_after

PAYLOAD = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}


async def call(
    server: ScriptedServer, payload: dict | None = None, **kw
) -> tuple[object, MemoryTelemetry]:
    telemetry = MemoryTelemetry()
    client = ChatClient(make_config(server, **kw), telemetry=telemetry)
    try:
        return await client.complete(dict(payload or PAYLOAD)), telemetry
    finally:
        await client.aclose()


async def fail(server: ScriptedServer, **kw) -> tuple[ProviderError, MemoryTelemetry, float]:
    telemetry = MemoryTelemetry()
    client = ChatClient(make_config(server, **kw), telemetry=telemetry)
    started = time.monotonic()
    try:
        with pytest.raises(ProviderError) as info:
            await client.complete(dict(PAYLOAD))
    finally:
        await client.aclose()
    return info.value, telemetry, time.monotonic() - started


def events(t: MemoryTelemetry, name: str) -> list[dict]:
    return [e["data"] for e in t.events if e["event"] == name]


async def test_success_sends_bearer_key_and_reports_latency(server: ScriptedServer) -> None:
    server.script(Reply.chat("hello"))
    response, telemetry = await call(server)
    assert response.content == "hello"
    assert response.attempts == 1
    request = server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {TEST_KEY}"
    assert request.json["messages"][0]["content"] == "hi"
    done = events(telemetry, "response")[0]
    assert done["attempt"] == 1 and done["retry_count"] == 0 and done["request_latency_ms"] >= 0


async def test_headers_late_is_request_timeout_then_retry(server: ScriptedServer) -> None:
    server.script(Reply.chat("late", delay_s=3), Reply.chat("ok"))
    response, telemetry = await call(server, policy=fast_policy(per_attempt_timeout_ms=300))
    assert response.content == "ok" and response.attempts == 2
    assert events(telemetry, "error.provider")[0]["errorCode"] == "request_timeout"
    assert events(telemetry, "request.retry")[0]["code"] == "request_timeout"


async def test_body_stalling_after_headers_is_bounded_by_attempt_timeout(
    server: ScriptedServer,
) -> None:
    server.script(*[Reply.chat("x" * 300, stall_after_headers_s=5) for _ in range(3)])
    err, _, elapsed = await fail(
        server, policy=fast_policy(per_attempt_timeout_ms=300, request_attempts=2)
    )
    assert err.code == "request_timeout"
    assert err.detail["attempts"] == 2
    assert err.detail["retrySuppressedReason"] == "attempts_exhausted"
    assert elapsed < 2.0  # two 0.3 s attempts plus a tiny backoff, never the 5 s stall
    assert len(server.requests) == 2


async def test_429_with_retry_after_waits_then_retries(server: ScriptedServer) -> None:
    server.script(
        Reply(status=429, body={"error": {}}, headers={"Retry-After": "1"}), Reply.chat("ok")
    )
    started = time.monotonic()
    response, telemetry = await call(server, policy=fast_policy(retry_after_max_ms=2000))
    assert response.content == "ok"
    assert time.monotonic() - started >= 0.95
    assert events(telemetry, "request.retry")[0]["retry_delay_ms"] >= 1000


async def test_retry_after_is_clamped(server: ScriptedServer) -> None:
    server.script(Reply(status=429, body="{}", headers={"Retry-After": "120"}), Reply.chat("ok"))
    started = time.monotonic()
    response, telemetry = await call(server, policy=fast_policy(retry_after_max_ms=200))
    assert response.content == "ok"
    assert time.monotonic() - started < 2
    assert events(telemetry, "request.retry")[0]["retry_delay_ms"] == 200


async def test_429_without_retry_after_is_not_retried(server: ScriptedServer) -> None:
    server.script(Reply(status=429, body="{}"), Reply.chat("never"))
    err, telemetry, _ = await fail(server)
    assert err.code == "http_429" and err.http_status == 429
    assert err.retryable is True and err.category == "rate_limit"
    assert err.detail["retrySuppressedReason"] == "rate_limit_immediate_retry_disabled"
    assert len(server.requests) == 1
    suppressed = events(telemetry, "request.retry_suppressed")[0]
    assert suppressed["retry_suppressed_reason"] == "rate_limit_immediate_retry_disabled"


async def test_retry_after_beyond_deadline_is_suppressed(server: ScriptedServer) -> None:
    server.script(Reply(status=429, body="{}", headers={"Retry-After": "5"}))
    err, _, elapsed = await fail(
        server,
        policy=fast_policy(
            retry_after_max_ms=10_000, total_deadline_ms=1500, per_attempt_timeout_ms=1000
        ),
    )
    assert err.detail["retrySuppressedReason"] == "deadline_exhausted"
    assert elapsed < 1.0


async def test_5xx_is_retried_with_backoff_until_success(server: ScriptedServer) -> None:
    server.script(
        Reply(status=502, body="bad gateway"), Reply(status=503, body=""), Reply.chat("ok")
    )
    response, telemetry = await call(server)
    assert response.content == "ok" and response.attempts == 3
    assert [e["errorCode"] for e in events(telemetry, "error.provider")] == ["http_5xx", "http_5xx"]
    assert [e["retry_count"] for e in events(telemetry, "request")] == [0, 1, 2]


async def test_5xx_exhausts_attempts(server: ScriptedServer) -> None:
    server.script(*[Reply(status=500, body="x") for _ in range(5)])
    err, _, _ = await fail(server)
    assert err.code == "http_5xx" and err.detail["attempts"] == 3
    assert len(server.requests) == 3


async def test_401_is_not_retried(server: ScriptedServer) -> None:
    server.script(Reply(status=401, body="{}"), Reply.chat("never"))
    err, _, _ = await fail(server)
    assert err.code == "http_401" and err.category == "authentication"
    assert err.detail["retrySuppressedReason"] == "non_retryable_error"
    assert len(server.requests) == 1


async def test_non_json_body_is_classified_and_retried(server: ScriptedServer) -> None:
    server.script(Reply(body="<html>gateway</html>"), Reply(body="not json"), Reply.chat("ok"))
    response, telemetry = await call(server)
    assert response.content == "ok"
    assert [e["errorCode"] for e in events(telemetry, "error.provider")] == [
        "non_json_response",
        "non_json_response",
    ]


async def test_json_without_choices_is_malformed(server: ScriptedServer) -> None:
    server.script(*[Reply(body={"error": {"message": "x"}}) for _ in range(3)])
    err, _, _ = await fail(server)
    assert err.code == "malformed_response"


async def test_oversize_declared_body_is_refused(server: ScriptedServer) -> None:
    big = json.dumps({"choices": [{"message": {"content": "x" * 5000}}]})
    server.script(Reply(body=big))
    err, _, _ = await fail(server, policy=fast_policy(max_response_bytes=2048))
    assert err.code == "response_too_large" and not err.retryable
    assert len(server.requests) == 1


async def test_oversize_chunked_body_is_cut_off(server: ScriptedServer) -> None:
    big = json.dumps({"choices": [{"message": {"content": "y" * 300_000}}]})
    server.script(Reply(body=big, chunked=True))
    err, _, _ = await fail(server, policy=fast_policy(max_response_bytes=100_000))
    assert err.code == "response_too_large"


async def test_connection_refused_is_network_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = ProviderConfig(
        base_url=f"http://127.0.0.1:{port}/v1",
        model="m",
        api_key=TEST_KEY,
        policy=fast_policy(request_attempts=2),
    )
    client = ChatClient(config)
    with pytest.raises(ProviderError) as info:
        await client.complete(dict(PAYLOAD))
    await client.aclose()
    assert info.value.code == "network_error" and info.value.detail["attempts"] == 2


async def test_dropped_connection_is_network_error(server: ScriptedServer) -> None:
    server.script(Reply(drop=True), Reply.chat("ok"))
    response, telemetry = await call(server)
    assert response.content == "ok"
    assert events(telemetry, "error.provider")[0]["errorCode"] == "network_error"


async def test_abort_before_start_sends_nothing(server: ScriptedServer) -> None:
    client = ChatClient(make_config(server))
    abort = asyncio.Event()
    abort.set()
    with pytest.raises(ProviderError) as info:
        await client.complete(dict(PAYLOAD), abort=abort)
    await client.aclose()
    assert info.value.code == "request_aborted"
    assert server.requests == []


async def test_abort_in_flight_stops_quickly(server: ScriptedServer) -> None:
    server.script(Reply.chat("slow", delay_s=5))
    client = ChatClient(
        make_config(
            server, policy=fast_policy(per_attempt_timeout_ms=10_000, total_deadline_ms=20_000)
        )
    )
    abort = asyncio.Event()
    asyncio.get_running_loop().call_later(0.2, abort.set)
    started = time.monotonic()
    with pytest.raises(ProviderError) as info:
        await client.complete(dict(PAYLOAD), abort=abort)
    await client.aclose()
    assert info.value.code == "request_aborted"
    assert time.monotonic() - started < 1.5
    assert len(server.requests) == 1


async def test_missing_key_fails_before_any_request(server: ScriptedServer) -> None:
    client = ChatClient(make_config(server, api_key=None))
    with pytest.raises(ProviderError) as info:
        await client.complete(dict(PAYLOAD))
    assert info.value.code == "api_key_missing"
    assert server.requests == []


@pytest.mark.parametrize(
    "extra",
    [
        {"tools": []},
        {"tool_choice": "auto"},
        {"parallel_tool_calls": False},
        {"thinking": {"type": "enabled"}},
        {"reasoning_effort": "low"},
        {"messages": [{"role": "tool", "content": "x", "tool_call_id": "1"}]},
    ],
)
async def test_native_tool_fields_never_leave(server: ScriptedServer, extra: dict) -> None:
    client = ChatClient(make_config(server))
    with pytest.raises(ProviderError) as info:
        await client.complete({**PAYLOAD, **extra})
    await client.aclose()
    assert info.value.code == "configuration_invalid"
    assert server.requests == []


def test_retry_after_parsing() -> None:
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    future = parse_retry_after("Wed, 21 Oct 2099 07:28:00 GMT")
    assert future is not None and future > 1000
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
