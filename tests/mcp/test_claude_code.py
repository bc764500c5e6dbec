"""Claude Code (the real CLI, npm ``@anthropic-ai/claude-code``) drives deskpilot.

Everything as a user does it, in a scratch HOME: ``claude mcp add`` with the README's command
line (stdio, and Streamable HTTP with the bearer token), ``claude mcp list`` says Connected,
then ``claude -p`` computes 7 × 6 on gnome-calculator. The model behind ``claude -p`` is
:mod:`scripted_anthropic`, a local Anthropic-Messages-compatible server that reads each
tool_result as a model would (the ``state_id=`` line, the id of the ``"7 7"`` line) and
answers with the next tool_use; nothing is known in advance.

Asserted from what Claude Code sent back to the "model": no deskpilot result was an error,
every click used the state_id the previous result carried (get_app_state → click × 4: no
re-observation), and the display reads 42, also when observed afterwards with our own client.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp_helpers import DESKPILOT, ROOT, stdio_params, text_of
from scripted_anthropic import (
    CLICK,
    FINAL_PREFIX,
    GET_APP_STATE,
    CalculatorAgent,
    ScriptedAnthropic,
    block_text,
    blocks,
    display_in,
    element_in,
    state_id_in,
)

from deskpilot.desktop.apps import App
from deskpilot.hostclient.config import LOCAL_TRUST_ENV
from deskpilot.runtime.diagnostics import parse_diagnostic
from mcp import Client
from serve_kit import http_server

pytestmark = pytest.mark.desktop

CLAUDE = ROOT / "tests" / "clients" / "node_modules" / ".bin" / "claude"
CLIENTS = ROOT / "tests" / "clients"
PROMPT = "Use the deskpilot tools to compute 7 × 6 on gnome-calculator and tell me the result."
LABELS = CalculatorAgent.LABELS  # 7 × 6 =


def claude_bin() -> str:
    if not CLAUDE.exists():
        pytest.fail(
            f"Claude Code is not installed at {CLAUDE}: run scripts/test "
            "(it runs `npm ci` in tests/clients)"
        )
    return str(CLAUDE)


class ClaudeCode:
    """The ``claude`` CLI in a scratch HOME and project directory, pointed at the scripted
    model server. Its environment has no DISPLAY, D-Bus address or host trust switch: the
    stdio server gets them from the ``--env`` flags of ``claude mcp add`` or not at all."""

    def __init__(self, root: Path, base_url: str) -> None:
        self.home = root / "home"
        self.project = root / "project"
        self.tmp = root / "tmp"  # Claude Code keeps per-project scratch under $TMPDIR/claude-UID
        for d in (self.home, self.project, self.tmp):
            d.mkdir()
        self.marker = uuid.uuid4().hex  # finds the processes Claude Code spawned
        drop = {"DISPLAY", "DBUS_SESSION_BUS_ADDRESS", LOCAL_TRUST_ENV, "CLAUDECODE"}
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in drop and not k.startswith(("ANTHROPIC_", "CLAUDE_", "XDG_"))
        }
        env.update(
            HOME=str(self.home),
            TMPDIR=str(self.tmp),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
            XDG_STATE_HOME=str(self.home / ".local" / "state"),
            # the model: also keeps every command off api.anthropic.com (without it, even
            # `claude mcp list` spends ~18 s on DNS retries for it when there is no network)
            ANTHROPIC_BASE_URL=base_url,
            ANTHROPIC_API_KEY="sk-ant-api03-dummy-key-for-the-scripted-server",
            DISABLE_TELEMETRY="1",
            DISABLE_AUTOUPDATER="1",
            DISABLE_ERROR_REPORTING="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            NO_PROXY="127.0.0.1,localhost",
            DESKPILOT_TEST_CLAUDE_MARKER=self.marker,
        )
        self.env = env

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        argv = [claude_bin(), *args]
        proc = subprocess.Popen(
            argv,
            cwd=self.project,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # on timeout, its group goes too (the stdio server)
        )
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate(timeout=10)
            raise AssertionError(
                f"{argv} did not finish in {timeout} s\nstdout:\n{out}\nstderr:\n{err}"
            ) from None
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)

    def ok(self, *args: str, timeout: float = 60) -> str:
        p = self.run(*args, timeout=timeout)
        assert p.returncode == 0, _explain(p)
        return p.stdout

    def spawned(self) -> list[str]:
        """Command lines of live processes that inherited this CLI's environment."""
        needle = f"DESKPILOT_TEST_CLAUDE_MARKER={self.marker}".encode()
        found = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                if needle in (proc / "environ").read_bytes().split(b"\0"):
                    found.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode())
            except OSError:
                continue
        return found


def _explain(p: subprocess.CompletedProcess[str], extra: str = "") -> str:
    return (
        f"{p.args} exited {p.returncode}\nstdout:\n{p.stdout[-6000:]}\n"
        f"stderr:\n{p.stderr[-6000:]}\n{extra}"
    )


def add_server(claude: ClaudeCode, transport: str, stack: ExitStack) -> str:
    """``claude mcp add`` exactly as the README shows it; returns what `mcp list` must show."""
    if transport == "stdio":
        claude.ok(
            "mcp", "add", "deskpilot",
            "--env", f"DISPLAY={os.environ['DISPLAY']}",
            "--env", f"DBUS_SESSION_BUS_ADDRESS={os.environ['DBUS_SESSION_BUS_ADDRESS']}",
            "--env", f"{LOCAL_TRUST_ENV}=1",
            "--", DESKPILOT, "serve",
        )  # fmt: skip
        return f"deskpilot: {DESKPILOT} serve"
    url, token = stack.enter_context(http_server()).target
    claude.ok(
        "mcp", "add", "--transport", "http", "deskpilot", url,
        "--header", f"Authorization: Bearer {token}",
    )  # fmt: skip
    return f"deskpilot: {url} (HTTP)"


def conversation(scripted: ScriptedAnthropic) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(tool_use, tool_result) pairs of the whole run, from the last agent request (Claude
    Code sends the full conversation every time), checked against every earlier request."""
    agent = scripted.agent_requests()
    assert agent, f"Claude Code never asked the model\n{scripted.summary()}"
    messages = agent[-1].body["messages"]
    results = {b["tool_use_id"]: b for b in blocks(messages, "user", "tool_result")}
    pairs = [(u, results[u["id"]]) for u in blocks(messages, "assistant", "tool_use")]
    # what the model answered is what Claude Code executed, in order, nothing else
    answered = [b for r in agent[:-1] for b in r.reply if b["type"] == "tool_use"]
    assert [(u["id"], u["name"], u["input"]) for u, _ in pairs] == [
        (b["id"], b["name"], b["input"]) for b in answered
    ], scripted.summary()
    return pairs


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_claude_code_computes_on_the_calculator(
    transport: str, calculator: App, tmp_path: Path
) -> None:
    with ExitStack() as stack:
        scripted = stack.enter_context(ScriptedAnthropic())
        claude = ClaudeCode(tmp_path, scripted.base_url)
        pinned = json.loads((CLIENTS / "package.json").read_text())["dependencies"]
        assert claude.ok("--version", timeout=30).split()[0] == pinned["@anthropic-ai/claude-code"]

        # 1. configured as the README says, and healthy (initialize + tools/list)
        listed_as = add_server(claude, transport, stack)
        listing = claude.ok("mcp", "list", timeout=90)
        assert f"{listed_as} - ✔ Connected" in listing.splitlines(), listing

        # 2. a real agent run: Claude Code's loop, our tools, the scripted model
        p = claude.run(
            "-p", PROMPT,
            "--allowedTools", "mcp__deskpilot",
            "--output-format", "json",
            "--max-turns", "12",
            timeout=240,
        )  # fmt: skip
        why = _explain(p, f"model requests:\n{scripted.summary()}")
        assert p.returncode == 0, why
        try:
            out = json.loads(p.stdout)
        except ValueError:
            raise AssertionError(why) from None
        assert out["is_error"] is False and out["permission_denials"] == [], why
        assert out["result"] == f"{FINAL_PREFIX}42.", why
        assert not [r for r in scripted.requests if r.kind.startswith("error")], why

        # 3. what Claude Code handed back to the model, read as the model read it
        pairs = [(u, r) for u, r in conversation(scripted) if u["name"].startswith("mcp__")]
        assert [u["name"] for u, _ in pairs] == [GET_APP_STATE, *[CLICK] * 4], why
        assert pairs[0][0]["input"] == {"app": "gnome-calculator"}
        for _, result in pairs:  # the screenshot reached the model next to the text
            assert any(
                c.get("type") == "image" and c["source"].get("media_type") == "image/jpeg"
                for c in result["content"]
            ), result
        for (_, prev), (use, result), label in zip(pairs[:-1], pairs[1:], LABELS, strict=True):
            prev_text, text = block_text(prev), block_text(result)
            assert not result.get("is_error"), text
            diag = parse_diagnostic(text)
            assert diag is not None and "code" not in diag, text  # e.g. no state_id_invalid
            assert diag["tool"] == "click" and diag["actionOutcome"] == "call_returned", diag
            assert diag["stateIdIssued"] is True, diag
            # the click reused the state the previous result carried, on the element it named
            assert use["input"] == {
                "state_id": state_id_in(prev_text),
                "element_id": element_in(prev_text, label),
            }, (use, prev_text)
            assert state_id_in(text) not in (None, state_id_in(prev_text)), text
        first = block_text(pairs[0][1])
        assert not pairs[0][1].get("is_error"), first
        assert first.startswith(f'App=(name="gnome-calculator", pid={calculator.pid})'), first
        assert (parse_diagnostic(first) or {}).get("stateIdIssued") is True, first
        assert display_in(block_text(pairs[-1][1])) == "42", block_text(pairs[-1][1])

        # Claude Code ends the stdio server it spawned when it exits
        deadline = time.monotonic() + 15
        while (left := claude.spawned()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not left, left

    # our own client, afterwards: the calculator really shows 42
    assert display_in(asyncio.run(observe(calculator.pid))) == "42"


async def observe(pid: int) -> str:
    async with Client(stdio_params()) as client:
        r = await client.call_tool("get_app_state", {"app": pid})
        assert not r.is_error, text_of(r)
        return text_of(r)


def test_a_missing_claude_fails_naming_scripts_test(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sys.modules[__name__], "CLAUDE", tmp_path / "claude")
    with pytest.raises(pytest.fail.Exception, match=r"run scripts/test"):
        claude_bin()


def test_the_scripted_model_streams_and_answers_side_requests() -> None:
    """The scripted server alone: SSE framing, a side request (no deskpilot tools), the
    agent's first step when the tools are deferred behind ToolSearch, count_tokens, 404."""
    with ScriptedAnthropic() as scripted, httpx.Client(base_url=scripted.base_url) as http:
        user = [{"role": "user", "content": "Name this conversation."}]
        r = http.post("/v1/messages", json={"model": "haiku", "messages": user, "stream": True})
        assert r.status_code == 200 and r.headers["content-type"] == "text/event-stream"
        events = [
            (ev.removeprefix("event: "), json.loads(data.removeprefix("data: ")))
            for ev, data in (chunk.split("\n", 1) for chunk in r.text.strip().split("\n\n"))
        ]
        assert [e for e, _ in events] == [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
        assert all(data["type"] == e for e, data in events)
        assert events[2][1]["delta"] == {"type": "text_delta", "text": "Calculator task"}
        assert events[4][1]["delta"]["stop_reason"] == "end_turn"

        tools = [{"name": "ToolSearch", "input_schema": {"type": "object"}}]
        body = {"model": "opus", "messages": user, "tools": tools}
        r = http.post("/v1/messages?beta=true", json=body)
        assert r.status_code == 200 and r.json()["stop_reason"] == "tool_use"
        (use,) = r.json()["content"]
        assert use["name"] == "ToolSearch" and use["input"] == {
            "query": f"select:{GET_APP_STATE},{CLICK}"
        }

        r = http.post("/v1/messages/count_tokens", json={"model": "opus", "messages": user})
        assert r.status_code == 200 and r.json()["input_tokens"] > 0
        r = http.get("/v1/models")
        assert r.status_code == 404 and r.json()["error"]["type"] == "not_found_error"
        assert [q.kind for q in scripted.requests] == ["side", "agent", "count_tokens", "not_found"]
