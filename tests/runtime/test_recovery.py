"""state_changed recovery: which app counts as "the same app" when the process is gone."""

from __future__ import annotations

import subprocess
import sys

import pytest

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.runtime.diagnostics import ActionOutcome
from deskpilot.runtime.recovery import Recovery
from deskpilot.runtime.state_ids import AppKey


def _recovery(pid: int, window: str = "0x400003", name: str | None = "mousepad") -> Recovery:
    return Recovery(
        app=AppKey(pid=pid, window_id=window),
        app_name=name,
        failed_method="click",
        previous_action_outcome=ActionOutcome.UNKNOWN,
    )


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_while_the_process_lives_only_it_or_its_window_is_the_same_app() -> None:
    import os

    rec = _recovery(os.getpid())
    assert rec.same_app(AppKey(pid=os.getpid(), window_id="0x9"))
    assert rec.same_app(AppKey(pid=1234567, window_id="0x400003"), "zenity")  # same window
    assert not rec.same_app(AppKey(pid=1234567, window_id="0x9"), "mousepad")
    with pytest.raises(DeskpilotError) as exc:
        rec.check("get_app_state", AppKey(pid=1234567, window_id="0x9"), "mousepad")
    assert exc.value.code is ErrorCode.STATE_CHANGED


def test_an_app_that_restarted_is_the_same_app_by_name() -> None:
    rec = _recovery(_dead_pid())
    assert rec.same_app(AppKey(pid=4242, window_id="0x9"), "mousepad")
    assert not rec.same_app(AppKey(pid=4242, window_id="0x9"), "zenity")
    rec.check("get_app_state", AppKey(pid=4242, window_id=""))  # before the look: no name yet
    nameless = _recovery(_dead_pid(), name=None)
    assert nameless.same_app(AppKey(pid=4242, window_id="0x9"), "anything")
