"""The kill switch on the private X desktop, pressed through XTEST like a keyboard would."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from Xlib import XK, X, display
from Xlib.ext import xtest

from deskpilot import desktop as vdesk
from deskpilot.kernel import Kernel
from deskpilot.kernel.flags import Flags
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import EventType, SessionState
from deskpilot.protocol.wire import PressKeyAction, ScrollAction, TypeTextAction
from deskpilot.store.db import Database
from deskpilot.store.settings import Settings

from . import trees
from .backends import RecordedBackend, screen

pytestmark = pytest.mark.desktop


@pytest.fixture
def keyboard(desktop: vdesk.DesktopState) -> Iterator[display.Display]:
    d = display.Display(desktop.display)
    yield d
    d.close()


def press(d: display.Display, *keysyms: str, hold: float = 0.0) -> None:
    codes = [d.keysym_to_keycode(XK.string_to_keysym(k)) for k in keysyms]
    for c in codes:
        xtest.fake_input(d, X.KeyPress, c)
    d.sync()
    if hold:
        time.sleep(hold)
    for c in reversed(codes):
        xtest.fake_input(d, X.KeyRelease, c)
    d.sync()


async def until(predicate: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)


@pytest.fixture
async def armed(
    desktop: vdesk.DesktopState, tmp_path: Path
) -> AsyncIterator[tuple[Kernel, RecordedBackend]]:
    backend = RecordedBackend(default=screen(trees.EDITOR))
    db = Database(tmp_path / "fresh.sqlite3")  # a fresh install: no settings rows at all
    assert db.query("SELECT * FROM settings WHERE key = 'killSwitch'") == []
    kernel = Kernel(backend, db, flags=Flags({}))
    state = await kernel.start_kill_switch(desktop.display)
    assert state.armed and state.chord == "ctrl+shift+Escape", state
    yield kernel, backend
    await kernel.close()


async def test_kill_switch_cancels_running_sessions_and_halts_the_agent_side(
    armed: tuple[Kernel, RecordedBackend], keyboard: display.Display
) -> None:
    kernel, backend = armed
    backend.delay = 30.0  # actions that would run long
    kernel.client_session_began("agent-a")
    # a delegated task and the same agent's atomic session: both running, one lane
    sids = [
        await kernel.open_session("agent-a", mode="delegated"),
        await kernel.open_session("agent-a"),
    ]
    running = []
    for sid in sids:
        obs = (await kernel.observe(sid)).observation
        running.append(
            asyncio.ensure_future(
                kernel.execute(sid, obs.frame_id, obs.tree_version, TypeTextAction(text="x" * 99))
            )
        )
        await asyncio.sleep(0.05)  # the coordinator serialises: the second one queues
    t0 = time.monotonic()
    # the person presses it three times, quickly (coalesced), with Num Lock on
    press(keyboard, "Num_Lock")
    for _ in range(3):
        await asyncio.to_thread(press, keyboard, "Control_L", "Shift_L", "Escape")
    press(keyboard, "Num_Lock")
    await until(lambda: all(kernel.session_state(s) == SessionState.CANCELED for s in sids))
    assert time.monotonic() - t0 < 3.0
    results = await asyncio.gather(*running, return_exceptions=True)
    assert all(isinstance(r, DeskpilotError) for r in results), results
    assert backend.executed == []  # neither long action completed
    for sid in sids:
        canceled = [e for e in kernel.sessions.events(sid) if e.type == EventType.SESSION_CANCELED]
        assert len(canceled) == 1 and canceled[0].payload["reason"] == "kill_switch"
    assert len(kernel.halt.repo.history()) == 1  # repeated presses coalesced into one halt

    # every action now says the person pressed the kill switch; observing still works
    fresh = await kernel.open_session("agent-a")
    obs = (await kernel.observe(fresh)).observation
    with pytest.raises(DeskpilotError) as e:
        await kernel.execute(fresh, obs.frame_id, obs.tree_version, ScrollAction(direction="up"))
    assert e.value.code == ErrorCode.KILL_SWITCH_ENGAGED
    assert "pressed the kill switch" in e.value.message and "deskpilot unhalt" in e.value.message
    assert kernel.halt_state().halted and kernel.halt_state().cause == "kill_switch"
    # canceled sessions never resume
    with pytest.raises(DeskpilotError) as e:
        await kernel.resume(sids[0])
    assert e.value.code == ErrorCode.INVALID_STATE_TRANSITION

    # a new client session is not bound by the old halt; the old one is, until unhalt
    backend.delay = 0.0
    kernel.client_session_began("agent-c")
    newer = await kernel.open_session("agent-c")
    obs = (await kernel.observe(newer)).observation
    await kernel.execute(newer, obs.frame_id, obs.tree_version, ScrollAction(direction="up"))
    assert kernel.unhalt("test") == 1
    obs = (await kernel.observe(fresh)).observation
    await kernel.execute(fresh, obs.frame_id, obs.tree_version, ScrollAction(direction="up"))


async def test_rearmed_when_the_setting_changes(
    armed: tuple[Kernel, RecordedBackend], keyboard: display.Display
) -> None:
    kernel, _ = armed
    sid = await kernel.open_session("agent-a")
    Settings.update(kernel.db, kill_switch="ctrl+alt+k")
    await until(lambda: kernel.kill_switch_state.chord == "ctrl+alt+k")
    assert kernel.kill_switch_state.armed
    await asyncio.to_thread(press, keyboard, "Control_L", "Shift_L", "Escape")
    await asyncio.sleep(0.5)
    assert kernel.session_state(sid) == SessionState.OBSERVING  # the old chord is released
    await asyncio.to_thread(press, keyboard, "Control_L", "Alt_L", "k")
    await until(lambda: kernel.session_state(sid) == SessionState.CANCELED)
    # a setting written by another process is picked up by the revision poll
    kernel.unhalt("test")
    kernel.db.execute(
        "UPDATE settings SET value_json = ?, updated_at = ? WHERE key = 'killSwitch'",
        ('"ctrl+shift+F12"', time.time()),
    )
    await until(lambda: kernel.kill_switch_state.chord == "ctrl+shift+F12", timeout=6.0)
    assert kernel.kill_switch_state.armed


async def test_physical_escape_cancels_only_the_current_action(
    armed: tuple[Kernel, RecordedBackend], keyboard: display.Display
) -> None:
    kernel, backend = armed
    backend.delay = 30.0
    sid = await kernel.open_session("agent-a")
    obs = (await kernel.observe(sid)).observation
    running = asyncio.ensure_future(
        kernel.execute(sid, obs.frame_id, obs.tree_version, TypeTextAction(text="long"))
    )
    await asyncio.sleep(0.1)
    await asyncio.to_thread(press, keyboard, "Escape")
    with pytest.raises(DeskpilotError) as e:
        await asyncio.wait_for(running, 5.0)
    assert e.value.code == ErrorCode.HANDOFF_REQUIRED
    assert kernel.session_state(sid) == SessionState.HANDOFF_REQUIRED  # not canceled
    assert not kernel.halt_state().halted  # no kill, no halt
    assert kernel.sessions.events(sid)[-1].type == EventType.HANDOFF_REQUIRED


async def test_the_agents_own_escape_does_not_count(
    armed: tuple[Kernel, RecordedBackend], keyboard: display.Display
) -> None:
    kernel, backend = armed
    backend.delay = 0.6
    sid = await kernel.open_session("agent-a")
    obs = (await kernel.observe(sid)).observation
    running = asyncio.ensure_future(
        kernel.execute(sid, obs.frame_id, obs.tree_version, PressKeyAction(keys=["Escape"]))
    )
    await asyncio.sleep(0.1)
    # what our host would synthesise for that press_key
    await asyncio.to_thread(press, keyboard, "Escape")
    result = await asyncio.wait_for(running, 5.0)
    assert result.result.dispatched
    assert kernel.session_state(sid) == SessionState.OBSERVING
    assert kernel.escape_interrupts == 0
