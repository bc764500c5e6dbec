"""The supervisor with real host processes: crashes, the restart budget, the heartbeat."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from deskpilot import desktop as vdesk
from deskpilot.desktop.apps import App
from deskpilot.hostclient.backend import HostBackend
from deskpilot.hostclient.supervisor import HostSupervisor
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import ExecuteAction, FocusWindowAction, TargetSpec

from .conftest import alive, eventually, fast_config, kill9, wait_window

pytestmark = pytest.mark.desktop


async def _wait_pending(backend: HostBackend, n: int = 1) -> None:
    client = backend.supervisor.client
    assert client is not None
    for _ in range(400):
        if client.pending_count >= n:
            return
        await asyncio.sleep(0.005)
    raise AssertionError("the request never reached the host")


async def test_kill9_mid_observe_recovers_within_budget_then_refuses(
    desktop: vdesk.DesktopState, zenity_info: App
) -> None:
    env = dict(os.environ)
    env["DESKPILOT_HOST_TEST_HANG"] = "observe"  # the first host hangs inside observe
    backend = HostBackend(fast_config(env=env), heartbeat=False)
    try:
        window = await wait_window(backend, zenity_info.pid)
        await backend.bind_target("A", TargetSpec(window_id=window))
        first = backend.supervisor.client
        assert first is not None and first.pid is not None
        observing = asyncio.create_task(backend.observe("A"))
        await _wait_pending(backend)
        kill9(first.pid)
        with pytest.raises(DeskpilotError) as info:
            await observing
        assert info.value.code is ErrorCode.NATIVE_HOST_UNAVAILABLE
        assert info.value.details["exitCode"] == -signal.SIGKILL
        status = backend.status()
        assert status["state"] == "disconnected"  # recorded, not reconnected synchronously
        assert status["pid"] is None

        env.pop("DESKPILOT_HOST_TEST_HANG")  # the next host behaves
        t0 = time.monotonic()
        state = await backend.observe("A")
        recovery = time.monotonic() - t0
        assert recovery < 15.0
        # the binding survived the reconnect: the bound window, not the foreground
        assert state.observation.window.window_id == window
        second = backend.supervisor.client
        assert second is not None and second.pid != first.pid
        status = backend.status()
        assert status["state"] == "ready"
        assert status["restartsBySession"] == {"A": 1}
        assert status["generation"] == 2

        assert second.pid is not None
        kill9(second.pid)
        await asyncio.sleep(0.3)
        with pytest.raises(DeskpilotError) as info:
            await backend.observe("A")
        assert info.value.code is ErrorCode.NATIVE_HOST_UNAVAILABLE
        assert info.value.details["diagnosticCode"] == "native_host_restart_budget_exhausted"
        t0 = time.monotonic()
        with pytest.raises(DeskpilotError) as info:
            await backend.observe("A")
        assert time.monotonic() - t0 < 0.05  # fails fast, nothing is spawned
        assert backend.supervisor.start_attempts == 2
        status = backend.status()
        assert status["state"] == "failed"
        assert status["budgetExhaustedSessions"] == ["A"]

        # cancelling the session resets its budget
        await backend.cancel_session("A")
        status = backend.status()
        assert status["budgetExhaustedSessions"] == []
        assert status["state"] != "failed"
        state = await backend.observe("B")
        assert backend.status()["state"] == "ready"
        assert backend.status()["restartsBySession"] == {"B": 1}
    finally:
        await backend.close()


async def test_reconnect_is_announced_and_keeps_bindings(
    desktop: vdesk.DesktopState, zenity_info: App
) -> None:
    backend = HostBackend(fast_config(), heartbeat=False)
    announced: list[int | None] = []

    def reconnected() -> None:  # runs once the new host is ready
        client = backend.supervisor.client
        announced.append(client.pid if client is not None and client.alive else None)

    backend.on_reconnect(reconnected)
    try:
        window = await wait_window(backend, zenity_info.pid)
        await backend.bind_target("A", TargetSpec(window_id=window))
        old = (await backend.observe("A", include_screenshot=False)).observation
        first = backend.supervisor.client
        assert first is not None and first.pid is not None
        assert announced == []  # the first start is no reconnect
        kill9(first.pid)
        await asyncio.sleep(0.3)
        await backend.observe("B", include_screenshot=False)  # B's acquire reconnects
        second = backend.supervisor.client
        assert second is not None and second is not first
        assert announced == [second.pid]  # the kernel drops its frames here
        assert backend.binding("A") == TargetSpec(window_id=window)
        # the new host knows none of the old frames: handed over directly, it refuses one
        with pytest.raises(DeskpilotError) as info:
            await backend.execute(
                ExecuteAction(
                    id=0,
                    session_id="A",
                    frame_id=old.frame_id,
                    tree_version=old.tree_version,
                    action=FocusWindowAction(),
                )
            )
        assert info.value.code is ErrorCode.STALE_FRAME
        assert second.sent["execute_action"] == 1
        assert second.alive and backend.supervisor.client is second
        fresh = (await backend.observe("A", include_screenshot=False)).observation
        assert fresh.window.window_id == window  # the binding survived the reconnect
        assert announced == [second.pid]
    finally:
        await backend.close()


async def test_other_errors_keep_the_connection(
    desktop: vdesk.DesktopState, zenity_info: App
) -> None:
    backend = HostBackend(fast_config(), heartbeat=False)
    try:
        window = await wait_window(backend, zenity_info.pid)
        await backend.bind_target("S", TargetSpec(window_id=window))
        obs = (await backend.observe("S", include_screenshot=False)).observation
        client = backend.supervisor.client
        assert client is not None
        # a wrong tree version reaches the host and comes back stale_tree: not a drop
        with pytest.raises(DeskpilotError) as info:
            await backend.execute(
                ExecuteAction(
                    id=0,
                    session_id="S",
                    frame_id=obs.frame_id,
                    tree_version="t-wrong",
                    action=FocusWindowAction(),
                )
            )
        assert info.value.code is ErrorCode.STALE_TREE
        assert client.alive and backend.supervisor.client is client
        # a vanished target is an error, not a drop
        with pytest.raises(DeskpilotError) as info:
            await backend.observe("S", TargetSpec(window_id="0x7fffff0"))
        assert not info.value.code.drops_connection
        assert client.alive
    finally:
        await backend.close()


async def _stop(pid: int) -> None:
    os.kill(pid, signal.SIGSTOP)


async def test_heartbeat_unhealthy_after_three_failures_then_reconnects(
    desktop: vdesk.DesktopState,
) -> None:
    sup = HostSupervisor(fast_config(heartbeat_timeout_s=0.3), heartbeat=False)
    try:
        first = await sup.acquire(None)
        pid = first.pid
        assert pid is not None
        assert await sup.heartbeat_once() is True
        await _stop(pid)
        assert await sup.heartbeat_once() is False
        assert await sup.heartbeat_once() is False
        assert sup.status().heartbeat_failures == 2
        assert sup.client is first and sup.state == "ready"  # two failures are not enough
        os.kill(pid, signal.SIGCONT)
        assert await sup.heartbeat_once() is True
        assert sup.heartbeat_failures == 0
        await _stop(pid)
        for _ in range(3):
            await sup.heartbeat_once()
        assert sup.client is not first
        assert sup.client is not None and sup.client.alive
        assert sup.heartbeat_reconnects == 1
        assert sup.state == "ready" and sup.heartbeat_failures == 0
        await asyncio.sleep(0.1)
        assert not alive(pid)  # the stopped host was killed, not left behind
    finally:
        await sup.close()


async def test_heartbeat_loop_runs_by_itself(desktop: vdesk.DesktopState) -> None:
    sup = HostSupervisor(
        fast_config(heartbeat_interval_s=0.2, heartbeat_timeout_s=0.2), heartbeat=True
    )
    try:
        first = await sup.acquire(None)
        assert first.pid is not None
        await _stop(first.pid)
        await eventually(
            lambda: sup.client is not first and sup.client is not None and sup.client.alive, 10
        )
        assert sup.heartbeat_reconnects == 1
        assert sup.client is not None and sup.client.pid != first.pid
        # the reconnect is not charged to any session's budget
        assert sup.status().restarts_by_session == {}
    finally:
        await sup.close()


async def test_a_host_refused_for_a_setting_is_not_started_again_into_the_same_refusal(
    desktop: vdesk.DesktopState,
) -> None:
    """The supervisor's environment does not change while it runs: a host that refused to
    start for a setting would refuse again, so every later call gets that refusal at once
    (not a second start, not a restart-budget error that hides the reason)."""
    env = dict(os.environ)
    env["DESKPILOT_TREE_DEADLINE_MS"] = "soon"
    sup = HostSupervisor(fast_config(env=env), heartbeat=False)
    try:
        errors = []
        for _ in range(3):
            with pytest.raises(DeskpilotError) as info:
                await sup.acquire()
            errors.append(info.value)
        assert all(e.details.get("reason") == "host_setting_invalid" for e in errors), errors
        assert all(e.details.get("settings") == ["DESKPILOT_TREE_DEADLINE_MS"] for e in errors)
        assert sup.restarts_total == 0  # one start in all
    finally:
        await sup.close()
