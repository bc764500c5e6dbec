"""Policy signals from live trees: the real host observing real GTK dialogs on the private
desktop. Nothing risky is executed: the kernel refuses before the host is asked to act."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from deskpilot import desktop as vdesk
from deskpilot.desktop.apps import App, wait_accessible
from deskpilot.hostclient.backend import HostBackend
from deskpilot.hostclient.config import LOCAL_TRUST_ENV, HostConfig
from deskpilot.kernel import Kernel
from deskpilot.kernel.flags import Flags
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import EventType
from deskpilot.protocol.tree import parse_tree
from deskpilot.protocol.wire import ClickAction, TargetSpec, TypeTextAction
from deskpilot.store.db import Database
from deskpilot.store.ledger import ActionRepository

from .real_apps import zenity

pytestmark = pytest.mark.desktop


@pytest.fixture
async def kernel(
    desktop: vdesk.DesktopState, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Kernel]:
    monkeypatch.setenv(LOCAL_TRUST_ENV, "1")
    backend = HostBackend(HostConfig(heartbeat_interval_s=3600.0), heartbeat=False)
    k = Kernel(backend, Database(tmp_path / "real.sqlite3"), flags=Flags({}))
    yield k
    await k.close()
    await backend.close()


@pytest.fixture
def password_dialog(desktop: vdesk.DesktopState) -> Iterator[App]:
    yield from zenity("--password", "--title", "Unlock")


@pytest.fixture
def delete_question(desktop: vdesk.DesktopState) -> Iterator[App]:
    yield from zenity(
        "--question", "--title", "Files", "--text", "Delete all files?", "--ok-label", "Delete"
    )


async def _observe(kernel: Kernel, sid: str, app: App) -> tuple[str, str, str]:
    await asyncio.to_thread(wait_accessible, app.pid)
    obs = (await kernel.observe(sid, TargetSpec(pid=app.pid), include_screenshot=False)).observation
    return obs.frame_id, obs.tree_version, obs.tree


async def test_typing_into_a_real_password_field_rates_l4_and_is_refused(
    kernel: Kernel, password_dialog: App
) -> None:
    sid = await kernel.open_session("agent-a", target=TargetSpec(pid=password_dialog.pid))
    frame, version, tree = await _observe(kernel, sid, password_dialog)
    field = next(e for e in parse_tree(tree).elements.values() if e.key == "passwordfield")
    with pytest.raises(DeskpilotError) as e:
        await kernel.execute(
            sid, frame, version, TypeTextAction(text="s3cret", element_id=field.id), action_id="pw"
        )
    assert e.value.code == ErrorCode.ACTION_BLOCKED
    assert e.value.details["reason"] == "data_class_not_allowed"
    row = ActionRepository(kernel.db).get("pw")
    assert row is not None and int(row.risk_level) == 4 and row.effect_class == "restricted"
    assert row.data_classes == ["credential"]
    assert kernel.sessions.events(sid)[-1].type == EventType.ACTION_BLOCKED


async def test_a_real_destructive_button_in_a_dialog_rates_l3(
    kernel: Kernel, delete_question: App
) -> None:
    from deskpilot.protocol.session import TaskContract

    contract = TaskContract(forbidden_actions=["high_impact"])
    sid = await kernel.open_session("agent-a", contract, target=TargetSpec(pid=delete_question.pid))
    frame, version, tree = await _observe(kernel, sid, delete_question)
    button = next(
        e for e in parse_tree(tree).elements.values() if e.key == "button" and e.name == "Delete"
    )
    with pytest.raises(DeskpilotError) as e:
        await kernel.execute(sid, frame, version, ClickAction(element_id=button.id))
    assert e.value.details["reason"] == "forbidden_action"
    assert e.value.details["risk"] == "L3"
    blocked = kernel.sessions.events(sid)[-1]
    assert "destructive_control_in_dialog" in blocked.payload["signals"]
    assert delete_question.proc.poll() is None  # nothing was clicked
