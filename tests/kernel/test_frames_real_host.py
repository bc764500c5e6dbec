"""Frame freshness is the kernel's, over a real host backend on the private desktop.

The host client keeps no observation cache: the kernel knows each session's current frame
(kernel/frames.py) and refuses an old one before anything reaches the host; the host checks
again on its side (tests/hostclient/test_backend.py). ``client.sent["execute_action"]`` counts
what the host was really asked, so "refused in process" is checked, not assumed.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from deskpilot import desktop as vdesk
from deskpilot.desktop.apps import App, launch
from deskpilot.hostclient.backend import HostBackend
from deskpilot.hostclient.client import HostClient
from deskpilot.hostclient.config import LOCAL_TRUST_ENV, HostConfig
from deskpilot.kernel import Kernel
from deskpilot.kernel.flags import Flags
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.session import TaskContract
from deskpilot.protocol.wire import FocusWindowAction, Observation, TargetSpec
from deskpilot.store.db import Database

from .real_apps import zenity

pytestmark = pytest.mark.desktop


@pytest.fixture
async def backend(
    desktop: vdesk.DesktopState, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[HostBackend]:
    monkeypatch.setenv(LOCAL_TRUST_ENV, "1")
    monkeypatch.delenv("DESKPILOT_HOST_TEST_HANG", raising=False)
    b = HostBackend(HostConfig(heartbeat_interval_s=3600.0), heartbeat=False)
    try:
        yield b
    finally:
        await b.close()


@pytest.fixture
async def kernel(backend: HostBackend, tmp_path: Path) -> AsyncIterator[Kernel]:
    k = Kernel(backend, Database(tmp_path / "frames.sqlite3"), flags=Flags({}))
    yield k
    await k.close()


@pytest.fixture
def info_dialog(desktop: vdesk.DesktopState) -> Iterator[App]:
    yield from zenity("--info", "--title", "frames test", "--text", "hello")


async def _bound_session(kernel: Kernel, app: App) -> tuple[str, str]:
    """The app's window and a session bound to it."""
    window = await _window(kernel, app.pid)
    sid = await kernel.open_session("agent", TaskContract(), target=TargetSpec(window_id=window))
    return window, sid


async def _window(kernel: Kernel, pid: int, timeout: float = 15.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for w in await kernel.windows():
            if w.app.pid == pid:
                return w.window_id
        await asyncio.sleep(0.1)
    raise AssertionError(f"no window for pid {pid}")


def _client(backend: HostBackend) -> HostClient:
    client = backend.supervisor.client
    assert client is not None and client.alive
    return client


async def _observe(kernel: Kernel, sid: str, target: TargetSpec | None = None) -> Observation:
    return (await kernel.observe(sid, target, include_screenshot=False)).observation


async def _stale(kernel: Kernel, sid: str, obs: Observation) -> DeskpilotError:
    with pytest.raises(DeskpilotError) as info:
        await kernel.execute(sid, obs.frame_id, obs.tree_version, FocusWindowAction())
    return info.value


async def test_an_older_frame_is_refused_before_reaching_the_host(
    kernel: Kernel, backend: HostBackend, info_dialog: App
) -> None:
    window, sid = await _bound_session(kernel, info_dialog)
    first = await _observe(kernel, sid)
    second = await _observe(kernel, sid)
    assert first.frame_id != second.frame_id
    assert second.window.window_id == window
    client = _client(backend)

    err = await _stale(kernel, sid, first)
    assert err.code is ErrorCode.STALE_FRAME
    assert err.details["currentFrameId"] == second.frame_id
    # the current frame, quoted with another tree version, is stale_tree, also in process
    with pytest.raises(DeskpilotError) as info:
        await kernel.execute(sid, second.frame_id, "t-wrong", FocusWindowAction())
    assert info.value.code is ErrorCode.STALE_TREE
    # frames belong to their session
    other = await kernel.open_session("agent", TaskContract())
    err = await _stale(kernel, other, second)
    assert err.code is ErrorCode.STALE_FRAME
    assert client.sent["execute_action"] == 0  # none of that reached the host
    assert client.alive and backend.supervisor.client is client  # nor dropped the connection

    done = await kernel.execute(sid, second.frame_id, second.tree_version, FocusWindowAction())
    assert done.result.dispatched
    assert done.post is None  # not asked for
    assert client.sent["execute_action"] == 1
    # the action consumed the frame: refused in process, the host is not asked again
    err = await _stale(kernel, sid, second)
    assert err.code is ErrorCode.STALE_FRAME
    assert err.details["currentFrameId"] is None
    assert client.sent["execute_action"] == 1
    assert client.alive and backend.supervisor.client is client


async def test_the_post_action_state_becomes_the_current_frame(
    kernel: Kernel, backend: HostBackend, info_dialog: App
) -> None:
    window, sid = await _bound_session(kernel, info_dialog)
    obs = await _observe(kernel, sid)
    client = _client(backend)
    done = await kernel.execute(
        sid, obs.frame_id, obs.tree_version, FocusWindowAction(), observe_after=True
    )
    assert done.result.dispatched
    post = done.post
    assert isinstance(post, ObservedState)
    assert post.observation.frame_id != obs.frame_id
    assert post.observation.window.window_id == window
    assert post.windows and window in {w.window_id for w in post.windows}
    # the frame acted on is gone; the carried state may be acted on (the host bound it too)
    err = await _stale(kernel, sid, obs)
    assert err.code is ErrorCode.STALE_FRAME
    assert err.details["currentFrameId"] == post.observation.frame_id
    assert client.sent["execute_action"] == 1
    again = await kernel.execute(
        sid, post.observation.frame_id, post.observation.tree_version, FocusWindowAction()
    )
    assert again.result.dispatched
    assert client.sent["execute_action"] == 2


async def test_a_capture_is_not_actionable_and_keeps_the_current_frame(
    kernel: Kernel, backend: HostBackend, info_dialog: App
) -> None:
    window, sid = await _bound_session(kernel, info_dialog)
    current = await _observe(kernel, sid)
    shot = await kernel.capture(sid)
    assert shot.png is not None and shot.png.startswith(b"\x89PNG")
    assert shot.observation.window.window_id == window
    assert shot.observation.frame_id != current.frame_id
    client = _client(backend)
    err = await _stale(kernel, sid, shot.observation)
    assert err.code is ErrorCode.STALE_FRAME
    assert err.details["currentFrameId"] == current.frame_id  # the capture did not replace it
    assert client.sent["execute_action"] == 0
    # the frame observed before the capture is still the session's, here and at the host
    done = await kernel.execute(sid, current.frame_id, current.tree_version, FocusWindowAction())
    assert done.result.dispatched
    assert client.sent["execute_action"] == 1


async def test_stopping_a_session_forgets_its_frame_and_binding_without_killing(
    kernel: Kernel, backend: HostBackend, info_dialog: App
) -> None:
    window = await _window(kernel, info_dialog.pid)
    sid = await kernel.open_session("agent", TaskContract())
    await kernel.pause(sid)
    await kernel.bind_target(sid, TargetSpec(window_id=window))
    await kernel.resume(sid)
    assert backend.binding(sid) == TargetSpec(window_id=window)
    obs = await _observe(kernel, sid)
    client = _client(backend)
    pid = client.pid
    await kernel.stop(sid)
    assert client.sent["cancel_session"] == 1
    assert backend.binding(sid) is None
    assert kernel.broker.frames.get(sid) is None
    err = await _stale(kernel, sid, obs)
    assert err.code is ErrorCode.SESSION_CANCELED
    assert client.sent["execute_action"] == 0
    assert client.alive and client.pid == pid and backend.supervisor.client is client


async def test_a_pause_drops_the_frame(
    kernel: Kernel, backend: HostBackend, info_dialog: App
) -> None:
    _, sid = await _bound_session(kernel, info_dialog)
    obs = await _observe(kernel, sid)
    await kernel.pause(sid)
    await kernel.resume(sid)
    err = await _stale(kernel, sid, obs)
    assert err.code is ErrorCode.STALE_FRAME
    assert _client(backend).sent["execute_action"] == 0


async def test_a_credential_app_never_becomes_the_current_frame(
    kernel: Kernel, backend: HostBackend, info_dialog: App, tmp_path: Path
) -> None:
    zenity = shutil.which("zenity")
    assert zenity is not None  # info_dialog skipped otherwise
    fake = tmp_path / "pinentry"  # /proc/PID/exe of this process ends in "pinentry"
    shutil.copy2(zenity, fake)
    pin = launch([str(fake), "--entry", "--title", "PIN", "--text", "PIN"])
    try:
        plain = await _window(kernel, info_dialog.pid)
        secret = await _window(kernel, pin.pid)
        sid = await kernel.open_session("agent", TaskContract())
        current = await _observe(kernel, sid, TargetSpec(window_id=plain))
        with pytest.raises(DeskpilotError) as info:
            await kernel.observe(sid, TargetSpec(window_id=secret))
        assert info.value.code is ErrorCode.SENSITIVE_INPUT_BLOCKED
        with pytest.raises(DeskpilotError) as info:
            await kernel.capture(sid, TargetSpec(window_id=secret))
        assert info.value.code is ErrorCode.SENSITIVE_INPUT_BLOCKED
        state = kernel.broker.frames.get(sid)
        assert state is not None and state.observation.frame_id == current.frame_id
        client = _client(backend)
        assert client.sent["execute_action"] == 0
        # the frame from before the refused observation is still the one to act on
        done = await kernel.execute(
            sid, current.frame_id, current.tree_version, FocusWindowAction()
        )
        assert done.result.dispatched
        assert client.sent["execute_action"] == 1
    finally:
        pin.stop()


async def test_after_a_reconnect_an_old_frame_never_reaches_the_new_host(
    kernel: Kernel, backend: HostBackend, info_dialog: App
) -> None:
    window = await _window(kernel, info_dialog.pid)
    sid = await kernel.open_session("agent", TaskContract())
    await kernel.pause(sid)
    await kernel.bind_target(sid, TargetSpec(window_id=window))
    await kernel.resume(sid)
    old = await _observe(kernel, sid)
    assert old.window.window_id == window
    first = _client(backend)
    assert first.pid is not None
    os.kill(first.pid, signal.SIGKILL)
    await asyncio.sleep(0.3)
    other = await kernel.open_session("agent", TaskContract())
    await _observe(kernel, other)  # the other session's acquire reconnects
    second = _client(backend)
    assert second is not first and second.pid != first.pid
    assert kernel.broker.frames.get(sid) is None  # the reconnect dropped every frame

    err = await _stale(kernel, sid, old)
    assert err.code is ErrorCode.STALE_FRAME
    assert second.sent["execute_action"] == 0  # refused before reaching the new host
    assert second.alive and backend.supervisor.client is second
    # the binding was kept, in the backend and in the session
    assert backend.binding(sid) == TargetSpec(window_id=window)
    row = kernel.session(sid)
    assert row is not None and row.target == TargetSpec(window_id=window)
    fresh = await _observe(kernel, sid)
    assert fresh.window.window_id == window
    done = await kernel.execute(sid, fresh.frame_id, fresh.tree_version, FocusWindowAction())
    assert done.result.dispatched
    assert second.sent["execute_action"] == 1
