"""stateIds: single use, 60 s, bound to the turn; invalidation by app, turn and session."""

from __future__ import annotations

import pytest

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import AppIdentity, Rect, WindowInfo
from deskpilot.runtime.state_ids import STATE_ID_TTL_S, AppKey, StateIdRegistry


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _issue(reg: StateIdRegistry, turn: str = "turn:a", pid: int = 7, session: str = "s1") -> str:
    window = WindowInfo(window_id="0x1", title="T", bounds=Rect(x=0, y=0, width=10, height=10))
    rec = reg.issue(
        turn=turn,
        agent_session=session,
        app=AppKey(pid=pid, window_id="0x1"),
        app_identity=AppIdentity(pid=pid),
        window=window,
        frame_id="f1",
        tree_version="t1",
        tree='- window "T" [1]',
        element_count=1,
        image_size=(10, 10),
        png_digest=None,
    )
    return rec.state_id


def _reason(exc: pytest.ExceptionInfo[DeskpilotError]) -> str:
    assert exc.value.code is ErrorCode.STATE_ID_INVALID
    return str(exc.value.details["reason"])


def test_single_use() -> None:
    reg = StateIdRegistry()
    sid = _issue(reg)
    assert reg.consume(sid, turn="turn:a").frame_id == "f1"
    with pytest.raises(DeskpilotError) as exc:
        reg.consume(sid, turn="turn:a")
    assert _reason(exc) == "already_used"


def test_expires_after_60_seconds() -> None:
    clock = Clock()
    reg = StateIdRegistry(clock=clock)
    assert STATE_ID_TTL_S == 60.0
    fresh, stale = _issue(reg), _issue(reg)
    clock.t += 59.9
    reg.consume(fresh, turn="turn:a")
    clock.t += 0.1
    with pytest.raises(DeskpilotError) as exc:
        reg.consume(stale, turn="turn:a")
    assert _reason(exc) == "expired"


def test_bound_to_turn_and_unknown_ids_refused() -> None:
    reg = StateIdRegistry()
    sid = _issue(reg, turn="turn:a")
    with pytest.raises(DeskpilotError) as exc:
        reg.consume(sid, turn="turn:b")
    assert _reason(exc) == "other_turn"
    with pytest.raises(DeskpilotError) as exc:
        reg.consume("st_nope", turn="turn:a")
    assert _reason(exc) == "unknown"
    # a refusal for the wrong turn does not consume it
    reg.consume(sid, turn="turn:a")


def test_invalidate_by_app_turn_and_session() -> None:
    reg = StateIdRegistry()
    a = _issue(reg, pid=1)
    b = _issue(reg, pid=2)
    c = _issue(reg, pid=2, turn="turn:other", session="s2")
    assert reg.invalidate(turn="turn:a", app=AppKey(pid=2, window_id="0x1")) == 1
    reg.consume(a, turn="turn:a")
    with pytest.raises(DeskpilotError):
        reg.consume(b, turn="turn:a")
    assert reg.invalidate_other_turns("s2", "turn:new") == 1
    with pytest.raises(DeskpilotError):
        reg.consume(c, turn="turn:other")


def test_a_voided_state_says_what_voided_it() -> None:
    reg = StateIdRegistry()
    paused, changed, ended = _issue(reg), _issue(reg, pid=2), _issue(reg, session="s3")
    reg.invalidate(agent_session="s1", app=AppKey(pid=7, window_id="0x1"), reason="paused")
    reg.invalidate(app=AppKey(pid=2, window_id="0x1"), reason="state_changed")
    reg.invalidate_other_turns("s3", "turn:later")
    for sid, reason in (
        (paused, "session_control"),
        (changed, "state_changed"),
        (ended, "other_turn"),
    ):
        with pytest.raises(DeskpilotError) as exc:
            reg.consume(sid, turn="turn:a")
        assert _reason(exc) == reason
        assert "already used" not in exc.value.message  # no action ran on it


def test_check_does_not_spend_the_state() -> None:
    reg = StateIdRegistry()
    sid = _issue(reg)
    assert reg.check(sid, turn="turn:a").frame_id == "f1"
    assert reg.check(sid, turn="turn:a").frame_id == "f1"
    reg.consume(sid, turn="turn:a")
    with pytest.raises(DeskpilotError) as exc:
        reg.check(sid, turn="turn:a")
    assert _reason(exc) == "already_used"
