"""Shared helpers for provider tests."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from provider_server import ScriptedServer

from deskpilot.provider import ProviderConfig, RuntimePolicy, ToolSpec

REPO = Path(__file__).resolve().parents[2]
CLI = REPO / ".venv" / "bin" / "deskpilot"
TEST_KEY = "sk-test-0123456789abcdefSECRET"


def fast_policy(**overrides: int) -> RuntimePolicy:
    values: dict[str, Any] = {
        "per_attempt_timeout_ms": 1500,
        "total_deadline_ms": 6000,
        "retry_delay_ms": 10,
        "retry_max_delay_ms": 40,
        "retry_jitter_ms": 5,
        "retry_after_max_ms": 500,
    }
    values.update(overrides)
    return RuntimePolicy.for_profile("reliability", **values)


def make_config(server: ScriptedServer, **overrides: Any) -> ProviderConfig:
    policy = overrides.pop("policy", None) or fast_policy()
    return ProviderConfig(
        base_url=server.base_url,
        model="scripted-model",
        api_key=overrides.pop("api_key", TEST_KEY),
        policy=policy,
        **overrides,
    )


READ = ToolSpec(
    "read",
    "Read a text file from the workspace and return its contents.",
    {
        "type": "object",
        "properties": {"path": {"type": "string", "minLength": 1}},
        "required": ["path"],
        "additionalProperties": False,
    },
)
BASH = ToolSpec(
    "bash",
    "Run a POSIX shell command and return its output.",
    {
        "type": "object",
        "properties": {"command": {"type": "string"}, "timeout": {"type": "integer", "minimum": 1}},
        "required": ["command"],
        "additionalProperties": False,
    },
)
WEB_FETCH = ToolSpec(
    "web_fetch",
    "Fetch a web page over HTTP and return its text.",
    {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]},
)
TOOLS = [READ, BASH, WEB_FETCH]


def cli_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("DESKPILOT_", "XDG_CONFIG_HOME"))
    }
    env.update({"DESKPILOT_DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path)})
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
    env.update(extra)
    return env
