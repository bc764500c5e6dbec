"""Debug JSONL: versioned schema, redaction, no raw tool results or prompts, 0600 file."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from provider_helpers import TEST_KEY, TOOLS, fast_policy, make_config
from provider_server import Reply, ScriptedServer

from deskpilot.provider import ChatMessage, DebugLog, Provider, ToolCall
from deskpilot.provider.telemetry import REDACTED, read_jsonl, redact


def test_redaction_by_key_and_by_value() -> None:
    data = {
        "Authorization": "Bearer abc.def.ghi",
        "api_key": "k",
        "x-api-key": "k",
        "apiKey": "k",
        "token": "t",
        "password": "p",
        "cookie": "c",
        "session_id": "s",
        "nested": {"refresh_token": "r", "list": [{"secret": 1}]},
        "note": "header was Bearer sk-live-1234567890abcdef and sk-abcdefgh12345678",
        "blob": "id a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8 end",
        "max_output_tokens": 8192,
        "retry_suppressed_reason": "rate_limit_immediate_retry_disabled",
        "content": "tool output that must not be logged",
        "text": "user prompt",
        "selected_tool_hash": "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8",
    }
    out = redact(data)
    for key in (
        "Authorization",
        "api_key",
        "x-api-key",
        "apiKey",
        "token",
        "password",
        "cookie",
        "session_id",
    ):
        assert out[key] == REDACTED, key
    assert out["nested"]["refresh_token"] == REDACTED
    assert out["nested"]["list"][0]["secret"] == REDACTED
    assert (
        "sk-live" not in out["note"]
        and "sk-abcdefgh" not in out["note"]
        and REDACTED in out["note"]
    )
    assert "a1b2c3d4e5f6" not in out["blob"]
    assert out["max_output_tokens"] == 8192
    assert out["retry_suppressed_reason"] == "rate_limit_immediate_retry_disabled"
    assert out["content"] == "[omitted 35]" and out["text"] == "[omitted 11]"
    assert out["selected_tool_hash"] == data["selected_tool_hash"]


async def test_debug_log_of_a_real_turn_is_safe(server: ScriptedServer, tmp_path: Path) -> None:
    log_path = tmp_path / "debug" / "provider.jsonl"
    server.script(
        Reply(status=503, body="down"),
        Reply.chat("not json, not protocol <dp_tool_result>"),
        Reply.chat('{"kind":"final","text":"FINAL_ANSWER_TEXT summarised"}'),
    )
    call = ToolCall("read", {"path": "secret.txt"})
    messages = [
        ChatMessage.user("USER_PROMPT_CANARY read secret.txt"),
        ChatMessage.assistant(tool_call=call),
        ChatMessage.tool_result(call, "TOOL_RESULT_CANARY password=hunter2"),
    ]
    config = make_config(server, debug_path=log_path, policy=fast_policy())
    async with Provider(config) as provider:
        result = await provider.decide(messages, TOOLS)
    assert result.kind == "final"
    raw = log_path.read_text("utf-8")
    for canary in (
        "USER_PROMPT_CANARY",
        "TOOL_RESULT_CANARY",
        "hunter2",
        TEST_KEY,
        "FINAL_ANSWER_TEXT",
        "secret.txt",
    ):
        assert canary not in raw, canary
    assert stat.S_IMODE(os.stat(log_path).st_mode) == 0o600
    records = read_jsonl(log_path)
    assert {r["schema"] for r in records} == {"deskpilot.provider.debug.v1"}
    kinds = [r["event"] for r in records]
    assert kinds[0] == "turn.start" and kinds[-1] == "turn.end"
    assert "request.retry" in kinds and "recovery.format" in kinds and "error.provider" in kinds
    responses = [r["data"] for r in records if r["event"] == "response"]
    assert all(r["request_latency_ms"] >= 0 for r in responses)
    assert responses[0]["attempt"] == 2 and responses[0]["retry_count"] == 1
    requests = [r["data"] for r in records if r["event"] == "request"]
    assert {r["attempt_count"] for r in requests} == {3}
    end = records[-1]["data"]
    assert end["requests"] == 2 and end["recoveries"] == 1
    assert len({r["run"] for r in records}) == 1


def test_debug_log_appends_jsonl(tmp_path: Path) -> None:
    log = DebugLog(tmp_path / "a.jsonl", run_id="r1")
    log.emit("x", api_key="secret-value", count=1)
    log.emit("y", attempt=2)
    lines = (tmp_path / "a.jsonl").read_text().splitlines()
    assert [json.loads(line)["event"] for line in lines] == ["x", "y"]
    assert json.loads(lines[0])["data"] == {"api_key": REDACTED, "count": 1}


async def test_debug_path_accepts_a_str(tmp_path: Path, server: ScriptedServer) -> None:
    log_path = tmp_path / "sub" / "debug.jsonl"
    config = make_config(server, debug_path=str(log_path), policy=fast_policy())
    assert config.debug_path == log_path and isinstance(config.debug_path, Path)
    assert config.describe()["debugPath"] == str(log_path)
    server.script(Reply.chat('{"kind":"final","text":"Six times seven is 42."}'))
    async with Provider(config) as provider:
        result = await provider.decide([ChatMessage.user("What is 6*7?")], [])
    assert result.kind == "final", result.error
    assert read_jsonl(log_path)[0]["event"] == "turn.start"
