"""The broker against a real SQLite file: freshness, ledger, idempotency, denials in the
timeline, control semantics and the confirmation path end to end through the CLI."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from deskpilot.kernel import Kernel
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import (
    CancelReason,
    DataClass,
    EventType,
    RiskLevel,
    SessionState,
    TaskContract,
)
from deskpilot.protocol.wire import (
    ClickAction,
    PressKeyAction,
    ScrollAction,
    TargetSpec,
    TypeTextAction,
)
from deskpilot.store.db import Database
from deskpilot.store.ledger import ActionRepository
from deskpilot.store.settings import Settings

from . import trees
from .backends import RecordedBackend, screen


def events(kernel: Kernel, sid: str) -> list[EventType]:
    return [e.type for e in kernel.sessions.events(sid)]


async def test_action_is_checked_rated_recorded_and_told(
    kernel: Kernel, backend: RecordedBackend, db: Database
) -> None:
    kernel.client_session_began("agent-a")
    sid = await kernel.open_session("agent-a")
    obs = (await kernel.observe(sid)).observation
    out = await kernel.execute(
        sid, obs.frame_id, obs.tree_version, TypeTextAction(text="hello"), action_id="a1"
    )
    assert out.result.dispatched and out.risk == RiskLevel.L1 and out.reason == "within_task_scope"
    row = ActionRepository(db).get("a1")
    assert row is not None and row.status == "executed" and row.risk_level == RiskLevel.L1
    assert row.decision == "allow" and row.effect_class == "reversible_local"
    assert row.data_classes == ["public"]
    # the ledger never holds typed text
    raw = db.query_one("SELECT * FROM actions WHERE id = 'a1'")
    assert raw is not None and "hello" not in " ".join(str(v) for v in tuple(raw))
    assert events(kernel, sid) == [
        EventType.SESSION_STARTED,
        EventType.OBSERVATION_CREATED,
        EventType.ACTION_REQUESTED,
        EventType.ACTION_EXECUTED,
    ]
    assert backend.executed == [(sid, "type_text")]
    assert kernel.session_state(sid) == SessionState.OBSERVING
    assert kernel.session(sid).steps == 1  # type: ignore[union-attr]


async def test_a_carried_post_action_observation_is_the_next_current_frame(
    kernel: Kernel, backend: RecordedBackend
) -> None:
    sid = await kernel.open_session("agent-a")
    obs = (await kernel.observe(sid)).observation
    out = await kernel.execute(
        sid, obs.frame_id, obs.tree_version, ScrollAction(direction="up"), observe_after=True
    )
    assert out.post is not None and out.post.png is not None
    post = out.post.observation
    assert post.frame_id != obs.frame_id
    # recorded like an observe (identity only), and good for the next action without one
    assert events(kernel, sid)[-1] == EventType.OBSERVATION_CREATED
    again = await kernel.execute(
        sid, post.frame_id, post.tree_version, ScrollAction(direction="down")
    )
    assert again.post is None  # not asked for: the frame is consumed
    with pytest.raises(DeskpilotError) as e:
        await kernel.execute(sid, post.frame_id, post.tree_version, ScrollAction(direction="up"))
    assert e.value.code == ErrorCode.STALE_FRAME
    assert backend.executed == [(sid, "scroll"), (sid, "scroll")]


async def test_stale_frame_and_stale_tree(kernel: Kernel, backend: RecordedBackend) -> None:
    sid = await kernel.open_session("agent-a")
    first = (await kernel.observe(sid)).observation
    second = (await kernel.observe(sid)).observation
    with pytest.raises(DeskpilotError) as e:
        await kernel.execute(sid, first.frame_id, first.tree_version, ScrollAction(direction="up"))
    assert e.value.code == ErrorCode.STALE_FRAME
    with pytest.raises(DeskpilotError) as e:
        await kernel.execute(sid, second.frame_id, "tv-old", ScrollAction(direction="up"))
    assert e.value.code == ErrorCode.STALE_TREE
    # no observation at all (consumed by an action) is stale_frame too
    await kernel.execute(sid, second.frame_id, second.tree_version, ScrollAction(direction="up"))
    with pytest.raises(DeskpilotError) as e:
        await kernel.execute(
            sid, second.frame_id, second.tree_version, ScrollAction(direction="down")
        )
    assert e.value.code == ErrorCode.STALE_FRAME
    assert backend.executed == [(sid, "scroll")]


async def test_background_window_is_fine_but_bound_window_must_match(
    kernel: Kernel, backend: RecordedBackend
) -> None:
    # the session is bound to the editor; the person's foreground app does not matter
    sid = await kernel.open_session("agent-a", target=TargetSpec(window_id="0x1a00003"))
    obs = (await kernel.observe(sid)).observation
    await kernel.execute(sid, obs.frame_id, obs.tree_version, ScrollAction(direction="up"))
    backend.screens[sid] = screen(trees.EDITOR, window_id="0x2200001", app="gedit")
    obs = (await kernel.observe(sid)).observation
    with pytest.raises(DeskpilotError) as e:
        await kernel.execute(sid, obs.frame_id, obs.tree_version, ScrollAction(direction="up"))
    assert e.value.code == ErrorCode.FOCUS_MISMATCH
    assert events(kernel, sid)[-1] == EventType.ACTION_BLOCKED


async def test_a_binding_to_a_window_that_closed_lapses(
    kernel: Kernel, backend: RecordedBackend
) -> None:
    """Bound to a dialog that has since closed: acting on the app's remaining window is not a
    focus mismatch for ever; the binding is dropped (and recorded) instead."""
    sid = await kernel.open_session("agent-a", target=TargetSpec(window_id="0x5500001"))
    obs = (await kernel.observe(sid)).observation  # the editor, not the (gone) dialog
    out = await kernel.execute(sid, obs.frame_id, obs.tree_version, ScrollAction(direction="up"))
    assert out.result.dispatched
    row = kernel.session(sid)
    assert row is not None and row.target is not None and row.target.window_id is None
    timeline = kernel.sessions.events(sid)
    dropped = [e for e in timeline if e.type == EventType.TARGET_BOUND]
    assert dropped and dropped[-1].payload["reason"] == "bound_window_closed"


async def test_same_action_id_with_other_params_or_risk_is_approval_mismatch(
    kernel: Kernel, backend: RecordedBackend
) -> None:
    sid = await kernel.open_session("agent-a")
    obs = (await kernel.observe(sid)).observation
    action = TypeTextAction(text="one")
    first = await kernel.execute(sid, obs.frame_id, obs.tree_version, action, action_id="x")
    # same id, same params: answered from the ledger, not run again
    again = await kernel.execute(sid, "whatever", "whatever", action, action_id="x")
    assert again.replayed and again.risk == first.risk and len(backend.executed) == 1
    obs = (await kernel.observe(sid)).observation
    with pytest.raises(DeskpilotError) as e:
        await kernel.execute(
            sid, obs.frame_id, obs.tree_version, TypeTextAction(text="two"), action_id="x"
        )
    assert e.value.code == ErrorCode.APPROVAL_MISMATCH and e.value.details["field"] == "params"
    # a blocked action re-sent with the same id and params, on a screen where it rates
    # differently: approval_mismatch on the risk
    sid2 = await kernel.open_session("agent-a", TaskContract(forbidden_actions=["click"]))
    backend.screens[sid2] = screen(trees.DELETE_DIALOG, app="nautilus")
    obs2 = (await kernel.observe(sid2)).observation
    click = ClickAction(element_id=5)
    with pytest.raises(DeskpilotError) as e:
        await kernel.execute(sid2, obs2.frame_id, obs2.tree_version, click, action_id="y")
    assert e.value.code == ErrorCode.ACTION_BLOCKED and e.value.details["risk"] == "L3"
    # same screen again: the same refusal, answered from the ledger
    obs2 = (await kernel.observe(sid2)).observation
    with pytest.raises(DeskpilotError) as e:
        await kernel.execute(sid2, obs2.frame_id, obs2.tree_version, click, action_id="y")
    assert e.value.code == ErrorCode.ACTION_BLOCKED
    backend.screens[sid2] = screen(trees.EDITOR)
    obs2 = (await kernel.observe(sid2)).observation
    with pytest.raises(DeskpilotError) as e:
        await kernel.execute(sid2, obs2.frame_id, obs2.tree_version, click, action_id="y")
    assert e.value.code == ErrorCode.APPROVAL_MISMATCH and e.value.details["field"] == "risk"


async def test_contract_denials_are_in_the_timeline_with_reason_codes(
    kernel: Kernel, backend: RecordedBackend, db: Database
) -> None:
    only_calc = await kernel.open_session(
        "agent-a", TaskContract(allowed_apps=["gnome-calculator"])
    )
    obs = (await kernel.observe(only_calc)).observation
    with pytest.raises(DeskpilotError) as e:
        await kernel.execute(only_calc, obs.frame_id, obs.tree_version, TypeTextAction(text="1"))
    assert e.value.code == ErrorCode.ACTION_BLOCKED and e.value.details["reason"] == (
        "app_not_allowed"
    )
    blocked = kernel.sessions.events(only_calc)[-1]
    assert blocked.type == EventType.ACTION_BLOCKED and blocked.payload["reason"] == (
        "app_not_allowed"
    )
    no_keys = await kernel.open_session("agent-a", TaskContract(forbidden_actions=["press_key"]))
    obs = (await kernel.observe(no_keys)).observation
    with pytest.raises(DeskpilotError) as e:
        await kernel.execute(no_keys, obs.frame_id, obs.tree_version, PressKeyAction(keys=["a"]))
    assert e.value.details["reason"] == "forbidden_action"
    blocked = kernel.sessions.events(no_keys)[-1]
    assert blocked.type == EventType.ACTION_BLOCKED
    assert blocked.payload["reason"] == "forbidden_action" and blocked.payload["entry"] == (
        "press_key"
    )
    assert backend.executed == []
    rows = db.query("SELECT status, decision, reason FROM actions ORDER BY created_at")
    assert [tuple(r) for r in rows] == [
        ("blocked", "deny", "app_not_allowed"),
        ("blocked", "deny", "forbidden_action"),
    ]


async def test_pause_resume_stop_and_takeover_semantics(
    kernel: Kernel, backend: RecordedBackend
) -> None:
    resumed: list[str] = []

    async def relaunch(row: object) -> None:
        resumed.append(getattr(row, "id", ""))

    kernel.broker.hooks.on_resume.append(relaunch)
    sid = await kernel.open_session("agent-a")
    obs = (await kernel.observe(sid)).observation
    assert await kernel.pause(sid) == SessionState.PAUSED
    assert kernel.broker.frames.get(sid) is None  # the current frame was dropped
    with pytest.raises(DeskpilotError) as e:
        await kernel.execute(sid, obs.frame_id, obs.tree_version, ScrollAction(direction="up"))
    assert e.value.code == ErrorCode.SESSION_NOT_EXECUTABLE
    # bind_target only while paused; it clears observations and is recorded
    # (to a window that exists: binding one that does not is refused, nothing changed)
    with pytest.raises(DeskpilotError) as e:
        await kernel.bind_target(sid, TargetSpec(window_id="0x999999"))
    assert e.value.code == ErrorCode.TARGET_NOT_FOUND and "0x999999" in e.value.message
    assert kernel.session(sid).target is None  # type: ignore[union-attr]
    assert not any(ev.type == EventType.TARGET_BOUND for ev in kernel.sessions.events(sid))
    wid = (await backend.list_windows())[0].window_id
    await kernel.bind_target(sid, TargetSpec(window_id=wid))
    assert kernel.session(sid).target == TargetSpec(window_id=wid)  # type: ignore[union-attr]
    assert await kernel.resume(sid) == SessionState.OBSERVING
    assert resumed == [sid]  # the operator restart hook ran
    with pytest.raises(DeskpilotError) as e:
        await kernel.resume(sid)  # only from paused
    assert e.value.code == ErrorCode.INVALID_STATE_TRANSITION
    with pytest.raises(DeskpilotError) as e:
        await kernel.bind_target(sid, TargetSpec(window_id="0x78"))
    assert e.value.code == ErrorCode.INVALID_STATE_TRANSITION
    assert await kernel.pause(sid, takeover=True, by="ada") == SessionState.PAUSED
    assert kernel.session(sid).taken_over_by == "ada"  # type: ignore[union-attr]
    assert await kernel.stop(sid) == SessionState.CANCELED
    with pytest.raises(DeskpilotError) as e:
        await kernel.resume(sid)
    assert e.value.code == ErrorCode.INVALID_STATE_TRANSITION
    timeline = kernel.sessions.events(sid)
    kinds = [e.type for e in timeline]
    assert kinds == [
        EventType.SESSION_STARTED,
        EventType.OBSERVATION_CREATED,
        EventType.SESSION_PAUSED,
        EventType.ACTION_REFUSED,  # the action refused while paused leaves its trace
        EventType.TARGET_BOUND,
        EventType.SESSION_RESUMED,
        EventType.SESSION_PAUSED,
        EventType.SESSION_CANCELED,
    ]
    assert timeline[3].payload == {
        "kind": "scroll",
        "code": "session_not_executable",
        "reason": "paused",
        "count": 1,
        "by": "agent",
    }
    assert timeline[5].payload["by"] == "agent"  # the agent's own resume says so
    assert timeline[6].payload["takeover"] is True and timeline[6].payload["by"] == "ada"
    assert timeline[-1].payload["reason"] == CancelReason.USER_STOP.value
    assert sid in backend.cancelled


async def test_failed_resume_hook_pauses_again(kernel: Kernel) -> None:
    async def broken(row: object) -> None:
        raise RuntimeError("no decision model")

    kernel.broker.hooks.on_resume.append(broken)
    sid = await kernel.open_session("agent-a")
    await kernel.pause(sid)
    with pytest.raises(RuntimeError):
        await kernel.resume(sid)
    assert kernel.session_state(sid) == SessionState.PAUSED
    assert kernel.coordinator.holder() is None


async def test_stop_aborts_an_action_in_flight(kernel: Kernel, backend: RecordedBackend) -> None:
    backend.delay = 5.0
    sid = await kernel.open_session("agent-a")
    obs = (await kernel.observe(sid)).observation
    running = asyncio.ensure_future(
        kernel.execute(sid, obs.frame_id, obs.tree_version, TypeTextAction(text="long text"))
    )
    await asyncio.sleep(0.05)
    t0 = asyncio.get_running_loop().time()
    await kernel.stop(sid)
    with pytest.raises(DeskpilotError) as e:
        await running
    assert e.value.code == ErrorCode.SESSION_CANCELED
    assert asyncio.get_running_loop().time() - t0 < 1.0
    assert backend.aborted == [sid] and backend.executed == []
    assert kernel.sessions.events(sid)[-1].type in (
        EventType.ACTION_FAILED,
        EventType.SESSION_CANCELED,
    )
    from deskpilot.kernel.rollout import Metric

    value, n = kernel.rollout.value(Metric.TAKEOVER_STOP_LATENCY)
    assert n >= 1 and value < 1000


async def test_confirmation_round_trip_through_the_cli(
    kernel: Kernel, backend: RecordedBackend, db: Database, tmp_path: Path
) -> None:
    Settings.update(db, require_confirmation_above="L2", confirmation_timeout_seconds=30)
    backend.default = screen(trees.DELETE_DIALOG, app="nautilus")
    sid = await kernel.open_session("agent-a")
    obs = (await kernel.observe(sid)).observation
    env = {**os.environ, "DESKPILOT_DATA_DIR": str(db.path.parent)}
    cli = [sys.executable, "-m", "deskpilot.cli.main"]

    async def person() -> str:
        for _ in range(100):
            out = await asyncio.to_thread(
                subprocess.run, [*cli, "confirm", "list"], env=env, capture_output=True, text=True
            )
            if out.stdout.startswith("cf_"):
                cid = out.stdout.split()[0]
                assert 'button "Delete"' in out.stdout and "L3" in out.stdout
                assert kernel.session_state(sid) == SessionState.WAITING_APPROVAL
                done = await asyncio.to_thread(
                    subprocess.run,
                    [*cli, "confirm", "approve", cid],
                    env=env,
                    capture_output=True,
                    text=True,
                )
                assert done.returncode == 0, done.stderr
                return cid
            await asyncio.sleep(0.1)
        raise AssertionError("no confirmation appeared")

    result, cid = await asyncio.gather(
        kernel.execute(sid, obs.frame_id, obs.tree_version, ClickAction(element_id=5)), person()
    )
    assert result.risk == RiskLevel.L3 and result.approval_ms > 0
    assert backend.executed == [(sid, "click")]
    assert events(kernel, sid)[-4:] == [
        EventType.ACTION_REQUESTED,
        EventType.APPROVAL_REQUESTED,
        EventType.APPROVAL_RESOLVED,
        EventType.ACTION_EXECUTED,
    ]
    resolved = [e for e in kernel.sessions.events(sid) if e.type == EventType.APPROVAL_RESOLVED]
    assert resolved[0].payload == {"confirmationId": cid, "outcome": "approved", "by": "cli"}
    # the approval was one-time: approving it again fails
    again = await asyncio.to_thread(
        subprocess.run, [*cli, "confirm", "approve", cid], env=env, capture_output=True, text=True
    )
    assert again.returncode == 1 and "consumed" in again.stderr


async def test_denied_confirmation_blocks_the_action(
    kernel: Kernel, backend: RecordedBackend, db: Database
) -> None:
    Settings.update(db, require_confirmation_above="L2")
    backend.default = screen(trees.DELETE_DIALOG, app="nautilus")
    sid = await kernel.open_session("agent-a")
    obs = (await kernel.observe(sid)).observation

    async def deny() -> None:
        while not kernel.confirmations.pending():  # noqa: ASYNC110 - another writer's row
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)  # the person takes a moment
        kernel.confirmations.resolve(kernel.confirmations.pending()[0].id, False, "dashboard")

    with pytest.raises(DeskpilotError) as e:
        await asyncio.gather(
            kernel.execute(sid, obs.frame_id, obs.tree_version, ClickAction(element_id=5)),
            deny(),
        )
    assert e.value.code == ErrorCode.APPROVAL_DENIED
    assert e.value.details["reason"] == "confirmation_denied"
    # the real time waited (it was 0.0 after a 10.9 s wait), and a denial says so
    assert e.value.details["approvalMs"] >= 300
    assert "the person denied" in e.value.message
    from deskpilot.runtime.refusals import safe_error

    _, text, _, details = safe_error(e.value)
    assert "The person denied it (approval_denied)" in text and details["approvalMs"] >= 300
    expired = DeskpilotError(
        ErrorCode.APPROVAL_DENIED, "x", details={"reason": "confirmation_expired"}
    )
    assert "asking again later is fine" in safe_error(expired)[1]
    assert backend.executed == []
    assert kernel.sessions.events(sid)[-1].type == EventType.ACTION_BLOCKED
    assert kernel.session_state(sid) == SessionState.OBSERVING


async def test_credential_typing_needs_the_contract_to_allow_it(
    kernel: Kernel, backend: RecordedBackend
) -> None:
    backend.default = screen(trees.PASSWORD_DIALOG, app="zenity")
    sid = await kernel.open_session("agent-a")
    obs = (await kernel.observe(sid)).observation
    with pytest.raises(DeskpilotError) as e:
        await kernel.execute(sid, obs.frame_id, obs.tree_version, TypeTextAction(text="pw"))
    assert e.value.details["reason"] == "data_class_not_allowed"
    assert e.value.details["risk"] == "L4"
    allowed = TaskContract(allowed_data_classes=[DataClass.CREDENTIAL])
    sid2 = await kernel.open_session("agent-a", allowed)
    obs = (await kernel.observe(sid2)).observation
    out = await kernel.execute(sid2, obs.frame_id, obs.tree_version, TypeTextAction(text="pw"))
    assert out.risk == RiskLevel.L4


async def test_budgets_and_disabled_setting(
    kernel: Kernel, backend: RecordedBackend, db: Database
) -> None:
    sid = await kernel.open_session("agent-a", TaskContract(max_steps=1))
    obs = (await kernel.observe(sid)).observation
    await kernel.execute(sid, obs.frame_id, obs.tree_version, ScrollAction(direction="up"))
    obs = (await kernel.observe(sid)).observation
    with pytest.raises(DeskpilotError) as e:
        await kernel.execute(sid, obs.frame_id, obs.tree_version, ScrollAction(direction="up"))
    assert e.value.code == ErrorCode.TASK_STEP_LIMIT_EXCEEDED
    Settings.update(db, enabled=False)
    sid2 = await kernel.open_session("agent-a")
    obs = (await kernel.observe(sid2)).observation  # observing still works
    with pytest.raises(DeskpilotError) as e:
        await kernel.execute(sid2, obs.frame_id, obs.tree_version, ScrollAction(direction="up"))
    assert e.value.code == ErrorCode.COMPUTER_DISABLED
