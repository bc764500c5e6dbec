"""Several deskpilot processes on one display share one kill switch.

Only one X client can grab the chord. The process that grabbed it broadcasts every press on
the root window; a process refused the grab watches it (status says so, naming the pid), is
stopped by the other's presses, and takes the chord over the moment that process exits. The
presses go through XTEST like a keyboard's would (as in test_killswitch.py), the other
deskpilot process is a real child process (test_lease.Worker).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from Xlib import XK, X, display

from deskpilot import desktop as vdesk
from deskpilot.kernel import Kernel
from deskpilot.kernel.flags import Flags
from deskpilot.protocol.session import SessionState
from deskpilot.store.db import Database

from . import trees
from .backends import RecordedBackend, screen
from .test_killswitch import press, until
from .test_lease import Worker

pytestmark = pytest.mark.desktop

CHORD = ("Control_L", "Shift_L", "Escape")


@pytest.fixture
def keyboard(desktop: vdesk.DesktopState) -> Iterator[display.Display]:
    d = display.Display(desktop.display)
    yield d
    d.close()


@pytest.fixture
def workers(desktop: vdesk.DesktopState, tmp_path: Path) -> Iterator[Any]:
    made: list[Worker] = []

    def make(name: str) -> Worker:
        w = Worker(tmp_path / f"{name}.sqlite3", f"agent-{name}", arm=True)
        made.append(w)
        return w

    yield make
    for w in made:
        w.close()


@pytest.fixture
async def local(desktop: vdesk.DesktopState, tmp_path: Path) -> AsyncIterator[Kernel]:
    kernel = Kernel(
        RecordedBackend(default=screen(trees.EDITOR)),
        Database(tmp_path / "local.sqlite3"),
        flags=Flags({}),
    )
    kernel.client_session_began("agent-b")
    yield kernel
    await kernel.close()


async def test_the_armed_process_stops_the_one_that_could_not_arm(
    workers: Any, local: Kernel, keyboard: display.Display
) -> None:
    a = workers("a")
    assert a.ready["killSwitch"]["state"] == "armed"
    state = await local.start_kill_switch()
    assert state.state == "watching" and state.holder_pid == a.pid and not state.armed
    ks = local.status()["killSwitch"]
    assert ks["state"] == "watching" and ks["holderPid"] == a.pid and ks["sharedOnDisplay"]
    assert f"pid {a.pid}" in ks["cause"]
    sid = await local.open_session("agent-b")

    t0 = time.monotonic()
    await asyncio.to_thread(press, keyboard, *CHORD)
    await until(lambda: local.session_state(sid) == SessionState.CANCELED, timeout=5.0)
    stopped_ms = (time.monotonic() - t0) * 1000
    assert local.halt_state().halted and local.halt_state().cause == "kill_switch"
    assert local._listener is not None and local._listener.remote_presses == 1
    st = a.status()
    assert st["halted"] and st["state"] == "canceled" and st["presses"] == 1
    assert st["remote"] == 0  # its own broadcast is not counted twice
    print(f"watcher stopped {stopped_ms:.0f} ms after the press")
    assert stopped_ms < 2000, stopped_ms


async def test_a_watcher_takes_the_chord_over_when_the_holder_dies(
    workers: Any, local: Kernel, keyboard: display.Display
) -> None:
    a = workers("a")
    assert (await local.start_kill_switch()).state == "watching"
    os.kill(a.pid, signal.SIGKILL)
    a.proc.wait(5)
    t0 = time.monotonic()
    await until(lambda: local.kill_switch_state.state == "armed", timeout=5.0)
    takeover_ms = (time.monotonic() - t0) * 1000
    assert local.status()["killSwitch"]["holderPid"] is None
    # a process started now watches *this* one, and this one's press stops it
    c = workers("c")
    assert c.ready["killSwitch"]["state"] == "watching"
    assert c.ready["killSwitch"]["holderPid"] == os.getpid()
    sid = await local.open_session("agent-b")
    await asyncio.to_thread(press, keyboard, *CHORD)
    await until(lambda: local.session_state(sid) == SessionState.CANCELED)
    # c is another process: it hears the broadcast on its own X connection, in its own time
    await until(
        lambda: (lambda st: st["remote"] >= 1 and st["state"] == "canceled")(c.status()),
        timeout=5.0,
    )
    st = c.status()
    assert st["halted"] and st["state"] == "canceled" and st["remote"] == 1
    print(f"chord taken over {takeover_ms:.0f} ms after the holder died")
    assert takeover_ms < 3000, takeover_ms


async def test_a_chord_held_by_another_program_is_unavailable_with_the_cause(
    local: Kernel, desktop: vdesk.DesktopState
) -> None:
    other = display.Display(desktop.display)  # some other program that grabs the chord
    root = other.screen().root
    code = other.keysym_to_keycode(XK.string_to_keysym("Escape"))
    mods = X.ControlMask | X.ShiftMask
    try:
        root.grab_key(code, mods, True, X.GrabModeAsync, X.GrabModeAsync)
        other.sync()
        state = await local.start_kill_switch()
        ks = local.status()["killSwitch"]
        assert state.state == "unavailable" and not state.armed
        assert ks["state"] == "unavailable" and "not deskpilot" in ks["cause"]
        assert not ks["sharedOnDisplay"]
        # once that program lets go, the switch arms itself (retried every 2 s)
        root.ungrab_key(code, mods)
        other.sync()
        await until(lambda: local.kill_switch_state.state == "armed", timeout=5.0)
    finally:
        other.close()
