"""`deskpilot provider parse` as a subprocess: exact verdict shapes, stdin and --jsonl modes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from provider_helpers import CLI

TOOLS = [
    {
        "name": "read",
        "description": "Read a file.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
            "additionalProperties": False,
        },
    },
    {
        "name": "bash",
        "description": "Run a command.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
    {"name": "write", "description": "Write a file.", "parameters": {"type": "object"}},
]


@pytest.fixture
def tools_file(tmp_path: Path) -> Path:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(TOOLS), "utf-8")
    return path


def run(args: list[str], stdin: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(CLI), "provider", "parse", *args],
        input=stdin.encode("utf-8"),
        capture_output=True,
        timeout=60,
    )


def one(tools_file: Path, raw: str, *extra: str) -> dict:
    proc = run(["--tools", str(tools_file), *extra], raw)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode("utf-8").splitlines()
    assert len(lines) == 1
    return json.loads(lines[0])


def test_tool_call_shape_is_exact(tools_file: Path) -> None:
    out = one(tools_file, '{"kind":"tool_call","name":"read","arguments":{"path":"a.txt"}}')
    assert out == {"ok": True, "kind": "tool_call", "name": "read", "arguments": {"path": "a.txt"}}
    assert list(out) == ["ok", "kind", "name", "arguments"]


def test_final_shape_is_exact_and_unicode_survives(tools_file: Path) -> None:
    out = one(tools_file, '{"kind":"final","text":"完成：3 个文件 ✓"}')
    assert out == {"ok": True, "kind": "final", "text": "完成：3 个文件 ✓"}


def test_error_shape_is_exact(tools_file: Path) -> None:
    out = one(tools_file, '{"kind":"tool_call","name":"read","arguments":""}')
    assert out == {"ok": False, "error": "empty_arguments", "repairable": True}
    assert list(out) == ["ok", "error", "repairable"]


def test_raw_stdin_is_read_whole_including_newlines(tools_file: Path) -> None:
    raw = 'Let me look.\n<tool_call name="read">\n{"path": "x"}\n</tool_call>\n'
    assert one(tools_file, raw)["name"] == "read"


def test_selected_limits_the_whitelist(tools_file: Path) -> None:
    raw = '{"kind":"tool_call","name":"bash","arguments":{"command":"ls"}}'
    assert one(tools_file, raw)["ok"] is True
    assert one(tools_file, raw, "--selected", "read,write") == {
        "ok": False,
        "error": "unknown_tool",
        "repairable": True,
    }
    # a kind naming a tool is drift only when that tool is selected
    drift = '{"kind":"bash","command":"ls"}'
    assert one(tools_file, drift, "--selected", "bash")["error"] == "kind_is_tool_name"
    assert one(tools_file, drift, "--selected", "read")["error"] == "invalid_kind"


def test_unselected_tool_name_still_triggers_firewall(tools_file: Path) -> None:
    raw = 'Answer: {"name":"bash","arguments":{"command":"ls"}}'
    assert one(tools_file, raw, "--selected", "read")["error"] == "tool_call_like_final"


def test_jsonl_one_verdict_per_line_in_order(tools_file: Path) -> None:
    lines = [
        {"raw": '{"kind":"final","text":"a"}', "selected": None},
        "not json at all",
        {
            "raw": '{"kind":"tool_call","name":"bash","arguments":{"command":"ls"}}',
            "selected": ["read"],
        },
        {
            "raw": '{"kind":"tool_call","name":"bash","arguments":{"command":"ls"}}',
            "selected": None,
        },
        {"raw": 5, "selected": None},
        {"raw": "x", "selected": ["nope"]},
        {"raw": "x", "selected": "read"},
        {"raw": '<dp_tool_call name="read">{"path":"p"}</dp_tool_call>'},
    ]
    text = "\n".join(json.dumps(x) if isinstance(x, dict) else x for x in lines) + "\n\n"
    proc = run(["--tools", str(tools_file), "--jsonl"], text)
    assert proc.returncode == 0
    got = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    invalid = {"ok": False, "error": "invalid_input", "repairable": False}
    assert got == [
        {"ok": True, "kind": "final", "text": "a"},
        invalid,
        {"ok": False, "error": "unknown_tool", "repairable": True},
        {"ok": True, "kind": "tool_call", "name": "bash", "arguments": {"command": "ls"}},
        invalid,
        invalid,
        invalid,
        {"ok": True, "kind": "tool_call", "name": "read", "arguments": {"path": "p"}},
    ]


def test_jsonl_null_selection_uses_the_flag(tools_file: Path) -> None:
    line = json.dumps(
        {"raw": '{"kind":"tool_call","name":"bash","arguments":{"command":"ls"}}', "selected": None}
    )
    proc = run(["--tools", str(tools_file), "--jsonl", "--selected", "read"], line)
    assert json.loads(proc.stdout)["error"] == "unknown_tool"


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        '{"name":"read"}',
        '[{"name":"bad name!"}]',
        '[{"name":"a"},{"name":"a"}]',
        '[{"name":"a","x":1}]',
    ],
)
def test_bad_tool_file_is_a_usage_error(tmp_path: Path, content: str) -> None:
    path = tmp_path / "tools.json"
    path.write_text(content, "utf-8")
    proc = run(["--tools", str(path)], "{}")
    assert proc.returncode == 2
    assert b"invalid_input" in proc.stderr
    assert proc.stdout == b""


def test_selected_name_not_in_tool_file_is_a_usage_error(tools_file: Path) -> None:
    proc = run(["--tools", str(tools_file), "--selected", "read,ghost"], "{}")
    assert proc.returncode == 2 and b"ghost" in proc.stderr


def test_missing_tool_file_is_a_usage_error(tmp_path: Path) -> None:
    proc = run(["--tools", str(tmp_path / "nope.json")], "{}")
    assert proc.returncode == 2
