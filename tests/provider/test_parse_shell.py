"""The shell guard is part of the one verdict: `deskpilot provider parse` and a real turn agree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from provider_helpers import BASH, READ, fast_policy, make_config
from provider_server import Reply, ScriptedServer
from test_cli_parse import TOOLS, one, run

from deskpilot.provider import ChatMessage, MemoryTelemetry, Provider, evaluate
from deskpilot.provider.contract import load_contract

MISMATCH = {"ok": False, "error": "shell_mismatch", "repairable": True}
BAD_COMMANDS = [
    "Get-ChildItem -Path . | Select-Object Name",
    "Remove-Item -Recurse build",
    "cat C:\\Users\\me\\notes.txt",
    "type .\\scripts\\build.ps1",
    "ls src\\app",
]
GOOD_COMMANDS = [
    "ls -1",
    'pwsh -Command "Get-ChildItem C:\\\\tmp"',
    "grep -r 'Get-ChildItem' docs",
    "echo 'C:\\Users'",
]


def bash_call(command: str) -> str:
    return json.dumps({"kind": "tool_call", "name": "bash", "arguments": {"command": command}})


@pytest.fixture
def tools_file(tmp_path: Path) -> Path:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(TOOLS), "utf-8")
    return path


def test_contract_says_shell_mismatch_is_repairable() -> None:
    spec = load_contract().spec("shell_mismatch")
    assert spec.repairable and not spec.retryable


@pytest.mark.parametrize("command", BAD_COMMANDS)
def test_parse_cli_reports_shell_mismatch(tools_file: Path, command: str) -> None:
    assert one(tools_file, bash_call(command)) == MISMATCH


@pytest.mark.parametrize("command", GOOD_COMMANDS)
def test_parse_cli_accepts_posix_and_quoted_commands(tools_file: Path, command: str) -> None:
    out = one(tools_file, bash_call(command))
    assert out == {
        "ok": True,
        "kind": "tool_call",
        "name": "bash",
        "arguments": {"command": command},
    }


def test_parse_cli_jsonl_and_non_shell_tools(tools_file: Path) -> None:
    lines = [
        {"raw": bash_call("Get-Process")},
        {"raw": bash_call("ls -la")},
        # the same text handed to a tool that is not a POSIX shell is not a shell problem
        {"raw": json.dumps({"kind": "tool_call", "name": "read", "arguments": {"path": "a\\b"}})},
    ]
    proc = run(["--tools", str(tools_file), "--jsonl"], "\n".join(map(json.dumps, lines)))
    assert proc.returncode == 0, proc.stderr
    out = [json.loads(x) for x in proc.stdout.decode().splitlines()]
    assert out[0] == MISMATCH
    assert out[1]["ok"] is True and out[1]["name"] == "bash"
    assert out[2]["ok"] is True and out[2]["name"] == "read"


@pytest.mark.parametrize("command", [*BAD_COMMANDS, *GOOD_COMMANDS])
def test_evaluate_is_the_one_decider(command: str) -> None:
    """The in-process verdict equals the turn's judgement of the same reply."""
    verdict = evaluate(bash_call(command), selected={"bash"}, tools={"bash": BASH})
    assert (verdict.code == "shell_mismatch") == (command in BAD_COMMANDS)


async def test_turn_repairs_shell_mismatch_with_the_same_code(server: ScriptedServer) -> None:
    server.script(Reply.chat(bash_call("Get-ChildItem")), Reply.chat(bash_call("ls -1")))
    telemetry = MemoryTelemetry()
    async with Provider(make_config(server, policy=fast_policy()), telemetry=telemetry) as p:
        result = await p.decide([ChatMessage.user("list the files with bash")], [READ, BASH])
    assert result.kind == "tool_call" and result.tool_call is not None
    assert result.tool_call.arguments == {"command": "ls -1"}
    assert result.requests == 2 and len(server.requests) == 2
    repair = server.requests[1].json["messages"][-1]["content"]
    assert "(shell_mismatch)" in repair and "PowerShell" in repair
    event = next(e for e in telemetry.events if e["event"].startswith("recovery."))
    assert event["data"]["code"] == "shell_mismatch" and event["data"]["reason"] == "shell"


async def test_turn_stops_when_the_shell_repair_budget_is_spent(server: ScriptedServer) -> None:
    policy = fast_policy(max_format_recoveries=0)
    server.script(Reply.chat(bash_call("Get-ChildItem")))
    async with Provider(make_config(server, policy=policy)) as p:
        result = await p.decide([ChatMessage.user("list the files with bash")], [READ, BASH])
    assert result.kind == "error" and result.error is not None
    assert result.error.code == "recovery_exhausted"
    assert result.error.detail["cause"] == "shell_mismatch"
    assert len(server.requests) == 1
