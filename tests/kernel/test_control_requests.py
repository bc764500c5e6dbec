"""Controls from another process (kernel/control_requests.py): a real second process asks, the
owning kernel's inbox carries it out through the same controls (so the hooks run), and the
asker gets the new state or a typed error; a session whose process is gone can only be
stopped, in the database."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from deskpilot import desktop as vdesk
from deskpilot.desktop.apps import App, launch_accessible
from deskpilot.kernel import Kernel
from deskpilot.kernel.control_requests import ControlClient, validate
from deskpilot.kernel.flags import Flags
from deskpilot.kernel.session_manager import SessionManager
from deskpilot.kernel.takeover import Takeover
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import CancelReason, EventType, SessionState
from deskpilot.protocol.wire import ScrollAction
from deskpilot.store.control_requests import ControlRequestRepository
from deskpilot.store.db import Database
from deskpilot.store.session_rows import SessionRow
from person_input import person_types

from .backends import RecordedBackend

ROOT = Path(__file__).resolve().parents[2]

#: the other process: a ControlClient on the same data dir, one control per step
OTHER = r"""
import asyncio, json, random, sys, time
from deskpilot.kernel.control_requests import ControlClient
from deskpilot.protocol.errors import DeskpilotError
from deskpilot.store.db import Database

async def main() -> None:
    db_path, session_id, steps = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    gap = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
    client = ControlClient(Database(db_path))
    out = []
    for verb, args in steps:
        await asyncio.sleep(random.uniform(0, gap))  # a person's pace, not lockstep
        t0 = time.perf_counter()
        try:
            row = await client.send(session_id, verb, args, by="dashboard")
            out.append({"verb": verb, "state": row.state.value})
        except DeskpilotError as exc:
            out.append({"verb": verb, "code": exc.code.value, "message": exc.message})
        out[-1]["ms"] = (time.perf_counter() - t0) * 1000
    print(json.dumps(out))

asyncio.run(main())
"""


async def other_process(
    db: Database,
    session_id: str,
    steps: list[tuple[str, dict[str, Any] | None]],
    gap_s: float = 0.0,
) -> list[dict[str, Any]]:
    """Run the steps from a separate Python process (a random pause of up to ``gap_s``
    before each); what each answered, with its latency."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        OTHER,
        str(db.path),
        session_id,
        json.dumps(steps),
        str(gap_s),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=str(ROOT),
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    result: list[dict[str, Any]] = json.loads(out.decode().strip().splitlines()[-1])
    return result


@pytest.fixture
async def owner(db: Database, backend: RecordedBackend) -> AsyncIterator[Kernel]:
    """This process owns the sessions: a kernel with its inbox running."""
    k = Kernel(backend, db, flags=Flags({}))
    await k.start_control_inbox()
    yield k
    await k.close()


class Hooks:
    def __init__(self, kernel: Kernel) -> None:
        self.calls: list[tuple[str, str, str]] = []
        kernel.add_control_hooks(
            on_pause=lambda row, _: self.calls.append(("pause", row.id, row.state.value)),
            on_stop=lambda row, why: self.calls.append(("stop", row.id, str(why))),
            on_resume=lambda row, _: self.calls.append(("resume", row.id, row.state.value)),
        )


async def test_another_process_pauses_takes_over_resumes_and_stops(
    owner: Kernel, db: Database, backend: RecordedBackend
) -> None:
    hooks = Hooks(owner)
    sid = await owner.open_session("agent-a")
    await owner.observe(sid)
    assert owner.session(sid).owner_pid == os.getpid()  # type: ignore[union-attr]
    answers = await other_process(
        db,
        sid,
        [
            ("pause", None),
            ("bind_target", {"windowId": "0x1a00003"}),  # a window that exists
            ("resume", None),
            ("takeover", None),
            ("resume", None),
        ],
    )
    # the hand back waits here, in the owner, for whoever drives the session next
    start = owner.take_handback(sid)
    assert start is not None and start.by == "dashboard" and start.before is not None
    answers += await other_process(
        db,
        sid,
        [
            ("resume", None),  # not paused any more: the kernel's own refusal, typed
            ("stop", {"note": "enough"}),
            ("stop", None),  # already ended: answers the ended row
        ],
    )
    assert [a.get("state") or a.get("code") for a in answers] == [
        "paused",
        "paused",
        "observing",
        "paused",
        "observing",
        "invalid_state_transition",
        "canceled",
        "canceled",
    ], answers
    assert "only a paused session resumes" in answers[5]["message"]
    # the controls ran here, through the broker: the hooks saw each one
    assert [c[0] for c in hooks.calls] == ["pause", "resume", "pause", "resume", "stop"]
    assert hooks.calls[-1] == ("stop", sid, CancelReason.USER_STOP.value)
    row = owner.session(sid)
    assert row is not None and row.cancel_reason == "user_stop"
    assert row.target is not None and row.target.window_id == "0x1a00003"
    events = owner.sessions.events(sid)
    paused = [e for e in events if e.type == EventType.SESSION_PAUSED]
    assert [e.payload["by"] for e in paused] == ["dashboard", "dashboard"]
    assert paused[1].payload["takeover"] is True
    resumed = [e for e in events if e.type == EventType.SESSION_RESUMED]
    assert resumed[1].payload == {"by": "dashboard", "handBack": True, "from": "paused"}
    canceled = events[-1]
    assert canceled.type == EventType.SESSION_CANCELED and canceled.payload["note"] == "enough"
    # the takeover held the desktop until the hand back
    held = Takeover(db).repo.history(sid)
    assert len(held) == 1 and held[0].held_by == "dashboard" and held[0].ended_by == "dashboard"
    requests = ControlRequestRepository(db).recent(sid, 50)
    assert len(requests) == 7 and all(r.finished for r in requests)  # the last stop: no row
    assert {r.requested_by for r in requests} == {"dashboard"}


async def test_a_takeover_from_another_process_refuses_this_process_at_once(
    owner: Kernel, db: Database, backend: RecordedBackend
) -> None:
    a = await owner.open_session("agent-a")
    b = await owner.open_session("agent-b")
    obs = (await owner.observe(b)).observation
    (answer,) = await other_process(db, a, [("takeover", None)])
    assert answer["state"] == "paused"
    with pytest.raises(DeskpilotError) as e:
        await owner.execute(b, obs.frame_id, obs.tree_version, ScrollAction(direction="up"))
    assert e.value.code == ErrorCode.HANDOFF_REQUIRED
    assert e.value.details["takenOverBy"] == "dashboard" and e.value.details["sessionId"] == a
    assert backend.executed == []
    (answer,) = await other_process(db, a, [("resume", None)])
    assert answer["state"] == "observing" and not owner.takeover_state()["held"]


async def test_control_request_latency(owner: Kernel, db: Database) -> None:
    """Submit → done as the other process sees it, over 2 × 60 requests (docs/kernel.md)."""
    sid = await owner.open_session("agent-a")
    steps: list[tuple[str, dict[str, Any] | None]] = [("pause", None), ("resume", None)] * 30
    for gap in (0.25, 0.0):  # at a person's pace, then back to back (each waits a full poll)
        answers = await other_process(db, sid, steps, gap)
        assert all("state" in a for a in answers), answers
        ms = sorted(a["ms"] for a in answers)
        median = statistics.median(ms)
        p95 = ms[int(len(ms) * 0.95) - 1]
        print(
            f"\ncontrol request latency over {len(ms)} (gaps up to {gap} s): median "
            f"{median:.1f} ms, p95 {p95:.1f} ms, max {ms[-1]:.1f} ms"
        )
        assert median <= 250, ms
    assert owner.inbox.handled == 2 * len(steps)


async def test_the_owner_itself_runs_controls_directly(owner: Kernel, db: Database) -> None:
    sid = await owner.open_session("agent-a")
    client = ControlClient(db)
    row = await client.send(sid, "takeover", by="ada")
    assert row.state == SessionState.PAUSED and owner.takeover_state()["by"] == "ada"
    assert client.owner_alive(row)
    row = await client.send(sid, "resume", by="ada")
    assert row.state == SessionState.OBSERVING
    assert ControlRequestRepository(db).recent(sid) == []  # no request row: run in place


async def test_invalid_controls_are_refused_with_typed_errors(owner: Kernel, db: Database) -> None:
    sid = await owner.open_session("agent-a")
    client = ControlClient(db)
    for verb, args, words in (
        ("explode", None, "unknown control"),
        ("pause", {"now": True}, "takes no argument now"),
        ("bind_target", None, "windowId"),
        ("bind_target", {"windowId": "not-a-window"}, "windowId"),
        ("stop", {"note": 5}, "note is a string"),
    ):
        with pytest.raises(DeskpilotError) as e:
            await client.send(sid, verb, args)
        assert e.value.code == ErrorCode.INVALID_REQUEST and words in e.value.message, verb
    with pytest.raises(DeskpilotError) as e:
        client.submit(sid, "explode")
    assert e.value.code == ErrorCode.INVALID_REQUEST
    with pytest.raises(DeskpilotError) as e:
        await client.send("cs_nope", "pause")
    assert e.value.code == ErrorCode.SESSION_NOT_FOUND
    with pytest.raises(DeskpilotError) as e:
        await client.send(sid, "pause", by="x" * 100)
    assert e.value.code == ErrorCode.INVALID_REQUEST
    # bind_target only while paused: the kernel's own rule, reached through the owner
    with pytest.raises(DeskpilotError) as e:
        await client.send(sid, "bind_target", {"windowId": "0x1a00003"})
    assert e.value.code == ErrorCode.INVALID_STATE_TRANSITION
    assert validate("stop", {"note": "y" * 900})[1]["note"] == "y" * 500
    assert ControlRequestRepository(db).recent(sid) == []  # nothing invalid was written


def _orphan(db: Database, pid: int) -> SessionRow:
    """A session of a process that is not this one (no kernel here owns it)."""
    sessions = SessionManager(db)
    row = sessions.create("agent-x", "atomic")
    sessions.transition(row.id, SessionState.OBSERVING)
    db.execute("UPDATE sessions SET owner_pid = ? WHERE id = ?", (pid, row.id))
    return sessions.require(row.id)


async def test_a_session_whose_process_is_gone_can_only_be_stopped(db: Database) -> None:
    gone = await asyncio.create_subprocess_exec("true")
    await gone.wait()
    row = _orphan(db, gone.pid)
    sessions = SessionManager(db)
    sessions.transition(row.id, SessionState.PAUSED, payload={"by": "person", "takeover": True})
    Takeover(db).engage(row.id, "person")
    client = ControlClient(db)
    assert not client.owner_alive(row)
    for verb in ("pause", "resume", "takeover"):
        with pytest.raises(DeskpilotError) as e:
            await client.send(row.id, verb)
        assert e.value.code == ErrorCode.SESSION_NOT_EXECUTABLE
        assert "the process that drove this session has ended" in e.value.message
    stopped = await client.send(row.id, "stop", {"note": "its server crashed"}, by="dashboard")
    assert stopped.state == SessionState.CANCELED and stopped.cancel_reason == "user_stop"
    last = sessions.events(row.id)[-1]
    assert last.type == EventType.SESSION_CANCELED
    assert last.payload["ownerGone"] is True and last.payload["by"] == "dashboard"
    assert Takeover(db).repo.history(row.id)[0].ended_by == "stopped"
    assert Takeover(db).active() is None
    assert (await client.send(row.id, "stop")).state == SessionState.CANCELED  # idempotent
    with pytest.raises(DeskpilotError) as e:
        await client.send(row.id, "resume")
    assert e.value.code == ErrorCode.INVALID_STATE_TRANSITION


async def test_an_owner_that_does_not_answer_times_out_and_the_request_is_withdrawn(
    db: Database,
) -> None:
    sleeper = await asyncio.create_subprocess_exec("sleep", "30")
    try:
        await asyncio.sleep(0.05)
        row = _orphan(db, sleeper.pid)  # alive, but no inbox answers
        client = ControlClient(db)
        assert client.owner_alive(row)
        t0 = time.monotonic()
        with pytest.raises(DeskpilotError) as e:
            await client.send(row.id, "pause", timeout_s=0.3)
        assert 0.3 <= time.monotonic() - t0 < 2
        assert e.value.code == ErrorCode.ENVIRONMENT_UNAVAILABLE and e.value.retryable
        assert "nothing was done" in e.value.message
        (req,) = ControlRequestRepository(db).recent(row.id)
        assert req.status == "failed"  # withdrawn: it never runs late
        assert SessionManager(db).require(row.id).state == SessionState.OBSERVING
    finally:
        sleeper.kill()
        await sleeper.wait()


async def test_the_session_command(owner: Kernel, db: Database, tmp_path: Path) -> None:
    """``deskpilot session …`` from a terminal: list, take over, hand back, stop."""
    sid = await owner.open_session("agent-a")
    deskpilot = str(ROOT / ".venv" / "bin" / "deskpilot")

    async def run(*args: str) -> tuple[int, str, str]:
        proc = await asyncio.create_subprocess_exec(
            deskpilot,
            "session",
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "DESKPILOT_DATA_DIR": str(tmp_path)},
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        return proc.returncode or 0, out.decode(), err.decode()

    assert db.path == tmp_path / "deskpilot.sqlite3"
    code, out, _ = await run("takeover", sid, "--by", "ada")
    assert code == 0 and out.strip() == f"{sid} paused"
    code, out, _ = await run("list", "--json")
    listed = json.loads(out)
    assert listed["takeover"]["held"] is True and listed["takeover"]["by"] == "ada"
    (mine,) = [r for r in listed["sessions"] if r["id"] == sid]
    assert mine["takenOver"] is True and mine["ownerAlive"] is True and mine["state"] == "paused"
    code, out, _ = await run("list")
    assert "[taken over]" in out and "holds the desktop" in out
    code, out, err = await run("bind", sid, "--window", "nope")
    assert code == 1 and "invalid_request" in err
    code, out, _ = await run("resume", sid)
    assert code == 0 and out.strip() == f"{sid} observing"
    code, out, _ = await run("stop", sid, "--note", "done here")
    assert code == 0 and out.strip() == f"{sid} canceled (user_stop)"
    assert owner.session_state(sid) == SessionState.CANCELED


# ---------------------------------------------------------------------- a delegated task

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "operator"))


@pytest.fixture
def calculator(dp_desktop: Any) -> Iterator[App]:
    if shutil.which("gnome-calculator") is None:
        pytest.skip("gnome-calculator is not installed")
    app = launch_accessible(["gnome-calculator"])
    try:
        yield app
    finally:
        app.stop()


def _json(outcome: Any) -> dict[str, Any]:
    assert not outcome.is_error, outcome.text
    return dict(json.loads(outcome.text.split("\n\ndeskpilot diagnostic:")[0]))


@pytest.fixture
async def tasks(
    dp_desktop: vdesk.DesktopState, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Any, Any]]:
    """A runtime over the real host with its control inbox running, and the scripted
    decision model it is configured with (tests/operator/scripted_model.py)."""
    from scripted_model import ScriptedModel

    from deskpilot.runtime.wiring import build_runtime

    model = ScriptedModel().start()
    monkeypatch.setenv("DESKPILOT_PROVIDER_BASE_URL", model.base_url)
    monkeypatch.setenv("DESKPILOT_PROVIDER_MODEL", model.model_id)
    monkeypatch.setenv("DESKPILOT_PROVIDER_API_KEY", "sk-test-operator-0123456789")
    runtime = build_runtime()
    try:
        await runtime.ctx.kernel.start_control_inbox()
        yield runtime, model
    finally:
        await runtime.close()
        model.close()
    assert not model.errors, model.errors


async def _start(runtime: Any, calculator: App) -> str:
    started = _json(
        await runtime.call(
            "start_task",
            {
                "goal": "compute 7*6",
                "app": calculator.pid,
                "success_criteria": [{"kind": "visual", "assertion": "text_present", "text": "42"}],
            },
            agent_session="owner",
        )
    )
    return str(started["taskId"])


async def _finished(runtime: Any, task_id: str) -> dict[str, Any]:
    return _json(
        await runtime.call(
            "wait_for_completion",
            {"task_id": task_id, "timeout_ms": 90_000},
            agent_session="owner",
        )
    )


@pytest.mark.desktop
async def test_a_delegated_task_taken_over_and_handed_back_from_another_process(
    calculator: App, dp_desktop: vdesk.DesktopState, tasks: tuple[Any, Any]
) -> None:
    from scripted_model import Calculator

    runtime, model = tasks
    model.set_policy(Calculator("7*6"))
    model.delay = 0.5  # slow enough to take over before the task is done
    kernel = runtime.ctx.kernel
    task_id = await _start(runtime, calculator)
    task = runtime.ctx.tasks.get(task_id)
    assert task is not None
    while model.calls < 1:  # noqa: ASYNC110 - the operator's first decision is on its way
        await asyncio.sleep(0.02)
    db = Database()  # the runtime's own data dir (DESKPILOT_DATA_DIR)
    (answer,) = await other_process(db, task_id, [("takeover", None)])
    assert answer["state"] == "paused", answer
    assert kernel.takeover_state()["sessionId"] == task_id
    await task.settled.wait()
    assert not task.running  # the pause hook let the operator go
    asked_before = model.calls
    # the person presses Escape (clears the display) and types 1 2
    await asyncio.to_thread(person_types, dp_desktop.display, ["Escape", "1", "2"])
    await asyncio.sleep(0.3)
    (answer,) = await other_process(db, task_id, [("resume", None)])
    assert answer["state"] == "observing", answer
    done = await _finished(runtime, task_id)
    assert done["state"] == "completed", done
    assert done["runs"] == 2 and done["endReason"] == "verification_passed", done
    # the operator's first request after the hand back carried the note
    after = [json.dumps(body) for body in model.requests[asked_before:]]
    assert after and "had the desktop for" in after[0] and "handed it back" in after[0]
    note = after[0][after[0].index("The person (dashboard) had the desktop") :]
    print("\nthe operator was told:", note[:600])
    assert "12" in note.split("Act only on the current state.")[1][:400]


@pytest.mark.desktop
async def test_a_task_handed_to_the_person_resumes_from_another_process(
    calculator: App, tasks: tuple[Any, Any]
) -> None:
    """handoff_required, then the dashboard's Resume: nobody waits for that resume in the
    owner (a paused task has a watcher; a handed-off one has none), the runtime's resume
    hook restarts the operator, and the task finishes."""
    from scripted_model import Calculator, Handoff, Scripted

    runtime, model = tasks
    model.set_policy(Scripted([Handoff("the person must confirm")], then=Calculator("7*6")))
    task_id = await _start(runtime, calculator)
    handed = await _finished(runtime, task_id)
    assert handed["state"] == "handoff_required", handed
    (answer,) = await other_process(Database(), task_id, [("resume", None)])
    assert answer["state"] == "observing", answer
    done = await _finished(runtime, task_id)
    assert done["state"] == "completed" and done["runs"] == 2, done
