"""One session drives the desktop: lane transfer within an agent, stop across agents, races."""

from __future__ import annotations

import asyncio

import pytest

from deskpilot.kernel import Kernel
from deskpilot.kernel.coordinator import DesktopCoordinator
from deskpilot.kernel.lease import DisplayLease
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import CancelReason, SessionState
from deskpilot.protocol.wire import ScrollAction
from deskpilot.store.db import Database

from .backends import RecordedBackend


async def test_same_agent_claim_transfers_the_lane_without_stopping(kernel: Kernel) -> None:
    task = await kernel.open_session("agent-a", mode="delegated")
    atomic = await kernel.open_session("agent-a")
    await kernel.coordinator.claim(task, "agent-a")
    result = await kernel.coordinator.claim(atomic, "agent-a")
    assert result.transferred_from == task and result.stopped == ()
    assert kernel.session_state(task) == SessionState.OBSERVING
    assert kernel.coordinator.holder().session_id == atomic  # type: ignore[union-attr]


async def test_other_agent_claim_stops_holder_and_siblings(kernel: Kernel) -> None:
    a1 = await kernel.open_session("agent-a", mode="delegated")
    a2 = await kernel.open_session("agent-a")
    b1 = await kernel.open_session("agent-b")
    await kernel.coordinator.claim(a1, "agent-a")
    result = await kernel.coordinator.claim(b1, "agent-b")
    assert set(result.stopped) == {a1, a2}
    for sid in (a1, a2):
        row = kernel.session(sid)
        assert row is not None and row.state == SessionState.CANCELED
        assert row.cancel_reason == CancelReason.DESKTOP_CLAIMED.value
        assert kernel.sessions.events(sid)[-1].payload["reason"] == "desktop_claimed"
    assert kernel.session_state(b1) == SessionState.OBSERVING


async def test_two_agents_racing_for_the_desktop_end_with_one_driver(
    kernel: Kernel, backend: RecordedBackend
) -> None:
    backend.delay = 0.01
    agents = {"agent-a": [], "agent-b": []}  # type: dict[str, list[str]]
    for agent in agents:
        for _ in range(2):
            agents[agent].append(await kernel.open_session(agent))
    outcomes: dict[str, list[str]] = {a: [] for a in agents}
    in_flight = 0
    overlap = False
    original = backend.execute

    async def counted(*args: object, **kw: object) -> object:
        nonlocal in_flight, overlap
        in_flight += 1
        overlap = overlap or in_flight > 1
        try:
            return await original(*args, **kw)  # type: ignore[arg-type]
        finally:
            in_flight -= 1

    backend.execute = counted  # type: ignore[method-assign]

    async def drive(agent: str, sid: str) -> None:
        for _ in range(10):
            try:
                obs = (await kernel.observe(sid)).observation
                await kernel.execute(
                    sid, obs.frame_id, obs.tree_version, ScrollAction(direction="down")
                )
                outcomes[agent].append("ok")
            except DeskpilotError as exc:
                outcomes[agent].append(exc.code.value)
                if exc.code in (ErrorCode.SESSION_CANCELED, ErrorCode.SESSION_NOT_FOUND):
                    return
            await asyncio.sleep(0)

    await asyncio.gather(*(drive(a, s) for a, ss in agents.items() for s in ss))
    survivors = {
        a for a, ss in agents.items() if any(kernel.session_state(s) != "canceled" for s in ss)
    }
    assert len(survivors) == 1, outcomes
    (winner,) = survivors
    loser = "agent-b" if winner == "agent-a" else "agent-a"
    assert all(kernel.session_state(s) == SessionState.CANCELED for s in agents[loser])
    assert all(
        kernel.session(s).cancel_reason == "desktop_claimed"  # type: ignore[union-attr]
        for s in agents[loser]
    )
    assert "session_canceled" in outcomes[loser]
    holder = kernel.coordinator.holder()
    assert holder is not None and holder.agent_session_id == winner
    assert not overlap  # actions never interleaved on the desktop
    with pytest.raises(DeskpilotError) as e:
        await kernel.resume(agents[loser][0])
    assert e.value.code == ErrorCode.INVALID_STATE_TRANSITION


async def test_a_stopped_sessions_refusals_are_marked_as_nothing_dispatched(
    kernel: Kernel, backend: RecordedBackend
) -> None:
    """Another agent's claim stops agent A's sessions: the action it cut off in flight ends
    with an unmarked session_canceled (it may have run), while the one waiting for the lane,
    and any later one, are refused by the session's state, marked so: nothing reached the
    desktop."""
    backend.delay = 1.0
    a1 = await kernel.open_session("agent-a")
    a2 = await kernel.open_session("agent-a")
    b1 = await kernel.open_session("agent-b")
    frames = {s: (await kernel.observe(s)).observation for s in (a1, a2, b1)}

    def scroll(sid: str) -> asyncio.Future[object]:
        obs = frames[sid]
        return asyncio.ensure_future(
            kernel.execute(sid, obs.frame_id, obs.tree_version, ScrollAction(direction="down"))
        )

    in_flight = scroll(a1)
    await asyncio.sleep(0.05)
    waiting = scroll(a2)  # same agent: takes the lane over, waits for a1's action to end
    await asyncio.sleep(0.05)
    claim = scroll(b1)  # another agent: stops a1 and a2
    results = await asyncio.gather(in_flight, waiting, claim, return_exceptions=True)
    cut, refused, ok = results
    assert isinstance(cut, DeskpilotError) and cut.code == ErrorCode.SESSION_CANCELED
    assert "refusedBy" not in cut.details
    assert isinstance(refused, DeskpilotError) and refused.code == ErrorCode.SESSION_CANCELED
    assert refused.details == {"reason": "desktop_claimed", "refusedBy": "session_state"}
    assert not isinstance(ok, BaseException), ok
    assert [s for s, _ in backend.executed] == [b1]
    with pytest.raises(DeskpilotError) as later:
        await kernel.execute(a1, "f-any", "tv-any", ScrollAction(direction="down"))
    assert later.value.details["refusedBy"] == "session_state"
    assert kernel.session_ended(a1) == kernel.session_ended(a2) == "desktop_claimed"
    assert kernel.session_ended(b1) is None


async def test_a_claim_on_another_display_stops_no_one(kernel: Kernel, db: Database) -> None:
    """Two servers on one data dir driving two displays are two desktops: a claim on one
    never stops the other's agents (a trial's second session on a private display stopped
    the first one's with ``desktop_claimed``). On one display the last claim still wins."""
    a = await kernel.open_session("agent-a")
    b = await kernel.open_session("agent-b")
    c = await kernel.open_session("agent-c")
    stopped: list[str] = []

    async def stop(session_id: str, reason: CancelReason) -> None:
        stopped.append(session_id)

    on_91 = DesktopCoordinator(db, stop, lease=DisplayLease(":91"))
    on_92 = DesktopCoordinator(db, stop, lease=DisplayLease(":92"))
    try:
        await on_91.claim(a, "agent-a")
        other = await on_92.claim(b, "agent-b")
        assert other.stopped == () and stopped == []
        assert on_91.holds(a) and on_92.holds(b)
        assert (on_91.lane, on_92.lane) == ("desktop@:91", "desktop@:92")
        same = await on_91.claim(c, "agent-c")
        assert same.stopped == (a,) and stopped == [a]
        assert on_92.holds(b)
    finally:
        on_91.close()
        on_92.close()
