"""The decision model's wiring (agent/decision_model.py): a desktop state fits one tool result.

A tree may be 48,000 UTF-16 units (the host's budget); with its header it must reach the
model whole. The provider's profile defaults (20,000 characters per result on the
reliability profile) would cut it, so the decision limits raise them; a test that builds the
real request shows the whole tree arrives and nothing says "truncated".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from deskpilot.agent.decision_model import (
    STATE_RESULT_CHARS,
    load_decision_config,
)
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.provider import ChatMessage, ToolCall
from deskpilot.provider.config.profiles import PROFILES
from deskpilot.provider.protocol.content import serialise

TREE_UNITS = 48_000


def _env(tmp_path: Path, profile: str) -> dict[str, str]:
    return {
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "DESKPILOT_PROVIDER_BASE_URL": "http://127.0.0.1:9/v1",
        "DESKPILOT_PROVIDER_MODEL": "m",
        "DESKPILOT_PROVIDER_API_KEY": "sk-test-0123456789",
        "DESKPILOT_PROVIDER_PROFILE": profile,
    }


def _state(units: int) -> str:
    header = 'App=(name="x", pid=1)\nWindow=(title="t", id=0x1)\nstate_id=st_1\n'
    lines: list[str] = []
    n = len(header)
    i = 1
    while n < units:
        line = f'- button "element number {i}" [{i}]'
        lines.append(line)
        n += len(line) + 1
        i += 1
    return header + "\n".join(lines)


@pytest.mark.parametrize("profile", PROFILES)
def test_a_full_tree_reaches_the_model_whole_on_every_profile(tmp_path: Path, profile: str) -> None:
    config = load_decision_config(_env(tmp_path, profile))
    assert config.limits.max_tool_result_chars >= STATE_RESULT_CHARS > TREE_UNITS
    state = _state(TREE_UNITS)
    call = ToolCall("get_app_state", {})
    messages = [
        ChatMessage.user("Goal: press OK"),
        ChatMessage.assistant(tool_call=call),
        ChatMessage.tool_result(call, state),
    ]
    chat = serialise(
        messages,
        "protocol",
        max_result_chars=config.limits.max_tool_result_chars,
        max_history_chars=config.limits.max_tool_history_chars,
    )
    sent = "\n".join(m["content"] for m in chat)
    assert state.splitlines()[-1] in sent  # the last element line arrived
    assert "truncated" not in sent.lower() and "omitted" not in sent.lower()


def test_no_provider_is_a_decision_model_error_that_names_the_fix(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    with pytest.raises(DeskpilotError) as caught:
        load_decision_config(env)
    assert caught.value.code is ErrorCode.DECISION_MODEL_ERROR
    assert "deskpilot provider configure" in caught.value.message
    assert caught.value.details == {"cause": "configuration_invalid"}
