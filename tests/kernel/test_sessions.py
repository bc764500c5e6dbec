"""Session state machine details and the person's CLI side of the halt."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

from deskpilot.kernel import Kernel
from deskpilot.kernel.session_manager import operator_state
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import OperatorState, SessionState
from deskpilot.store.db import Database


async def test_illegal_transitions_are_refused(kernel: Kernel) -> None:
    sid = await kernel.open_session("agent-a")
    kernel.sessions.transition(sid, SessionState.COMPLETED)
    with pytest.raises(DeskpilotError) as e:
        kernel.sessions.transition(sid, SessionState.OBSERVING)
    assert e.value.code == ErrorCode.INVALID_STATE_TRANSITION
    assert e.value.details == {"from": "completed", "to": "observing"}


async def test_wait_for_wakes_on_a_change(kernel: Kernel) -> None:
    sid = await kernel.open_session("agent-a")
    row, timed_out = await kernel.sessions.wait_for(sid, [SessionState.PAUSED], 0.1)
    assert timed_out and row.state == SessionState.OBSERVING
    waiter = asyncio.ensure_future(
        kernel.sessions.wait_for(sid, [SessionState.PAUSED, SessionState.CANCELED], 5.0)
    )
    await asyncio.sleep(0.01)
    await kernel.pause(sid)
    row, timed_out = await asyncio.wait_for(waiter, 1.0)
    assert not timed_out and row.state == SessionState.PAUSED


def test_operator_state() -> None:
    assert operator_state(SessionState.ACTING, True) == OperatorState.RUNNING
    assert operator_state(SessionState.PAUSED, True) == OperatorState.NOT_RUNNING
    assert operator_state(SessionState.HANDOFF_REQUIRED, False) == OperatorState.HANDOFF_REQUIRED
    assert operator_state(SessionState.COMPLETED, False) == OperatorState.COMPLETED


async def test_unhalt_from_the_cli_lifts_the_halt_for_a_running_kernel(
    kernel: Kernel, db: Database
) -> None:
    await kernel.kill("kill_switch")
    with pytest.raises(DeskpilotError) as e:
        kernel.check_halt("agent-a")
    assert e.value.code == ErrorCode.KILL_SWITCH_ENGAGED
    env = {**os.environ, "DESKPILOT_DATA_DIR": str(db.path.parent)}
    out = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "deskpilot.cli.main", "unhalt"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0 and "halt lifted" in out.stdout, out.stderr
    kernel.check_halt("agent-a")
    assert not kernel.halt_state().halted
