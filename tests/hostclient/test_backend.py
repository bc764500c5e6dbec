"""The backend: frame identity, target bindings, sessions and the privacy gate."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from deskpilot import desktop as vdesk
from deskpilot.desktop.apps import App
from deskpilot.hostclient.backend import HostBackend
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import FocusWindowAction, TargetSpec

from .conftest import running, wait_window

pytestmark = pytest.mark.desktop


async def test_an_older_frame_is_stale_before_reaching_the_host(
    backend: HostBackend, zenity_info: App
) -> None:
    window = await wait_window(backend, zenity_info.pid)
    await backend.bind_target("f", TargetSpec(window_id=window))
    first = (await backend.observe("f", include_screenshot=False)).observation
    second = (await backend.observe("f", include_screenshot=False)).observation
    assert first.frame_id != second.frame_id
    assert backend.latest_observation("f") is second
    client = backend.supervisor.client
    assert client is not None
    with pytest.raises(DeskpilotError) as info:
        await backend.execute("f", first.frame_id, first.tree_version, FocusWindowAction())
    assert info.value.code is ErrorCode.STALE_FRAME
    assert info.value.details["latestFrameId"] == second.frame_id
    with pytest.raises(DeskpilotError) as info:
        await backend.execute("nobody", second.frame_id, second.tree_version, FocusWindowAction())
    assert info.value.code is ErrorCode.STALE_FRAME  # frames belong to their session
    assert client.sent["execute_action"] == 0
    assert client.alive  # stale_frame never drops the connection

    result = await backend.execute("f", second.frame_id, second.tree_version, FocusWindowAction())
    assert result.dispatched
    assert client.sent["execute_action"] == 1
    latest = backend.latest_observation("f")
    if result.observation is None:
        assert latest is None  # the action consumed the frame
    else:
        assert latest is not None and latest.frame_id == result.observation.frame_id
    with pytest.raises(DeskpilotError) as info:
        await backend.execute("f", second.frame_id, second.tree_version, FocusWindowAction())
    assert info.value.code is ErrorCode.STALE_FRAME
    assert client.sent["execute_action"] == 1


async def test_a_bound_session_observes_its_window_not_the_foreground(
    backend: HostBackend, desktop: vdesk.DesktopState
) -> None:
    zenity = shutil.which("zenity")
    if zenity is None:
        pytest.skip("zenity is not installed")
    with (
        running([zenity, "--info", "--title", "bound A", "--text", "a"]) as a,
        running([zenity, "--info", "--title", "other B", "--text", "b"]) as b,
    ):
        wa = await wait_window(backend, a.pid)
        wb = await wait_window(backend, b.pid)
        # make B the foreground through an action on it
        obs_b = (await backend.observe("focuser", TargetSpec(window_id=wb))).observation
        await backend.execute("focuser", obs_b.frame_id, obs_b.tree_version, FocusWindowAction())
        await backend.bind_target("bound", TargetSpec(window_id=wa))
        assert backend.binding("bound") == TargetSpec(window_id=wa)
        state = await backend.observe("bound", include_screenshot=False)
        assert state.observation.window.window_id == wa
        assert state.observation.app.pid == a.pid
        fg = state.observation.foreground_window
        if fg is not None:
            assert fg.window_id == wb  # the foreground is elsewhere, and was not observed
        # an explicit target still wins over the binding for one call
        other = await backend.observe("bound", TargetSpec(window_id=wb), include_screenshot=False)
        assert other.observation.window.window_id == wb


async def test_capture_is_not_actionable(backend: HostBackend, zenity_info: App) -> None:
    window = await wait_window(backend, zenity_info.pid)
    shot = await backend.capture("cap", TargetSpec(window_id=window))
    assert shot.png is not None and shot.png.startswith(b"\x89PNG")
    assert shot.observation.window.window_id == window
    assert shot.observation.tree == ""
    assert backend.latest_observation("cap") is None
    with pytest.raises(DeskpilotError) as info:
        await backend.execute("cap", shot.observation.frame_id, "", FocusWindowAction())
    assert info.value.code is ErrorCode.STALE_FRAME


async def test_cancel_session_forgets_without_killing(
    backend: HostBackend, zenity_info: App
) -> None:
    window = await wait_window(backend, zenity_info.pid)
    await backend.bind_target("c", TargetSpec(window_id=window))
    obs = (await backend.observe("c", include_screenshot=False)).observation
    client = backend.supervisor.client
    assert client is not None
    pid = client.pid
    await backend.cancel_session("c")
    assert client.sent["cancel_session"] == 1
    assert backend.binding("c") is None and backend.latest_observation("c") is None
    with pytest.raises(DeskpilotError) as info:
        await backend.execute("c", obs.frame_id, obs.tree_version, FocusWindowAction())
    assert info.value.code is ErrorCode.SESSION_CANCELED
    assert client.alive and client.pid == pid
    assert client.sent["execute_action"] == 0


async def test_credential_apps_are_never_returned(
    backend: HostBackend, desktop: vdesk.DesktopState, tmp_path: Path
) -> None:
    zenity = shutil.which("zenity")
    if zenity is None:
        pytest.skip("zenity is not installed")
    fake = tmp_path / "pinentry"  # /proc/PID/exe of this process ends in "pinentry"
    shutil.copy2(zenity, fake)
    with running([str(fake), "--entry", "--title", "PIN", "--text", "PIN"]) as app:
        window = await wait_window(backend, app.pid)
        await backend.bind_target("p", TargetSpec(window_id=window))
        with pytest.raises(DeskpilotError) as info:
            await backend.observe("p")
        assert info.value.code is ErrorCode.SENSITIVE_INPUT_BLOCKED
        assert backend.latest_observation("p") is None
        with pytest.raises(DeskpilotError) as info:
            await backend.capture("p")
        assert info.value.code is ErrorCode.SENSITIVE_INPUT_BLOCKED
