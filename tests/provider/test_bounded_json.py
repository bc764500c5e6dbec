"""Deeply nested JSON from a model or endpoint is a typed outcome, never a RecursionError."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from provider_helpers import CLI, READ, make_config
from provider_server import Reply, ScriptedServer

from deskpilot.provider import ChatMessage, MemoryTelemetry, Provider, ProviderError
from deskpilot.provider.contract.bounded_json import (
    MAX_JSON_DEPTH,
    JSONRejected,
    loads,
    nesting_exceeds,
    raw_decode,
)
from deskpilot.provider.protocol import parse_output
from deskpilot.provider.transport import ChatClient

DEEP_ARRAY = "[" * 100_000
DEEP_ARGS_OBJECT = '{"a":' * 5_000 + "1" + "}" * 5_000
NESTED_CALL = (
    '{"kind":"tool_call","name":"read","arguments":{"path":"x","deep":' + DEEP_ARGS_OBJECT + "}}"
)
STRING_ARGS_CALL = json.dumps({"kind": "tool_call", "name": "read", "arguments": DEEP_ARGS_OBJECT})
TAG_CALL = f"<dp_tool_call>{NESTED_CALL}</dp_tool_call>"


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_the_limit_is_exact_and_strings_do_not_count() -> None:
    assert loads(nested(MAX_JSON_DEPTH)) is not None
    with pytest.raises(JSONRejected) as exc:
        loads(nested(MAX_JSON_DEPTH + 1))
    assert exc.value.reason == "too_deep"
    in_string = json.dumps({"text": "[" * 10_000 + "{" * 10_000})
    assert loads(in_string)["text"].startswith("[[[")
    escaped = json.dumps({"t": '\\"' + "[" * 500})
    assert loads(escaped)["t"].endswith("[")
    with pytest.raises(JSONRejected) as exc:
        loads("{bad")
    assert exc.value.reason == "syntax"


def test_prefix_decode_stops_at_the_first_value() -> None:
    text = "[1] then prose " + "[" * 500
    assert raw_decode(text, 0) == ([1], 3)
    assert not nesting_exceeds(text, 0)
    assert nesting_exceeds(text, text.index("[", 4))


@pytest.mark.parametrize(
    "raw", [DEEP_ARRAY, NESTED_CALL, STRING_ARGS_CALL, TAG_CALL, "prose " + NESTED_CALL]
)
def test_parser_maps_deep_nesting_to_invalid_json_or_a_firewall_code(raw: str) -> None:
    outcome = parse_output(raw, {"read"})
    assert getattr(outcome, "code", None) in ("invalid_json", "tool_call_like_final"), outcome
    if raw[0] in "[{<":
        assert outcome.code == "invalid_json"  # type: ignore[union-attr]


async def test_decide_returns_a_typed_error_for_deep_replies(server: ScriptedServer) -> None:
    server.script(Reply.chat(DEEP_ARRAY), Reply.chat(NESTED_CALL))
    telemetry = MemoryTelemetry()
    async with Provider(make_config(server), telemetry=telemetry) as provider:
        result = await provider.decide([ChatMessage.user("Read package.json")], [READ])
    assert result.kind == "error" and result.error is not None
    assert result.error.code == "recovery_exhausted"
    assert result.error.detail["cause"] == "invalid_json"
    assert result.requests == 2  # one format repair (reliability), then a typed stop
    assert "dp_repair" in server.requests[1].json["messages"][-1]["content"]


async def test_deeply_nested_response_body_is_non_json_response(server: ScriptedServer) -> None:
    server.script(Reply(body=DEEP_ARRAY), Reply(body=DEEP_ARRAY), Reply(body=DEEP_ARRAY))
    client = ChatClient(make_config(server))
    payload = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
    try:
        with pytest.raises(ProviderError) as exc:
            await client.complete(payload, attempts=1)
    finally:
        await client.aclose()
    assert exc.value.code == "non_json_response"


def test_cli_parse_prints_a_verdict_for_deep_input(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"name": "read", "description": "r", "parameters": {}}]))
    for raw in (DEEP_ARRAY, NESTED_CALL):
        proc = subprocess.run(
            [str(CLI), "provider", "parse", "--tools", str(tools)],
            input=raw.encode(),
            capture_output=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr[-400:]
        assert json.loads(proc.stdout) == {
            "ok": False,
            "error": "invalid_json",
            "repairable": True,
        }
    lines = "\n".join([DEEP_ARRAY, json.dumps({"raw": NESTED_CALL}), '{"raw": "hello"}'])
    proc = subprocess.run(
        [str(CLI), "provider", "parse", "--tools", str(tools), "--jsonl"],
        input=lines.encode(),
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-400:]
    verdicts = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert [v.get("error") for v in verdicts] == ["invalid_input", "invalid_json", None]
    assert verdicts[2]["text"] == "hello"
