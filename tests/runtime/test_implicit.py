"""Implicit sessions the kernel ended under their agent: retired on the next call, a fresh one
for the next observation, and a displaced agent told so on its next action in that turn."""

from __future__ import annotations

from typing import cast

import pytest

from deskpilot.kernel.port import KernelPort
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import CancelReason, SessionState, TaskContract
from deskpilot.runtime.implicit_sessions import EndedSession, ImplicitSessions
from deskpilot.runtime.refusals import refused_before_dispatch, safe_error


class Sessions:
    """What ImplicitSessions asks of the kernel: open, stop, and whether a session ended."""

    name = "fake"

    def __init__(self) -> None:
        self.opened: list[str] = []
        self.ended: dict[str, str] = {}

    async def open_session(self, agent_session: str, contract: TaskContract) -> str:
        self.opened.append(f"cs_{len(self.opened) + 1}")
        return self.opened[-1]

    async def stop(self, session_id: str, reason: CancelReason) -> SessionState:
        self.ended.setdefault(session_id, reason.value)
        return SessionState.CANCELED

    def session_ended(self, session_id: str) -> str | None:
        return self.ended.get(session_id)


def _sessions() -> tuple[Sessions, ImplicitSessions, list[EndedSession]]:
    kernel = Sessions()
    seen: list[EndedSession] = []
    return kernel, ImplicitSessions(cast(KernelPort, kernel), on_ended=seen.append), seen


async def _open(sessions: ImplicitSessions, agent: str) -> str:
    async with sessions.using(agent) as sess:
        return sess.session_id


def _displaced_refusal(sessions: ImplicitSessions, agent: str, turn: str) -> DeskpilotError:
    with pytest.raises(DeskpilotError) as exc:
        sessions.check_displaced(agent, turn)
    return exc.value


async def test_a_live_session_is_kept() -> None:
    kernel, sessions, seen = _sessions()
    sid = await _open(sessions, "a")
    assert sessions.survey("a", "session:a") is None and seen == []
    assert await _open(sessions, "a") == sid and kernel.opened == [sid]
    sessions.check_displaced("a", "session:a")  # nothing to tell


async def test_a_displaced_agent_is_told_until_it_observes_again() -> None:
    kernel, sessions, seen = _sessions()
    sid = await _open(sessions, "a")
    kernel.ended[sid] = CancelReason.DESKTOP_CLAIMED.value  # another agent's claim stopped it
    ended = sessions.survey("a", "session:a")
    assert ended == EndedSession("a", sid, "desktop_claimed", "session:a") and seen == [ended]
    assert sessions.get("a") is None and sessions.survey("a", "session:a") is None
    # every action of that turn is refused, before anything is sent, in words from one place
    for _ in range(2):
        exc = _displaced_refusal(sessions, "a", "session:a")
        assert exc.code is ErrorCode.SESSION_CANCELED and refused_before_dispatch(exc)
        _, message, retryable, details = safe_error(exc)
        assert details == {"reason": "desktop_claimed"} and not retryable
        assert "Another agent session" in message and "get_app_state" in message
    # observing again opens a fresh session and ends the notice
    fresh = await _open(sessions, "a")
    assert fresh != sid and kernel.opened == [sid, fresh]
    sessions.check_displaced("a", "session:a")
    assert sessions.displaced("a") is None


async def test_a_new_turn_ends_the_notice() -> None:
    kernel, sessions, _ = _sessions()
    sid = await _open(sessions, "a")
    kernel.ended[sid] = CancelReason.DESKTOP_CLAIMED.value
    sessions.survey("a", "turn:t1")
    _displaced_refusal(sessions, "a", "turn:t1")
    sessions.check_displaced("a", "turn:t2")  # a new turn can act
    sessions.check_displaced("a", "turn:t1")  # and the notice is gone for good


@pytest.mark.parametrize("reason", [CancelReason.KILL_SWITCH, CancelReason.USER_STOP])
async def test_other_ends_retire_the_session_without_a_displacement_notice(
    reason: CancelReason,
) -> None:
    """The kill switch's halt and a stopped turn refuse actions by their own rules; the
    session is still retired, so reads get a fresh one."""
    kernel, sessions, seen = _sessions()
    sid = await _open(sessions, "a")
    kernel.ended[sid] = reason.value
    assert sessions.survey("a", "session:a") == EndedSession("a", sid, reason.value, "session:a")
    assert sessions.displaced("a") is None
    sessions.check_displaced("a", "session:a")
    assert await _open(sessions, "a") != sid and [e.reason for e in seen] == [reason.value]


async def test_the_runtimes_own_release_is_not_an_end_from_below() -> None:
    kernel, sessions, seen = _sessions()
    sid = await _open(sessions, "a")
    await sessions.release("a", CancelReason.IDLE_RELEASE)
    assert kernel.ended == {sid: "idle_release"}
    assert sessions.survey("a", "session:a") is None and seen == []


def test_refused_before_dispatch() -> None:
    """session_canceled proves nothing by its code (an action cut off in flight ends with it);
    the kernel's refusal by the session's state carries a marker that does."""
    in_flight = DeskpilotError(ErrorCode.SESSION_CANCELED, "aborted while running")
    assert not refused_before_dispatch(in_flight)
    by_state = DeskpilotError(
        ErrorCode.SESSION_CANCELED,
        "canceled",
        details={"reason": "desktop_claimed", "refusedBy": "session_state"},
    )
    assert refused_before_dispatch(by_state)
    assert safe_error(by_state)[3] == {"reason": "desktop_claimed"}  # the marker is not shown
    assert refused_before_dispatch(DeskpilotError(ErrorCode.STALE_FRAME, "stale"))
    assert not refused_before_dispatch(DeskpilotError(ErrorCode.ACTION_TIMEOUT, "timeout"))
    assert not refused_before_dispatch(ValueError("not ours"))
