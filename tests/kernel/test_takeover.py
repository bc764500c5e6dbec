"""The takeover hold: while the person has the desktop, every agent action of every session is
refused with handoff_required and nothing reaches the desktop; hand back lifts it and says
what changed (kernel/takeover.py, kernel/handback.py)."""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from deskpilot import desktop as vdesk
from deskpilot.desktop.apps import App, launch_accessible
from deskpilot.hostclient.backend import HostBackend
from deskpilot.hostclient.config import LOCAL_TRUST_ENV, HostConfig
from deskpilot.kernel import Kernel
from deskpilot.kernel.flags import Flags
from deskpilot.kernel.governed_launch import LaunchReport
from deskpilot.kernel.handback import (
    MAX_CHANGED,
    MAX_LINE_CHARS,
    FrameSummary,
    HandBackStart,
    build,
    tree_lines,
)
from deskpilot.kernel.policy.launch_rules import LaunchRequest
from deskpilot.kernel.policy.shell_rules import ShellRequest
from deskpilot.kernel.takeover import Takeover
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import EventType, SessionState
from deskpilot.protocol.tree import parse_tree
from deskpilot.protocol.wire import ClickAction, ScrollAction, TargetSpec, TypeTextAction
from deskpilot.store.db import Database
from person_input import person_types

from . import trees
from .backends import RecordedBackend, screen

CALC = LaunchRequest(
    app="org.gnome.Calculator",
    program="/usr/bin/gnome-calculator",
    entry="/usr/share/applications/org.gnome.Calculator.desktop",
    resolved_via_entry=True,
    desktop_id="org.gnome.Calculator",
)


def _ledger_rows(db: Database) -> int:
    row = db.query_one("SELECT COUNT(*) AS n FROM actions")
    assert row is not None
    return int(row["n"])


def _assert_taken_over(exc: DeskpilotError, session_id: str, by: str) -> None:
    assert exc.code == ErrorCode.HANDOFF_REQUIRED, exc
    assert exc.retryable is False
    d = exc.details
    assert d["reason"] == "taken_over" and d["takenOverBy"] == by and d["sessionId"] == session_id
    assert isinstance(d["since"], int) and abs(d["since"] / 1000 - time.time()) < 60
    assert "hand" in exc.message and "Observing still works" in exc.message


async def test_a_takeover_refuses_every_action_of_every_session(
    kernel: Kernel, backend: RecordedBackend, db: Database
) -> None:
    a = await kernel.open_session("agent-a")
    b = await kernel.open_session("agent-b")
    b2 = await kernel.open_session("agent-b")
    obs_a = (await kernel.observe(a)).observation
    obs_b = (await kernel.observe(b)).observation
    assert kernel.takeover_state() == {"held": False, "by": None, "since": None, "sessionId": None}

    assert await kernel.pause(a, takeover=True, by="ada") == SessionState.PAUSED
    state = kernel.takeover_state()
    assert state["held"] is True and state["by"] == "ada" and state["sessionId"] == a
    assert kernel.status()["takeover"] == state
    assert kernel.takeover_state(a)["held"] and not kernel.takeover_state(b)["held"]
    rows_before = _ledger_rows(db)

    # another agent's session: refused before anything is rated, written or dispatched
    with pytest.raises(DeskpilotError) as e:
        await kernel.execute(b, obs_b.frame_id, obs_b.tree_version, ScrollAction(direction="up"))
    _assert_taken_over(e.value, a, "ada")
    # the taken-over session itself says handoff_required too (not session_not_executable)
    with pytest.raises(DeskpilotError) as e:
        await kernel.execute(a, obs_a.frame_id, obs_a.tree_version, ScrollAction(direction="up"))
    _assert_taken_over(e.value, a, "ada")
    # launches and governed shell commands are agent actions too
    spawned: list[tuple[str, ...]] = []

    def spawn(argv: tuple[str, ...]) -> int:
        spawned.append(argv)
        return 1

    async def watch(pid: int) -> LaunchReport:
        return LaunchReport(window_id="0x1")

    with pytest.raises(DeskpilotError) as e:
        await kernel.launch(b2, CALC, spawn, watch)
    _assert_taken_over(e.value, a, "ada")
    ran: list[ShellRequest] = []

    async def run(req: ShellRequest) -> object:
        ran.append(req)
        raise AssertionError("must not run")

    with pytest.raises(DeskpilotError) as e:
        await kernel.run_shell(b2, ShellRequest("echo hi", str(Path.cwd()), 5), run)  # type: ignore[arg-type]
    _assert_taken_over(e.value, a, "ada")
    with pytest.raises(DeskpilotError) as e:
        kernel.check_takeover()
    _assert_taken_over(e.value, a, "ada")
    assert backend.executed == [] and spawned == [] and ran == []
    assert _ledger_rows(db) == rows_before  # refused at admission: no ledger row
    # observing still works, for every session
    await kernel.observe(b)
    await kernel.observe(a)

    # hand back: the hold ends, the hand back waits once, actions run again
    assert await kernel.resume(a, by="ada") == SessionState.OBSERVING
    assert kernel.takeover_state()["held"] is False
    start = kernel.take_handback(a)
    assert start is not None and start.by == "ada" and start.held_for_s >= 0
    assert start.before is not None and start.before.window_id == obs_a.window.window_id
    assert kernel.take_handback(a) is None  # once
    fresh = (await kernel.observe(b)).observation
    await kernel.execute(b, fresh.frame_id, fresh.tree_version, ScrollAction(direction="up"))
    assert backend.executed == [(b, "scroll")]
    held = Takeover(db).repo.history(a)
    assert len(held) == 1 and held[0].ended_by == "ada" and held[0].ended_at is not None
    resumed = [e for e in kernel.sessions.events(a) if e.type == EventType.SESSION_RESUMED]
    assert resumed[-1].payload["handBack"] is True and resumed[-1].payload["by"] == "ada"


async def test_taking_over_a_paused_session_engages_the_hold(
    kernel: Kernel, backend: RecordedBackend
) -> None:
    a = await kernel.open_session("agent-a")
    b = await kernel.open_session("agent-a")
    seen = (await kernel.observe(a)).observation
    await kernel.pause(a)
    assert kernel.takeover_state()["held"] is False  # a plain pause holds nothing
    await kernel.pause(a, takeover=True, by="ada")
    assert kernel.takeover_state()["sessionId"] == a
    assert kernel.session(a).taken_over_by == "ada"  # type: ignore[union-attr]
    last = kernel.sessions.events(a)[-1]
    assert last.type == EventType.SESSION_PAUSED and last.payload["takeover"] is True
    assert last.payload["from"] == "paused"
    obs_b = (await kernel.observe(b)).observation
    with pytest.raises(DeskpilotError) as e:
        await kernel.execute(b, obs_b.frame_id, obs_b.tree_version, ScrollAction(direction="up"))
    assert e.value.code == ErrorCode.HANDOFF_REQUIRED
    # a second pause keeps the takeover: only resume (or stop) hands back
    await kernel.pause(a)
    assert kernel.takeover_state()["held"] is True
    await kernel.resume(a, by="ada")  # the person hands back: theirs to end
    start = kernel.take_handback(a)
    # the frame was dropped at the plain pause; what it showed then is the "before"
    assert start is not None and start.before is not None
    assert start.before.tree_version == seen.tree_version


async def test_stop_ends_the_hold_and_an_ended_session_never_holds(
    kernel: Kernel, db: Database
) -> None:
    a = await kernel.open_session("agent-a")
    await kernel.pause(a, takeover=True, by="person")
    assert kernel.takeover_state()["by"] == "person"
    await kernel.stop(a)
    assert kernel.takeover_state()["held"] is False
    assert Takeover(db).repo.history(a)[0].ended_by == "stopped"
    assert kernel.take_handback(a) is None  # nothing is handed back to an ended session

    # a session that ended another way (written by another process): the hold goes with it
    b = await kernel.open_session("agent-a")
    await kernel.pause(b, takeover=True)
    kernel.sessions.transition(b, SessionState.FAILED, payload={"reason": "elsewhere"})
    assert Takeover(db).active() is None
    assert Takeover(db).repo.history(b)[0].ended_by == "session_ended"


async def test_a_hold_whose_owner_process_died_does_not_block(kernel: Kernel, db: Database) -> None:
    a = await kernel.open_session("agent-a")
    b = await kernel.open_session("agent-b")
    await kernel.pause(a, takeover=True)
    # as if a process that has ended had created it: a child that exited
    dead = await asyncio.create_subprocess_exec("true")
    await dead.wait()
    db.execute("UPDATE sessions SET owner_pid = ? WHERE id = ?", (dead.pid, a))
    obs = (await kernel.observe(b)).observation
    await kernel.execute(b, obs.frame_id, obs.tree_version, ScrollAction(direction="up"))
    assert Takeover(db).repo.history(a)[0].ended_by == "owner_gone"


async def test_an_action_waiting_for_the_lane_is_refused_under_it(
    kernel: Kernel, backend: RecordedBackend
) -> None:
    """An action queued behind another one when the person takes over does not run after it."""
    a = await kernel.open_session("agent-a")
    first = await kernel.open_session("agent-b")
    second = await kernel.open_session("agent-b")
    await kernel.observe(a)
    o1 = (await kernel.observe(first)).observation
    o2 = (await kernel.observe(second)).observation
    backend.delay = 0.4
    running = asyncio.ensure_future(
        kernel.execute(first, o1.frame_id, o1.tree_version, TypeTextAction(text="x"))
    )
    await asyncio.sleep(0.05)
    queued = asyncio.ensure_future(
        kernel.execute(second, o2.frame_id, o2.tree_version, ScrollAction(direction="down"))
    )
    await asyncio.sleep(0.05)
    await kernel.pause(a, takeover=True)
    await running  # already at the desktop before the takeover: it finishes
    with pytest.raises(DeskpilotError) as e:
        await queued
    assert e.value.code == ErrorCode.HANDOFF_REQUIRED
    assert backend.executed == [(first, "type_text")]
    assert kernel.session_state(second) == SessionState.OBSERVING


# ---------------------------------------------------------------------- the note


def _summary(tree: str, *, title: str = "Untitled", window: str = "0x1a00003") -> FrameSummary:
    obs = screen(tree, title=title, window_id=window).model_copy(update={"tree_version": "v1"})
    return FrameSummary.of(obs)


def test_tree_lines_drop_ids_indentation_and_secure_values() -> None:
    lines = tree_lines(trees.EDITOR + '\n  - passwordField = "hunter2" [secure] [8]')
    assert lines[0] == 'window "Untitled 1 - Mousepad"'
    assert lines[2] == 'menuItem "File" [actions: click]'
    assert lines[-1] == "passwordField [secure]" and not any("hunter2" in x for x in lines)


def test_the_note_says_what_changed_bounded() -> None:
    before = _summary(trees.EDITOR)
    start = HandBackStart("cs_1", "ada", time.time() - 12.3, time.time(), before)
    same = screen(trees.EDITOR).model_copy(update={"tree_version": "v1"})
    note = build(start, same)
    assert note.changed == () and note.tree_version_changed is False
    assert "Nothing in the window changed" in note.note and "(ada)" in note.note
    assert 12 <= note.held_for_s < 13 and note.to_json()["heldForSeconds"] == pytest.approx(
        12.3, abs=0.2
    )

    typed = trees.EDITOR.replace(
        '  - statusBar "Line 1, Column 1" [7]', '  - statusBar "Line 1, Column 9" [7]'
    )
    typed = typed.replace(
        "- text [focused] [editable] [6]", '- text = "hello world" [focused] [editable] [6]'
    )
    after = screen(typed, title="*Untitled 1").model_copy(update={"tree_version": "v2"})
    note = build(start, after)
    assert note.tree_version_changed is True and note.window_changed is False
    assert "- text [focused] [editable]" in note.changed
    assert '+ text = "hello world" [focused] [editable]' in note.changed
    assert '+ statusBar "Line 1, Column 9"' in note.changed
    assert 'title changed from "Untitled" to "*Untitled 1"' in note.note
    assert "v1 → v2" in note.note

    many = "\n".join(f'- label "row {i} ' + "x" * 200 + f'" [{i}]' for i in range(40))
    note = build(start, screen(many).model_copy(update={"tree_version": "v3"}))
    assert len(note.changed) == MAX_CHANGED and note.more_changes > 0
    assert all(len(line) <= MAX_LINE_CHARS for line in note.changed)
    assert f"… {note.more_changes} more" in note.text()

    moved = screen(trees.EDITOR, window_id="0x2200001", app="gedit").model_copy(
        update={"tree_version": "v1"}
    )
    assert build(start, moved).window_changed is True
    assert "could not be observed" in build(start, None).note
    assert (
        "no earlier observation"
        in build(HandBackStart("cs_1", "ada", time.time(), time.time(), None), same).note
    )


# ---------------------------------------------------------------------- a real desktop


@pytest.fixture
async def real_kernel(
    desktop: vdesk.DesktopState, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Kernel]:
    monkeypatch.setenv(LOCAL_TRUST_ENV, "1")
    backend = HostBackend(HostConfig(heartbeat_interval_s=3600.0), heartbeat=False)
    k = Kernel(backend, Database(tmp_path / "real.sqlite3"), flags=Flags({}))
    yield k
    await k.close()
    await backend.close()


@pytest.fixture
def calculator(desktop: vdesk.DesktopState) -> Iterator[App]:
    if shutil.which("gnome-calculator") is None:
        pytest.skip("gnome-calculator is not installed")
    app = launch_accessible(["gnome-calculator"])
    try:
        yield app
    finally:
        app.stop()


def _display(tree: str) -> str:
    """The calculator's display: its editable text field's value."""
    fields = [
        e
        for e in parse_tree(tree).elements.values()
        if e.key == "textfield" and "readonly" not in e.states
    ]
    assert fields, tree
    return fields[0].value or ""


@pytest.mark.desktop
async def test_hand_back_tells_what_the_person_changed_on_a_real_calculator(
    real_kernel: Kernel, calculator: App, desktop: vdesk.DesktopState
) -> None:
    kernel = real_kernel
    agent = await kernel.open_session("agent-a", target=TargetSpec(pid=calculator.pid))
    other = await kernel.open_session("agent-a", target=TargetSpec(pid=calculator.pid))
    first = (await kernel.observe(agent, include_screenshot=False)).observation
    assert _display(first.tree) in ("", "0")
    await kernel.pause(agent, takeover=True, by="ada")

    # the person types 7 × 6 = on the calculator's keyboard
    bounds = first.window.bounds
    await asyncio.to_thread(
        person_types,
        desktop.display,
        ["7", "KP_Multiply", "6", "Return"],
        pointer=(bounds.x + bounds.width // 2, bounds.y + bounds.height // 2),
    )
    # meanwhile the agent (another session of it) tries to click: refused, nothing sent
    obs = (await kernel.observe(other, include_screenshot=False)).observation
    button = next(e for e in parse_tree(obs.tree).elements.values() if e.key == "button")
    with pytest.raises(DeskpilotError) as e:
        await kernel.execute(
            other, obs.frame_id, obs.tree_version, ClickAction(element_id=button.id)
        )
    assert e.value.code == ErrorCode.HANDOFF_REQUIRED
    assert e.value.details["takenOverBy"] == "ada"

    # hand back: observe again, the note shows what the person did
    await kernel.resume(agent, by="ada")
    start = kernel.take_handback(agent)
    assert start is not None
    now = await kernel.observe(agent, include_screenshot=False)
    assert "42" in _display(now.observation.tree), now.observation.tree
    note = build(start, now)
    assert note.tree_version_changed is True
    assert any(line.startswith("+ ") and "42" in line for line in note.changed), note.changed
    assert "(ada)" in note.note and "changed" in note.note
    assert os.getpid() == kernel.session(agent).owner_pid  # type: ignore[union-attr]


async def test_a_pause_the_person_made_is_theirs_to_resume_and_refusals_are_recorded(
    kernel: Kernel,
) -> None:
    from deskpilot.runtime.refusals import safe_error

    sid = await kernel.open_session("agent-a")
    obs = (await kernel.observe(sid)).observation
    await kernel.pause(sid, by="dashboard")
    # an action while the person's pause holds: who paused it, since when, what to do
    for _ in range(3):
        with pytest.raises(DeskpilotError) as e:
            await kernel.execute(sid, obs.frame_id, obs.tree_version, ScrollAction(direction="up"))
        assert e.value.code == ErrorCode.SESSION_NOT_EXECUTABLE
    assert e.value.details["pausedBy"] == "dashboard" and "wait" in e.value.message
    _, text, _, details = safe_error(e.value)
    assert "paused by the person (dashboard) since" in text and "(paused, taken over" not in text
    assert details["pausedBy"] == "dashboard" and isinstance(details["since"], int)
    # three refusals within 5 s: one event, the repeats counted into the next one
    refused = [ev for ev in kernel.sessions.events(sid) if ev.type == EventType.ACTION_REFUSED]
    assert [ev.payload for ev in refused] == [
        {
            "kind": "scroll",
            "code": "session_not_executable",
            "reason": "paused",
            "count": 1,
            "by": "dashboard",
        }
    ]
    kernel.broker.refusals.window_s = 0.0
    with pytest.raises(DeskpilotError):
        await kernel.execute(sid, obs.frame_id, obs.tree_version, ScrollAction(direction="up"))
    refused = [ev for ev in kernel.sessions.events(sid) if ev.type == EventType.ACTION_REFUSED]
    assert refused[-1].payload["count"] == 3  # this one and the two collapsed before
    # the agent's resume (no by, or by="agent") is refused and changes nothing
    for by in (None, "agent"):
        with pytest.raises(DeskpilotError) as e:
            await kernel.resume(sid, by=by)
        assert e.value.code == ErrorCode.HANDOFF_REQUIRED
        assert e.value.details["reason"] == "paused_by_person"
        assert e.value.details["pausedBy"] == "dashboard"
    assert kernel.session_state(sid) == SessionState.PAUSED
    _, text, _, _ = safe_error(e.value)
    assert "paused by the person (dashboard) at" in text and "Only the person resumes" in text
    # the person resumes it; the event says who
    assert await kernel.resume(sid, by="dashboard") == SessionState.OBSERVING
    resumed = kernel.sessions.events(sid)[-1]
    assert resumed.type == EventType.SESSION_RESUMED and resumed.payload["by"] == "dashboard"
    # the agent's own pause it may resume, recorded as the agent's
    await kernel.pause(sid)
    assert await kernel.resume(sid) == SessionState.OBSERVING
    assert kernel.sessions.events(sid)[-1].payload["by"] == "agent"


async def test_refusals_while_halted_or_disabled_say_when_and_what_next(kernel: Kernel) -> None:
    from deskpilot.runtime.refusals import safe_error

    sid = await kernel.open_session("agent-a")
    obs = (await kernel.observe(sid)).observation
    kernel.halt.engage()
    with pytest.raises(DeskpilotError) as e:
        await kernel.execute(sid, obs.frame_id, obs.tree_version, ScrollAction(direction="up"))
    _, text, _, _ = safe_error(e.value)
    assert "was engaged at" in text and "`deskpilot unhalt`" in text and "Do not retry" in text
    kinds = [ev.payload for ev in kernel.sessions.events(sid) if ev.type == "action_refused"]
    assert kinds[-1]["code"] == "kill_switch_engaged" and kinds[-1]["reason"] == "kill_switch"
    # the runtime's own halt check (before any session is named) is recorded too
    kernel.broker.refusals.window_s = 0.0
    with pytest.raises(DeskpilotError):
        kernel.check_halt("agent-a")
    kinds = [ev.payload for ev in kernel.sessions.events(sid) if ev.type == "action_refused"]
    assert len(kinds) == 2 and kinds[-1]["kind"] is None
    kernel.unhalt()
    err = DeskpilotError(ErrorCode.COMPUTER_DISABLED, "x", details={"reason": "computer_disabled"})
    _, text, _, _ = safe_error(err)
    assert "deskpilot settings set enabled true" in text and "Do not retry" in text
