"""Transparent retry and the connection-drop rule, against the real host behind a fault relay."""

from __future__ import annotations

import pytest

from deskpilot import desktop as vdesk
from deskpilot.desktop.apps import App
from deskpilot.hostclient.backend import HostBackend
from deskpilot.hostclient.client import HostClient
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import ExecuteAction, FocusWindowAction, TargetSpec

from .conftest import proxy_config, wait_window

pytestmark = pytest.mark.desktop


@pytest.mark.parametrize(
    ("rtype", "call"),
    [
        ("observe", lambda c: c.observe(session_id="r", include_screenshot=False)),
        ("list_windows", lambda c: c.list_windows()),
        ("get_capabilities", lambda c: c.get_capabilities(fresh=True)),
    ],
)
async def test_idempotent_reads_are_retried_when_the_host_says_retryable(
    desktop: vdesk.DesktopState, zenity_info: App, rtype: str, call: object
) -> None:
    client = HostClient(proxy_config(f"{rtype}=capture_failed:2"))
    await client.start()  # the handshake is a get_capabilities, retried the same way
    try:
        if rtype != "get_capabilities":
            await call(client)  # type: ignore[operator]
        assert client.sent[rtype] == 3  # two injected failures, then the real host
        assert client.retries[rtype] == 2
    finally:
        await client.close()


async def test_retry_stops_after_three(desktop: vdesk.DesktopState) -> None:
    client = HostClient(proxy_config("list_windows=capture_failed:10"))
    await client.start()
    try:
        with pytest.raises(DeskpilotError) as info:
            await client.list_windows()
        assert info.value.code is ErrorCode.CAPTURE_FAILED
        assert client.sent["list_windows"] == 4  # the call + at most 3 retries
        assert client.alive
    finally:
        await client.close()


async def test_not_retried_when_the_host_says_final(desktop: vdesk.DesktopState) -> None:
    client = HostClient(proxy_config("list_windows=capture_failed:1:final"))
    await client.start()
    try:
        with pytest.raises(DeskpilotError) as info:
            await client.list_windows()
        assert info.value.retryable is False
        assert client.sent["list_windows"] == 1
    finally:
        await client.close()


async def test_actions_and_captures_are_never_retried(
    desktop: vdesk.DesktopState, zenity_info: App
) -> None:
    config = proxy_config("execute_action=capture_failed:1;capture_window=capture_failed:1")
    backend = HostBackend(config, heartbeat=False)
    try:
        window = await wait_window(backend, zenity_info.pid)
        await backend.bind_target("n", TargetSpec(window_id=window))
        obs = (await backend.observe("n", include_screenshot=False)).observation
        client = backend.supervisor.client
        assert client is not None
        with pytest.raises(DeskpilotError) as info:
            await backend.execute(
                ExecuteAction(
                    id=0,
                    session_id="n",
                    frame_id=obs.frame_id,
                    tree_version=obs.tree_version,
                    action=FocusWindowAction(),
                )
            )
        assert info.value.code is ErrorCode.CAPTURE_FAILED and info.value.retryable
        assert client.sent["execute_action"] == 1
        with pytest.raises(DeskpilotError):
            await backend.capture("n")
        assert client.sent["capture_window"] == 1
        # the next capture (no fault left) is served by the real host
        shot = await backend.capture("n")
        assert shot.png is not None and shot.png.startswith(b"\x89PNG")
        assert client.sent["capture_window"] == 2
    finally:
        await backend.close()


@pytest.mark.parametrize(
    ("code", "drops"),
    [
        ("native_host_missing", True),
        ("native_host_untrusted", True),
        ("native_host_incompatible", True),
        ("action_timeout", True),
        ("session_canceled", True),
        ("stale_frame", False),
        ("stale_tree", False),
        ("focus_mismatch", False),
        ("target_not_found", False),
    ],
)
async def test_only_five_codes_drop_the_connection(
    desktop: vdesk.DesktopState, code: str, drops: bool
) -> None:
    client = HostClient(proxy_config(f"list_windows={code}:1:final"))
    await client.start()
    try:
        with pytest.raises(DeskpilotError) as info:
            await client.list_windows()
        assert info.value.code.value == code
        assert client.alive is (not drops)
        if drops:
            assert client.returncode is not None  # the host process is gone
        else:
            assert isinstance(await client.list_windows(), list)
    finally:
        await client.close()
