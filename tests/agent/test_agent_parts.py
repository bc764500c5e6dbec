"""The agent's own small parts: argument summaries, the conversation's compaction, ``read``."""

from __future__ import annotations

from pathlib import Path

import pytest

from deskpilot.agent.arguments import summarise
from deskpilot.agent.files import MAX_LINES, ReadTool
from deskpilot.agent.history import KEEP_STATES, Conversation
from deskpilot.agent.tools import TurnScope
from deskpilot.protocol.errors import DeskpilotError
from deskpilot.provider import ToolCall


def test_summary_never_shows_typed_text_or_secrets() -> None:
    typed = summarise("type_text", {"state_id": "st_1", "element_id": 4, "text": "hunter2 pw"})
    assert "hunter2" not in typed and "text=«10 chars»" in typed and "element_id=4" in typed
    assert "s3cr3t" not in summarise("set_value", {"value": "s3cr3t"})
    assert "tok-123" not in summarise("start_task", {"goal": "x", "api_token": "tok-123"})
    cmd = summarise("bash", {"command": "GITHUB_TOKEN=ghp_abc git status"})
    assert "ghp_abc" not in cmd and "GITHUB_TOKEN=«hidden»" in cmd and "git status" in cmd
    for command, secret, shown in [
        ("export PASSWORD=hunter2zz; echo ok", "hunter2zz", "PASSWORD=«hidden»; echo ok"),
        ("echo --token pw888zz", "pw888zz", "--token «hidden»"),
        ('curl -H "Authorization: Bearer tok777zzzz" x', "tok777zzzz", "Bearer «hidden»"),
        ("echo sk-live-abcdef1234567", "abcdef1234567", "echo «hidden»"),
    ]:
        line = summarise("bash", {"command": command})
        assert secret not in line and shown in line, line
    assert summarise("bash", {"command": "git log --author=bob"}) == "command=git log --author=bob"
    long = summarise("bash", {"command": "echo " + "x" * 500})
    assert len(long) < 120 and long.endswith("…")


def _state(n: int) -> str:
    return f'App=(name="calc", pid=1)\nstate_id=st_{n}\nelements=3\n\n- button "{n}" [1]'


def test_older_states_are_compacted_and_say_so() -> None:
    conv = Conversation()
    conv.add_user("compute")
    for n in range(4):
        call = ToolCall("get_app_state", {"app": "calc"})
        conv.add_call(call)
        conv.add_result(
            call, _state(n), is_error=False, state_id=f"st_{n}", header=_state(n).split("\n\n")[0]
        )
    tools = [m for m in conv.messages if m.role == "tool"]
    whole = [m for m in tools if "- button" in m.content]
    assert len(whole) == KEEP_STATES
    assert [m.content.count("st_3") for m in whole][-1] >= 1
    dropped = [m for m in tools if "its tree was dropped from the history" in m.content]
    assert len(dropped) == 4 - KEEP_STATES and "st_0" in dropped[0].content
    assert 'App=(name="calc", pid=1)' in dropped[0].content
    conv.add_user("next task")
    assert not any("- button" in m.content for m in conv.messages if m.role == "tool")
    assert conv.compacted == 4


@pytest.fixture
def scope(tmp_path: Path) -> TurnScope:
    return TurnScope("t1", tmp_path, desktop=None)  # type: ignore[arg-type]  # read needs none


async def test_read_pages_and_says_where_the_file_continues(scope: TurnScope) -> None:
    path = scope.cwd / "big.txt"
    path.write_text("".join(f"line {i}\n" for i in range(1, MAX_LINES + 51)))
    first = await ReadTool().run({"path": "big.txt"}, scope)
    assert "     1\tline 1" in first.text
    assert f"read with offset={MAX_LINES + 1}" in first.text and "50 more lines" in first.text
    rest = await ReadTool().run({"path": str(path), "offset": MAX_LINES + 1}, scope)
    assert f"line {MAX_LINES + 50}" in rest.text and "continues" not in rest.text


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("blob.bin", b"\x00\x01\x02abc", "binary"),
        ("shot.png", b"\x89PNG\r\n", "image_file"),
        ("missing.txt", None, "not_found"),
    ],
)
async def test_read_refuses_clearly(
    scope: TurnScope, name: str, content: bytes | None, reason: str
) -> None:
    if content is not None:
        (scope.cwd / name).write_bytes(content)
    with pytest.raises(DeskpilotError) as err:
        await ReadTool().run({"path": name}, scope)
    assert err.value.details["reason"] == reason
    if reason == "image_file":
        assert "vision_read" in err.value.message


async def test_read_refuses_key_places(scope: TurnScope, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    ssh = tmp_path / ".ssh"
    ssh.mkdir()
    (ssh / "id_ed25519").write_text("PRIVATE")
    with pytest.raises(DeskpilotError) as err:
        await ReadTool().run({"path": "~/.ssh/id_ed25519"}, scope)
    assert err.value.details["reason"] == "secret_place" and "PRIVATE" not in err.value.message


def test_a_48000_unit_tree_reaches_the_model_whole() -> None:
    from deskpilot.agent.decision_model import load_decision_config
    from deskpilot.agent.factory import AGENT_MAX_TOOLS
    from deskpilot.provider import ChatMessage
    from deskpilot.provider.protocol import serialise

    env = {
        "DESKPILOT_PROVIDER_BASE_URL": "http://127.0.0.1:9/v1",
        "DESKPILOT_PROVIDER_MODEL": "m",
        "DESKPILOT_PROVIDER_API_KEY": "sk-test-0123456789",
    }
    for profile in ("reliability", "balanced", "low-latency"):
        config = load_decision_config(
            {**env, "DESKPILOT_PROVIDER_PROFILE": profile}, max_tools=AGENT_MAX_TOOLS
        )
        assert config.limits.max_tools == AGENT_MAX_TOOLS
        tree = 'App=(name="x", pid=1)\nstate_id=st_1\n\n' + '- button "é" [1]\n' * 2900
        assert len(tree) >= 48_000
        call = ToolCall("get_app_state", {"app": "x"})
        chat = serialise(
            [ChatMessage.user("go"), ChatMessage.tool_result(call, tree)],
            "protocol",
            max_result_chars=config.limits.max_tool_result_chars,
            max_history_chars=config.limits.max_tool_history_chars,
        )
        body = chat[-1]["content"]
        assert "[truncated" not in body and body.count("- button") == 2900, profile


async def test_read_refuses_deskpilot_own_keys_wherever_the_data_dir_is(
    scope: TurnScope, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "elsewhere-data"
    data.mkdir()
    (data / "provider.key").write_text("sk-live-should-never-be-read")
    (data / "snapshot-vault.key").write_bytes(b"vault-key-bytes")
    monkeypatch.setenv("DESKPILOT_DATA_DIR", str(data))
    for name in ("provider.key", "snapshot-vault.key"):
        with pytest.raises(DeskpilotError) as err:
            await ReadTool().run({"path": str(data / name)}, scope)
        assert err.value.details["reason"] == "secret_place"
        assert "sk-live" not in err.value.message
    link = scope.cwd / "innocent.txt"
    link.symlink_to(data / "provider.key")
    with pytest.raises(DeskpilotError) as err:
        await ReadTool().run({"path": "innocent.txt"}, scope)
    assert err.value.details["reason"] == "secret_place"
