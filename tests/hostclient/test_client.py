"""The client against the real host process on the private desktop."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from typing import Any

import pytest
from Xlib import display as xdisplay

from deskpilot import desktop as vdesk
from deskpilot.desktop.apps import App
from deskpilot.hostclient.backend import HostBackend
from deskpilot.hostclient.client import HostClient
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import ExecuteAction, PasteTextAction, PressKeyAction, TargetSpec

from .conftest import alive, cmdline, eventually, fast_config, proxy_config, wait_window

pytestmark = pytest.mark.desktop


def held_keycodes() -> list[int]:
    """Keys the X server believes are down right now (XQueryKeymap)."""
    d = xdisplay.Display(os.environ["DISPLAY"])
    try:
        keymap = d.query_keymap()
    finally:
        d.close()
    return [i * 8 + bit for i, byte in enumerate(keymap) for bit in range(8) if byte >> bit & 1]


def hang_env(target: str) -> dict[str, str]:
    env = dict(os.environ)
    env["DESKPILOT_HOST_TEST_HANG"] = target
    return env


async def test_handshake_ping_and_capabilities_cache(desktop: vdesk.DesktopState) -> None:
    client = HostClient(fast_config())
    caps = await client.start()
    try:
        assert caps.protocol_version == 1
        assert caps.available is True
        assert client.alive and client.pid is not None
        pong = await client.ping()
        assert pong["type"] == "pong"
        # cached for 1 s: a second call within the TTL does not reach the host
        sent = client.sent["get_capabilities"]
        await client.get_capabilities()
        await client.get_capabilities()
        assert client.sent["get_capabilities"] == sent
        await asyncio.sleep(1.05)
        await client.get_capabilities()
        assert client.sent["get_capabilities"] == sent + 1
        await client.get_capabilities(fresh=True)
        assert client.sent["get_capabilities"] == sent + 2
    finally:
        await client.close()
    assert not client.alive
    assert client.returncode == 0  # stdin EOF: the host left by itself


async def test_130_concurrent_calls_meet_the_operation_capacity(
    desktop: vdesk.DesktopState,
) -> None:
    client = HostClient(fast_config())
    await client.start()
    try:
        results = await asyncio.gather(
            *(client.list_windows() for _ in range(130)), return_exceptions=True
        )
        refused = [r for r in results if isinstance(r, BaseException)]
        served = [r for r in results if isinstance(r, list)]
        assert len(served) == 128  # 64 in flight + 64 queued
        assert len(refused) == 2
        for err in refused:
            assert isinstance(err, DeskpilotError)
            assert err.code is ErrorCode.ENVIRONMENT_UNAVAILABLE
            assert err.details["diagnosticCode"] == "native_host_operation_capacity_reached"
        # the refusals cost nothing: the host keeps serving
        assert client.alive
        assert isinstance(await client.list_windows(), list)
    finally:
        await client.close()


async def test_request_capacity_and_hung_host_killed_at_the_timeout(
    desktop: vdesk.DesktopState,
) -> None:
    client = HostClient(fast_config(env=hang_env("list_windows"), request_timeout_s=3.0))
    await client.start()
    pid = client.pid
    assert pid is not None
    calls = [asyncio.create_task(client.list_windows()) for _ in range(130)]
    # the 130 tasks need a few loop turns (and the writes to the host) to be in place
    await eventually(lambda: client.pending_count == 64 and client.lane.queued == 64, 2.0)
    assert client.pending_count == 64 and client.lane.queued == 64
    # a request outside the lane meets the request capacity
    with pytest.raises(DeskpilotError) as info:
        await client.cancel_session("s-capacity")
    assert info.value.code is ErrorCode.ENVIRONMENT_UNAVAILABLE
    assert info.value.details["diagnosticCode"] == "native_host_request_capacity_reached"
    t0 = time.monotonic()
    results = await asyncio.gather(*calls, return_exceptions=True)
    elapsed = time.monotonic() - t0
    codes: dict[str, int] = {}
    for r in results:
        assert isinstance(r, DeskpilotError)
        key = r.details.get("diagnosticCode") or r.code.value
        codes[key] = codes.get(key, 0) + 1
    # the first call in flight is the one that timed out; the other 63 in flight and the 64
    # queued fail clearly; 2 were refused at once
    assert codes == {
        "action_timeout": 1,
        "native_host_unavailable": 127,
        "native_host_operation_capacity_reached": 2,
    }
    assert elapsed < 3.0 + 0.3 + 1.0
    assert not alive(pid)
    assert client.failure is not None and client.failure.code is ErrorCode.ACTION_TIMEOUT


async def test_stopped_host_is_sigkilled_after_the_grace(desktop: vdesk.DesktopState) -> None:
    client = HostClient(fast_config(request_timeout_s=1.0))
    await client.start()
    pid = client.pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # it cannot even notice stdin closing
    t0 = time.monotonic()
    with pytest.raises(DeskpilotError) as info:
        await client.ping()
    elapsed = time.monotonic() - t0
    assert info.value.code is ErrorCode.ACTION_TIMEOUT
    assert client.returncode == -signal.SIGKILL
    assert 1.0 + 0.3 <= elapsed < 1.0 + 0.3 + 1.0
    assert not alive(pid)


async def test_a_write_blocked_by_a_stopped_host_still_times_out(
    desktop: vdesk.DesktopState,
) -> None:
    client = HostClient(fast_config())
    await client.start()
    pid = client.pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # it stops reading: a 500 KB request cannot fit the pipe
    t0 = time.monotonic()
    call = asyncio.create_task(
        client.execute_action(
            ExecuteAction(
                id=0,
                session_id="big",
                frame_id="f-x",
                tree_version="t-x",
                action=PasteTextAction(text="x" * 500_000, element_id=1),
            ),
            timeout=1.0,
        )
    )
    host = client._host
    assert host is not None and host.stdin is not None
    # the write is stuck in drain(): waited for, not slept for (a loaded CI worker had not
    # written yet 0.3 s after the call; tests/FLAKES.md), before the 1 s timeout ends it
    deadline = time.monotonic() + 0.8
    while True:
        stuck = host.stdin.get_write_buffer_size()
        if stuck > 64 * 1024 or time.monotonic() >= deadline:
            break
        await asyncio.sleep(0.02)
    assert stuck > 64 * 1024, stuck
    with pytest.raises(DeskpilotError) as info:
        await call
    assert info.value.code is ErrorCode.ACTION_TIMEOUT
    assert time.monotonic() - t0 < 1.0 + 0.3 + 1.0
    assert client.returncode == -signal.SIGKILL


async def test_hung_key_press_is_killed_and_no_key_stays_pressed(
    desktop: vdesk.DesktopState, zenity_info: App
) -> None:
    config = fast_config(env=hang_env("press_key"), action_grace_s=1.5, post_action_observe_s=0.5)
    backend = HostBackend(config, heartbeat=False)
    try:
        window = await wait_window(backend, zenity_info.pid)
        await backend.bind_target("keys", TargetSpec(window_id=window))
        obs = (await backend.observe("keys", include_screenshot=False)).observation
        client = backend.supervisor.client
        assert client is not None and client.pid is not None
        pid = client.pid
        assert held_keycodes() == []
        action = PressKeyAction(keys=["shift+ctrl+x"])
        expected = config.action_timeout(action)
        request = ExecuteAction(
            id=0,
            session_id="keys",
            frame_id=obs.frame_id,
            tree_version=obs.tree_version,
            action=action,
        )
        task = asyncio.create_task(backend.execute(request))
        # while the host hangs, the chord really is held down
        held = await eventually(lambda: bool(held_keycodes()), expected)
        assert held, "the hang switch did not hold any key"
        t0 = time.monotonic()
        with pytest.raises(DeskpilotError) as info:
            await task
        assert info.value.code is ErrorCode.ACTION_TIMEOUT
        assert time.monotonic() - t0 < expected + 1.0
        assert not alive(pid)
        assert held_keycodes() == []
        # the supervisor recorded a terminal failure; it did not reconnect by itself
        assert backend.status()["state"] == "disconnected"
    finally:
        await backend.close()


async def test_cancelling_the_caller_aborts_the_host(desktop: vdesk.DesktopState) -> None:
    client = HostClient(fast_config(env=hang_env("list_windows")))
    await client.start()
    pid = client.pid
    assert pid is not None
    hung = asyncio.create_task(client.list_windows())
    bystander = asyncio.create_task(client.ping())
    await asyncio.sleep(0.2)
    hung.cancel()
    with pytest.raises(asyncio.CancelledError):
        await hung
    with pytest.raises(DeskpilotError) as info:
        await bystander
    assert info.value.code is ErrorCode.NATIVE_HOST_UNAVAILABLE
    assert client.failure is not None and client.failure.code is ErrorCode.SESSION_CANCELED
    await asyncio.sleep(0.5)
    assert not alive(pid)


async def test_explicit_abort_ends_the_call_with_session_canceled(
    desktop: vdesk.DesktopState,
) -> None:
    backend = HostBackend(fast_config(env=hang_env("observe")), heartbeat=False)
    try:
        await backend.capabilities()
        call = asyncio.create_task(backend.observe("abortme"))
        await asyncio.sleep(0.2)
        assert await backend.abort_session("other") is False  # nothing of it in flight
        assert await backend.abort_session("abortme") is True
        with pytest.raises(DeskpilotError) as info:
            await call
        assert info.value.code is ErrorCode.SESSION_CANCELED
    finally:
        await backend.close()


async def test_incompatible_host_is_refused_and_stopped(desktop: vdesk.DesktopState) -> None:
    client = HostClient(proxy_config("get_capabilities=native_host_incompatible:1:final"))
    with pytest.raises(DeskpilotError) as info:
        await client.start()
    assert info.value.code is ErrorCode.NATIVE_HOST_INCOMPATIBLE
    assert client.returncode is not None  # nothing left running


async def test_no_shell_and_stderr_goes_to_the_log(
    desktop: vdesk.DesktopState, tmp_path: Any
) -> None:
    log = tmp_path / "host.log"
    client = HostClient(fast_config(log_path=log))
    await client.start()
    try:
        pid = client.pid
        assert pid is not None
        assert cmdline(pid)[1:4] == [b"-I", b"-m", b"deskpilot.host"]
        assert os.readlink(f"/proc/{pid}/fd/2") == str(log)
        assert os.stat(log).st_mode & 0o777 == 0o600
    finally:
        await client.close()


async def test_a_host_setting_it_cannot_use_is_refused_by_name_at_start(
    desktop: vdesk.DesktopState, tmp_path: Any
) -> None:
    """A mistyped DESKPILOT_* value used to fall back silently (or crash with a traceback):
    the host refuses to start, and the client's error names each variable and what it
    takes. Fixed, the same configuration starts."""
    env = dict(os.environ)
    env["DESKPILOT_TREE_DEADLINE_MS"] = "1.5s"
    env["DESKPILOT_HOST_LOG_LEVEL"] = "verbose"
    log = tmp_path / "host.log"
    client = HostClient(fast_config(env=env, log_path=log))
    t0 = time.monotonic()
    with pytest.raises(DeskpilotError) as info:
        await client.start()
    err = info.value
    assert err.code is ErrorCode.ENVIRONMENT_UNAVAILABLE
    assert err.details == {
        "exitCode": 78,
        "reason": "host_setting_invalid",
        "settings": ["DESKPILOT_TREE_DEADLINE_MS", "DESKPILOT_HOST_LOG_LEVEL"],
    }
    assert "DESKPILOT_TREE_DEADLINE_MS='1.5s' cannot be used" in err.message
    assert "a number of milliseconds of at least 1" in err.message
    assert "DESKPILOT_HOST_LOG_LEVEL='verbose' cannot be used" in err.message
    assert time.monotonic() - t0 < 10  # not a handshake timeout
    assert client.returncode == 78
    # fixed, it starts; a deadline above the cap is used at the cap and said in the log
    env["DESKPILOT_TREE_DEADLINE_MS"] = "60000"
    env["DESKPILOT_HOST_LOG_LEVEL"] = "info"
    at = log.stat().st_size
    fixed = HostClient(fast_config(env=env, log_path=log))
    await fixed.start()
    try:
        assert (await fixed.ping())["type"] == "pong"
    finally:
        await fixed.close()
    said = log.read_text()[at:]
    assert "DESKPILOT_TREE_DEADLINE_MS='60000' is above the cap: tree reads use 5,000 ms" in said
