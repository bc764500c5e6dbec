"""The backend: target bindings, sessions, the privacy gate, and what the host checks itself.

The backend keeps no observation cache: whether a frame is the session's current one is
decided by the kernel (tests/kernel/test_frames_real_host.py) and again by the host, which is
what these tests see when the backend is handed a frame directly.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from deskpilot import desktop as vdesk
from deskpilot.desktop.apps import App
from deskpilot.hostclient.api import ActionReply
from deskpilot.hostclient.backend import HostBackend
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.wire import (
    Action,
    ExecuteAction,
    FocusWindowAction,
    Observation,
    TargetSpec,
)

from .conftest import running, wait_window

pytestmark = pytest.mark.desktop


def request(
    session_id: str,
    obs: Observation,
    action: Action | None = None,
    *,
    tree_version: str | None = None,
    observe_after: bool = False,
) -> ExecuteAction:
    return ExecuteAction(
        id=0,
        session_id=session_id,
        frame_id=obs.frame_id,
        tree_version=obs.tree_version if tree_version is None else tree_version,
        action=action or FocusWindowAction(),
        observe_after=observe_after,
    )


async def test_the_host_refuses_an_older_frame_itself(
    backend: HostBackend, zenity_info: App
) -> None:
    window = await wait_window(backend, zenity_info.pid)
    await backend.bind_target("f", TargetSpec(window_id=window))
    first = (await backend.observe("f", include_screenshot=False)).observation
    second = (await backend.observe("f", include_screenshot=False)).observation
    assert first.frame_id != second.frame_id
    client = backend.supervisor.client
    assert client is not None
    # nothing in process stops an old frame any more: it reaches the host, which refuses it
    with pytest.raises(DeskpilotError) as info:
        await backend.execute(request("f", first))
    assert info.value.code is ErrorCode.STALE_FRAME
    assert client.sent["execute_action"] == 1
    assert client.alive and backend.supervisor.client is client  # not a drop
    with pytest.raises(DeskpilotError) as info:
        await backend.execute(request("nobody", second))
    assert info.value.code is ErrorCode.STALE_FRAME  # frames belong to their session
    assert client.sent["execute_action"] == 2
    assert client.alive

    # the refusals did not disturb the session's current frame at the host
    reply = await backend.execute(request("f", second))
    assert isinstance(reply, ActionReply)
    assert reply.result.dispatched
    assert reply.post is None  # not asked for
    assert client.sent["execute_action"] == 3
    # the host consumed the frame with the action
    with pytest.raises(DeskpilotError) as info:
        await backend.execute(request("f", second))
    assert info.value.code is ErrorCode.STALE_FRAME
    assert client.sent["execute_action"] == 4
    assert client.alive and backend.supervisor.client is client


async def test_an_action_with_observe_after_carries_the_window_and_the_desktop(
    backend: HostBackend, zenity_info: App
) -> None:
    window = await wait_window(backend, zenity_info.pid)
    await backend.bind_target("post", TargetSpec(window_id=window))
    obs = (await backend.observe("post", include_screenshot=False)).observation
    reply = await backend.execute(request("post", obs, observe_after=True))
    assert reply.result.dispatched
    post = reply.post
    assert isinstance(post, ObservedState)
    assert reply.result.observation is not None
    assert post.observation.frame_id == reply.result.observation.frame_id
    assert post.observation.frame_id != obs.frame_id
    assert post.observation.window.window_id == window
    assert post.png is not None and post.png.startswith(b"\x89PNG")
    # the desktop's windows when the post-action state was taken, the acted-on one among them
    assert isinstance(post.windows, tuple) and post.windows
    assert window in {w.window_id for w in post.windows}
    assert any(w.window_id == window and w.app.pid == zenity_info.pid for w in post.windows)
    # the host bound the post-action state: an action may be taken on it directly
    again = await backend.execute(request("post", post.observation))
    assert again.result.dispatched


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
        await backend.execute(request("focuser", obs_b))
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


async def test_a_capture_is_a_screenshot_the_host_will_not_act_on(
    backend: HostBackend, zenity_info: App
) -> None:
    window = await wait_window(backend, zenity_info.pid)
    shot = await backend.capture("cap", TargetSpec(window_id=window))
    assert shot.png is not None and shot.png.startswith(b"\x89PNG")
    assert shot.observation.window.window_id == window
    assert shot.observation.tree == ""
    client = backend.supervisor.client
    assert client is not None
    # its frame is no host binding: handed to the backend directly, the host refuses it
    with pytest.raises(DeskpilotError) as info:
        await backend.execute(request("cap", shot.observation, tree_version=""))
    assert info.value.code is ErrorCode.STALE_FRAME
    assert client.sent["execute_action"] == 1
    assert client.alive


async def test_an_unbound_observe_leaves_the_session_frame_at_the_host(
    backend: HostBackend, zenity_info: App
) -> None:
    window = await wait_window(backend, zenity_info.pid)
    await backend.bind_target("u", TargetSpec(window_id=window))
    current = (await backend.observe("u", include_screenshot=False)).observation
    extra = (await backend.observe("u", bind=False)).observation
    assert extra.frame_id != current.frame_id
    assert extra.window.window_id == window  # the binding chose the window
    with pytest.raises(DeskpilotError) as info:
        await backend.execute(request("u", extra))
    assert info.value.code is ErrorCode.STALE_FRAME
    reply = await backend.execute(request("u", current))
    assert reply.result.dispatched


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
    assert backend.binding("c") is None
    for _ in range(2):  # the refusal is sticky
        with pytest.raises(DeskpilotError) as info:
            await backend.execute(request("c", obs))
        assert info.value.code is ErrorCode.SESSION_CANCELED
        assert not info.value.retryable
    assert client.alive and client.pid == pid
    assert client.sent["execute_action"] == 0  # refused in process, before the host


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
        with pytest.raises(DeskpilotError) as info:
            await backend.observe("p", bind=False)
        assert info.value.code is ErrorCode.SENSITIVE_INPUT_BLOCKED
        with pytest.raises(DeskpilotError) as info:
            await backend.capture("p")
        assert info.value.code is ErrorCode.SENSITIVE_INPUT_BLOCKED
