"""`deskpilot provider configure|health|capability` as real subprocesses."""

from __future__ import annotations

import codecs
import json
import os
import pty
import select
import stat
import subprocess
import time
from pathlib import Path

import pytest
from provider_helpers import CLI, TEST_KEY, cli_env
from provider_server import Recorded, Reply, ScriptedServer, completion


def run(args: list[str], env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), "provider", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_configure_from_environment_writes_config_and_0600_key(tmp_path: Path) -> None:
    env = cli_env(
        tmp_path,
        DESKPILOT_PROVIDER_API_KEY=TEST_KEY,
        DESKPILOT_PROVIDER_BASE_URL="https://llm.example/v1",
        DESKPILOT_PROVIDER_MODEL="m1",
    )
    proc = run(["configure", "--no-prompt", "--json"], env)
    assert proc.returncode == 0, proc.stderr
    assert TEST_KEY not in proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    assert out["apiKey"] == "stored" and out["keyStorage"] == "file"
    data_dir = tmp_path / "data"
    config = json.loads((data_dir / "provider.json").read_text())
    assert config == {
        "schema": "deskpilot.provider.config.v1",
        "baseUrl": "https://llm.example/v1",
        "model": "m1",
        "profile": "reliability",
        "keyStorage": "file",
    }
    key_file = data_dir / "provider.key"
    assert key_file.read_text().strip() == TEST_KEY
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert TEST_KEY not in (data_dir / "provider.json").read_text()
    # a later run without the env key keeps the stored key and still loads it
    env2 = cli_env(tmp_path)
    proc2 = run(["configure", "--no-prompt", "--json", "--profile", "balanced"], env2)
    assert json.loads(proc2.stdout)["apiKey"] == "kept"
    assert json.loads((data_dir / "provider.json").read_text())["profile"] == "balanced"


def test_configure_has_no_api_key_flag(tmp_path: Path) -> None:
    proc = run(["configure", "--api-key", "sk-x", "--no-prompt"], cli_env(tmp_path))
    assert proc.returncode == 2
    assert "sk-x" not in json.dumps(os.listdir(tmp_path))
    assert "--api-key" not in run(["configure", "--help"], cli_env(tmp_path)).stdout


def test_configure_dry_run_writes_nothing(tmp_path: Path) -> None:
    env = cli_env(tmp_path, DESKPILOT_PROVIDER_API_KEY=TEST_KEY)
    proc = run(
        [
            "configure",
            "--no-prompt",
            "--dry-run",
            "--json",
            "--base-url",
            "https://x.example/v1",
            "--model",
            "m",
        ],
        env,
    )
    assert proc.returncode == 0 and json.loads(proc.stdout)["dryRun"] is True
    assert not (tmp_path / "data" / "provider.json").exists()
    assert not (tmp_path / "data" / "provider.key").exists()


def test_configure_normalises_utf16_with_backup(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    doc = {"baseUrl": "https://enc.example/v1", "model": "m", "limits": {"max_tools": 6}}
    original = codecs.BOM_UTF16_LE + json.dumps(doc).encode("utf-16-le")
    (data_dir / "provider.json").write_bytes(original)
    proc = run(["configure", "--no-prompt", "--json"], cli_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    backup = Path(out["encodingBackup"])
    assert backup.read_bytes() == original
    written = json.loads((data_dir / "provider.json").read_bytes().decode("utf-8"))
    assert written["baseUrl"] == doc["baseUrl"] and written["limits"] == {"max_tools": 6}


def test_configure_malformed_json_fails_closed(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "provider.json").write_text('{"baseUrl": "https://x/v1",,}')
    proc = run(
        ["configure", "--no-prompt", "--base-url", "https://y.example/v1", "--model", "m"],
        cli_env(tmp_path),
    )
    assert proc.returncode == 2 and "configuration_invalid" in proc.stderr
    assert (data_dir / "provider.json").read_text() == '{"baseUrl": "https://x/v1",,}'


def test_configure_rejects_full_endpoint_url(tmp_path: Path) -> None:
    proc = run(
        [
            "configure",
            "--no-prompt",
            "--base-url",
            "https://x.example/v1/chat/completions",
            "--model",
            "m",
        ],
        cli_env(tmp_path),
    )
    assert proc.returncode == 2 and "must not end with /chat/completions" in proc.stderr


def test_configure_hidden_tty_key_entry(tmp_path: Path) -> None:
    env = cli_env(
        tmp_path, DESKPILOT_PROVIDER_BASE_URL="https://tty.example/v1", DESKPILOT_PROVIDER_MODEL="m"
    )
    pid, fd = pty.fork()
    if pid == 0:  # child: a real terminal session
        os.execve(str(CLI), [str(CLI), "provider", "configure"], env)
    transcript = b""
    deadline = time.monotonic() + 30
    typed = False
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            transcript += chunk
        if not typed and b"API key (input hidden)" in transcript:
            os.write(fd, (TEST_KEY + "\n").encode())
            typed = True
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    assert typed, transcript
    assert os.waitstatus_to_exitcode(status) == 0, transcript
    assert TEST_KEY.encode() not in transcript  # not echoed, not printed
    assert (tmp_path / "data" / "provider.key").read_text().strip() == TEST_KEY


def _configured_env(tmp_path: Path, server: ScriptedServer, **extra: str) -> dict[str, str]:
    return cli_env(
        tmp_path,
        DESKPILOT_PROVIDER_BASE_URL=server.base_url,
        DESKPILOT_PROVIDER_MODEL="probe-model",
        DESKPILOT_PROVIDER_API_KEY=TEST_KEY,
        DESKPILOT_PROVIDER_RETRY_DELAY_MS="10",
        DESKPILOT_PROVIDER_RETRY_MAX_DELAY_MS="20",
        DESKPILOT_PROVIDER_RETRY_JITTER_MS="0",
        **extra,
    )


def test_health_sends_a_real_minimal_request(tmp_path: Path, server: ScriptedServer) -> None:
    server.script(Reply.chat("O"))
    proc = run(["health"], _configured_env(tmp_path, server))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["ok"] is True and out["schema"] == "deskpilot.provider.health.v1"
    assert out["endpoint"] == server.base_url + "/chat/completions" and out["attempts"] == 1
    body = server.requests[0].json
    assert body["max_tokens"] == 1 and "tools" not in body and "response_format" not in body
    assert TEST_KEY not in proc.stdout


def test_health_reports_classified_failure(tmp_path: Path, server: ScriptedServer) -> None:
    server.script(Reply(status=401, body='{"error":{"message":"bad key"}}'))
    proc = run(["health"], _configured_env(tmp_path, server))
    assert proc.returncode == 1
    out = json.loads(proc.stdout)
    assert out["ok"] is False
    assert out["error"]["code"] == "http_401" and out["error"]["category"] == "authentication"
    assert out["error"]["retrySuppressedReason"] == "non_retryable_error"


def test_health_retries_only_immediately_retryable(tmp_path: Path, server: ScriptedServer) -> None:
    server.script(Reply(status=502, body="x"), Reply.chat("O"))
    out = json.loads(run(["health"], _configured_env(tmp_path, server)).stdout)
    assert out["ok"] is True and out["attempts"] == 2
    server.script(Reply(status=429, body="{}"), Reply.chat("O"))
    out = json.loads(run(["health"], _configured_env(tmp_path, server)).stdout)
    assert out["error"]["code"] == "http_429"
    assert out["error"]["retrySuppressedReason"] == "rate_limit_immediate_retry_disabled"


def test_health_without_key_fails_before_any_request(
    tmp_path: Path, server: ScriptedServer
) -> None:
    env = _configured_env(tmp_path, server)
    env.pop("DESKPILOT_PROVIDER_API_KEY")
    proc = run(["health"], env)
    assert proc.returncode == 2 and "api_key_missing" in proc.stderr
    assert server.requests == []


def _capable_endpoint(native: bool) -> callable:
    """Answers each probe the way a capable (or a text-only) endpoint would."""

    def reply(req: Recorded) -> Reply:
        body = req.json
        messages = body["messages"]
        if "tools" in body:
            if not native:
                return Reply(status=400, body='{"error":{"message":"tools unsupported"}}')
            if messages[-1]["role"] == "tool":
                return Reply.chat("The probe value is PROBE_VALUE_7319.")
            call = {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_probe_value", "arguments": '{"key":"probe"}'},
            }
            return Reply(body=completion(None, tool_calls=[call], finish="tool_calls"))
        fmt = body.get("response_format", {}).get("type")
        if fmt == "json_schema":
            return Reply.chat('{"answer":"yes"}' if native else "yes")
        if messages[0]["role"] == "system":
            return Reply.chat(
                '{"kind":"tool_call","name":"read","arguments":{"path":"package.json"}}'
            )
        if fmt == "json_object":
            return Reply.chat('{"ok": true}')
        return Reply.chat("pong")

    return reply


@pytest.mark.parametrize(
    ("native", "mode"), [(True, "native_strict_tools"), (False, "local_json_action_protocol")]
)
def test_capability_probe(tmp_path: Path, server: ScriptedServer, native: bool, mode: str) -> None:
    handler = _capable_endpoint(native)
    server.script(*[handler for _ in range(20)])
    proc = run(["capability", "--json-action-runs", "2"], _configured_env(tmp_path, server))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["schema"] == "deskpilot.provider.capabilities.v1"
    probes = out["probes"]
    assert list(probes) == [
        "plain_chat",
        "json_object",
        "json_schema_strict",
        "native_tools_forced",
        "native_tools_strict_forced",
        "role_tool_followup",
        "json_action_1",
        "json_action_2",
    ]
    assert probes["plain_chat"]["ok"] and probes["json_object"]["ok"]
    assert probes["json_schema_strict"]["ok"] is native
    assert probes["native_tools_forced"]["ok"] is native
    assert probes["role_tool_followup"]["ok"] is native
    assert out["jsonActionPassed"] == 2 and out["recommendedMode"] == mode
    action_requests = [r.json for r in server.requests if r.json["messages"][0]["role"] == "system"]
    assert action_requests and all("tools" not in r for r in action_requests)


def test_capability_skip_native_and_unsupported(tmp_path: Path, server: ScriptedServer) -> None:
    server.script(*[Reply.chat("I cannot do JSON.") for _ in range(10)])
    proc = run(
        ["capability", "--json-action-runs", "2", "--skip-native-probes"],
        _configured_env(tmp_path, server),
    )
    out = json.loads(proc.stdout)
    assert "native_tools_forced" not in out["probes"]
    assert out["recommendedMode"] == "unsupported_json_action"
    assert all("tools" not in r.json for r in server.requests)


def test_configure_uses_the_keyring_when_one_is_usable(tmp_path: Path) -> None:
    store = tmp_path / "keyring.json"
    env = cli_env(
        tmp_path,
        DESKPILOT_PROVIDER_API_KEY=TEST_KEY,
        DESKPILOT_PROVIDER_BASE_URL="https://llm.example/v1",
        DESKPILOT_PROVIDER_MODEL="m1",
        PYTHON_KEYRING_BACKEND="provider_keyring.FileKeyring",
        PYTHONPATH=str(Path(__file__).parent),
        TEST_KEYRING_FILE=str(store),
    )
    proc = run(["configure", "--no-prompt", "--json"], env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["keyStorage"] == "keyring" and out["keyLocation"] == "keyring"
    assert json.loads(store.read_text()) == {"deskpilot-provider/api-key": TEST_KEY}
    assert not (tmp_path / "data" / "provider.key").exists()
    # the runtime loads it back from the keyring
    env.pop("DESKPILOT_PROVIDER_API_KEY")
    code = (
        "from deskpilot.provider import load_config; c = load_config(); "
        f"print(c.sources['api_key'], c.api_key == {TEST_KEY!r})"
    )
    check = subprocess.run(
        [str(CLI.parent / "python"), "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.stdout.split() == ["keyring", "True"], check.stderr
