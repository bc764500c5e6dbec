"""The contract clients rely on: tool list, bad arguments, stateId expiry, budgets, controls."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from typing import Any

from mcp_helpers import (
    astart_app,
    diag_of,
    element_id,
    has_image,
    memory_client,
    state_id_of,
    text_of,
)

from deskpilot.desktop.apps import App
from deskpilot.mcp.instructions import INSTRUCTIONS
from deskpilot.runtime.budget import BudgetMode
from deskpilot.runtime.diagnostics import ActionOutcome
from deskpilot.runtime.recovery import Recovery
from deskpilot.runtime.runtime import RuntimeConfig
from deskpilot.runtime.state_ids import AppKey

OBSERVATION = {
    "get_capabilities",
    "diagnose_native_host",
    "list_apps",
    "list_windows",
    "get_screen_state",
    "get_app_state",
    "capture_app_snapshot",
    "screenshot",
}
ACTIONS = {
    "click",
    "type_text",
    "paste",
    "set_value",
    "invoke_element",
    "press_key",
    "scroll",
    "drag",
    "select_text",
    "perform_secondary_action",
}
DELEGATED = {"start_task", "get_status", "wait_for_completion", "open_app", "bind_target"}
CONTROL = {"pause", "resume", "stop", "takeover"}


async def test_tools_and_instructions() -> None:
    async with memory_client() as client:
        tools = (await client.list_tools()).tools
        names = {t.name for t in tools}
        assert names == OBSERVATION | ACTIONS | DELEGATED | CONTROL | {"status"}
        assert len(tools) == 28
        for t in tools:
            assert t.input_schema["additionalProperties"] is False
        click = next(t for t in tools if t.name == "click")
        assert set(click.input_schema["properties"]) == {
            "state_id",
            "element_id",
            "x",
            "y",
            "button",
            "count",
            "modifiers",
            "expect",
        }
        held = click.input_schema["properties"]["modifiers"]
        assert held["items"]["enum"] == ["ctrl", "shift", "alt", "super"], held
        expect = click.input_schema["properties"]["expect"]
        kinds = {
            ref.rsplit("/", 1)[-1]
            for ref in json.dumps(expect).split('"$ref": "')[1:]
            for ref in [ref.split('"', 1)[0]]
        }
        assert {"AccessibilitySpec", "FileSpec", "VisualSpec"} <= kinds, kinds
    lowered = INSTRUCTIONS.lower()
    assert lowered.index("semantic element") < lowered.index("click with element_id")
    assert lowered.index("click with element_id") < lowered.index("x, y")
    assert lowered.index("x, y") < lowered.index("press_key")
    assert "never repeat the same" in lowered


async def test_bad_arguments_are_clear_errors_and_the_server_keeps_serving() -> None:
    async with memory_client() as client:
        cases: list[tuple[str, Any, str]] = [
            ("click", {"state_id": "x", "element_id": 1, "bogus": 1}, "bogus: unknown field"),
            ("click", {"state_id": "x"}, "element_id"),
            ("click", {"state_id": "x", "element_id": 1, "modifiers": ["meta"]}, "modifiers"),
            (
                "click",
                {"state_id": "x", "element_id": 1, "modifiers": ["ctrl", "ctrl"]},
                "each modifier at most once",
            ),
            ("press_key", {"state_id": "x", "keys": 5}, "keys"),
            ("drag", {"state_id": "x", "from": "{not json", "to": {"x": 1, "y": 1}}, "from"),
            ("get_app_state", {"app": {"a": 1}}, "app"),
        ]
        for tool, args, needle in cases:
            r = await client.call_tool(tool, args)
            assert r.is_error, (tool, text_of(r))
            d = diag_of(r)
            assert d["code"] == "invalid_request" and needle in d["message"], d
            assert d["actionOutcome"] in ("not_dispatched", "not_applicable")
        r = await client.call_tool("type_text", {"state_id": "st_x", "text": "secret words"})
        d = diag_of(r)
        assert d["code"] == "state_id_invalid" and "secret" not in text_of(r)
        r = await client.call_tool("start_task", {"goal": "anything"})  # no app or window_id
        assert r.is_error and diag_of(r)["code"] == "invalid_request"
        assert "app or window_id" in diag_of(r)["message"]
        for tool in ("get_status", "wait_for_completion"):
            r = await client.call_tool(tool, {"goal": "anything"})  # not a field of theirs
            assert r.is_error and diag_of(r)["code"] == "invalid_request", tool
            r = await client.call_tool(tool, {})  # this client started no task
            assert r.is_error and diag_of(r)["code"] == "session_not_found", tool
        status = await client.call_tool("status", {})
        assert not status.is_error


async def test_state_id_expires(calculator: App) -> None:
    async with memory_client(RuntimeConfig(state_ttl_s=0.5)) as client:
        state = await client.call_tool("get_app_state", {"app": calculator.pid})
        await asyncio.sleep(0.7)
        r = await client.call_tool(
            "click", {"state_id": state_id_of(state), "element_id": element_id(state, '"1 1"')}
        )
        d = diag_of(r)
        assert r.is_error and d["code"] == "state_id_invalid"
        assert d["details"]["reason"] == "expired" and d["actionOutcome"] == "not_dispatched"


async def test_state_id_is_bound_to_the_turn(calculator: App) -> None:
    async with memory_client() as client:
        state = await client.call_tool(
            "get_app_state", {"app": calculator.pid}, meta={"turn_id": "t1"}
        )
        args = {"state_id": state_id_of(state), "element_id": element_id(state, '"1 1"')}
        r = await client.call_tool("click", args, meta={"turn_id": "t2"})
        assert r.is_error and diag_of(r)["code"] == "state_id_invalid"
        # t2 ended t1: its states are gone even when t1 is named again
        r = await client.call_tool("click", args, meta={"turn_id": "t1"})
        assert r.is_error and diag_of(r)["code"] == "state_id_invalid"


async def test_bounded_budget_expiry_cancels_an_in_flight_call(dp_desktop: Any) -> None:
    config = RuntimeConfig(budget_mode=BudgetMode.BOUNDED, bounded_duration_ms=1500)
    async with memory_client(config) as client:
        st = json.loads(text_of(await client.call_tool("status", {})).split("\n\n")[0])
        assert st["budget"]["durationMs"] == 1500 and st["budget"]["maxActions"] == 30
        kernel = client.runtime.ctx.kernel  # type: ignore[attr-defined]

        async def person() -> None:  # `sleep 30` is an L3 launch: the person confirms it
            while not kernel.confirmations.pending():  # noqa: ASYNC110 - a row in SQLite
                await asyncio.sleep(0.02)
            kernel.confirmations.resolve(kernel.confirmations.pending()[0].id, True, "test")

        t0 = time.monotonic()
        # a process that never shows a window: open_app would wait 20 s for it
        r, _ = await asyncio.gather(
            client.call_tool("open_app", {"app": "sleep", "args": ["30"]}), person()
        )
        elapsed = time.monotonic() - t0
        assert r.is_error, text_of(r)
        d = diag_of(r)
        assert d["code"] == "budget_exhausted" and d["details"]["cancelledInFlight"] is True
        assert d["actionOutcome"] == "unknown"  # it was launched; cancelling undoes nothing
        assert 1.0 < elapsed < 5.0
        after = await client.call_tool("list_apps", {})
        assert after.is_error and diag_of(after)["code"] == "budget_exhausted"
        status = json.loads(text_of(await client.call_tool("status", {})).split("\n\n")[0])
        assert status["budget"]["remainingMs"] == 0 and status["actions"] == 1
        (row,) = kernel.broker.actions.list(status["session"]["sessionId"])
        assert row.kind == "open_app" and row.outcome["watchEnded"] == "cancelled"
        os.kill(row.outcome["pid"], signal.SIGKILL)


async def test_bounded_actions_spent_reads_still_work(calculator: App) -> None:
    config = RuntimeConfig(budget_mode=BudgetMode.BOUNDED, bounded_max_actions=1)
    async with memory_client(config) as client:
        s = await client.call_tool("get_app_state", {"app": calculator.pid})
        r = await client.call_tool(
            "click", {"state_id": state_id_of(s), "element_id": element_id(s, '"2 2"')}
        )
        assert not r.is_error, text_of(r)
        r2 = await client.call_tool(
            "click", {"state_id": state_id_of(r), "element_id": element_id(r, '"3 3"')}
        )
        d = diag_of(r2)
        assert d["code"] == "budget_exhausted" and d["details"]["budget"] == "actions"
        assert d["actionOutcome"] == "not_dispatched"
        again = await client.call_tool("get_app_state", {"app": calculator.pid})
        assert not again.is_error and has_image(again)


async def test_unbounded_status_reports_null_limits_and_counts(calculator: App) -> None:
    async with memory_client() as client:
        s = await client.call_tool("get_app_state", {"app": "gnome-calculator"})
        await client.call_tool(
            "click", {"state_id": state_id_of(s), "element_id": element_id(s, '"5 5"')}
        )
        status = json.loads(text_of(await client.call_tool("status", {})).split("\n\n")[0])
        b = status["budget"]
        assert b["mode"] == "unbounded"
        assert (
            b["durationMs"] is b["maxActions"] is b["remainingMs"] is b["remainingActions"] is None
        )
        assert status["actions"] == 1 and status["elapsedMs"] > 0
        assert status["halt"]["halted"] is False and status["recovery"] is None
        assert status["session"]["state"] == "observing"
        assert status["lastDiagnostic"]["tool"] == "click"
        # switching to bounded keeps the counters
        client.runtime.set_budget_mode(BudgetMode.BOUNDED)  # type: ignore[attr-defined]
        status = json.loads(text_of(await client.call_tool("status", {})).split("\n\n")[0])
        assert status["budget"]["remainingActions"] == 29 and status["actions"] == 1


async def test_pause_resume_takeover_stop_and_bind_target(calculator: App) -> None:
    async with memory_client() as client:
        s = await client.call_tool("get_app_state", {"app": "gnome-calculator"})
        bind = await client.call_tool("bind_target", {"app": calculator.pid})
        assert bind.is_error and diag_of(bind)["code"] == "invalid_state_transition"
        paused = await client.call_tool("pause", {})
        assert '"state": "paused"' in text_of(paused)
        r = await client.call_tool(
            "click", {"state_id": state_id_of(s), "element_id": element_id(s, '"1 1"')}
        )
        assert r.is_error and diag_of(r)["code"] == "state_id_invalid"  # pause dropped it
        s2 = await client.call_tool("get_app_state", {"app": "gnome-calculator"})
        r = await client.call_tool(
            "click", {"state_id": state_id_of(s2), "element_id": element_id(s2, '"1 1"')}
        )
        assert r.is_error and diag_of(r)["code"] == "session_not_executable"
        bind = await client.call_tool("bind_target", {"app": calculator.pid})
        assert not bind.is_error, text_of(bind)
        await client.call_tool("resume", {})
        s3 = await client.call_tool("get_app_state", {})  # the bound target
        assert f"pid={calculator.pid}" in text_of(s3).splitlines()[0]
        r = await client.call_tool(
            "click", {"state_id": state_id_of(s3), "element_id": element_id(s3, '"1 1"')}
        )
        assert not r.is_error, text_of(r)
        taken = await client.call_tool("takeover", {})
        assert '"takenOver": true' in text_of(taken)
        await client.call_tool("resume", {})
        stopped = await client.call_tool("stop", {"reason": "user said so"})
        assert not stopped.is_error
        s4 = await client.call_tool("get_app_state", {"app": calculator.pid})
        r = await client.call_tool(
            "click", {"state_id": state_id_of(s4), "element_id": element_id(s4, '"1 1"')}
        )
        assert r.is_error and diag_of(r)["code"] == "session_canceled"
        # a new turn may act again
        s5 = await client.call_tool("get_app_state", {"app": calculator.pid}, meta={"turn_id": "n"})
        r = await client.call_tool(
            "click",
            {"state_id": state_id_of(s5), "element_id": element_id(s5, '"1 1"')},
            meta={"turn_id": "n"},
        )
        assert not r.is_error, text_of(r)


async def test_state_changed_recovery_allows_only_reading_the_same_app(calculator: App) -> None:
    async with memory_client() as client:
        runtime = client.runtime  # type: ignore[attr-defined]
        s = await client.call_tool("get_app_state", {"app": calculator.pid})
        turn = runtime.turns.peek(client.agent_session)  # type: ignore[attr-defined]
        turn.recovery = Recovery(
            app=AppKey(pid=calculator.pid, window_id="0x0"),
            app_name="gnome-calculator",
            failed_method="click",
            previous_action_outcome=ActionOutcome.UNKNOWN,
        )
        r = await client.call_tool(
            "click", {"state_id": state_id_of(s), "element_id": element_id(s, '"1 1"')}
        )
        d = diag_of(r)
        assert r.is_error and d["code"] == "state_changed"
        assert d["details"]["recovery"]["failedMethod"] == "click"
        for tool, args in (("list_apps", {}), ("open_app", {"app": "mousepad"})):
            r = await client.call_tool(tool, args)
            assert r.is_error and diag_of(r)["code"] == "state_changed", tool
        status = json.loads(text_of(await client.call_tool("status", {})).split("\n\n")[0])
        assert status["recovery"]["previousActionOutcome"] == "unknown"
        ok = await client.call_tool("get_app_state", {"app": calculator.pid})
        assert not ok.is_error and turn.recovery is None  # a new state lifts it
        assert not (await client.call_tool("list_apps", {})).is_error


async def test_idle_release_and_other_observation_tools(calculator: App) -> None:
    async with memory_client(RuntimeConfig(idle_release_s=0.3)) as client:
        runtime = client.runtime  # type: ignore[attr-defined]
        for tool in ("get_capabilities", "diagnose_native_host", "list_windows", "list_apps"):
            r = await client.call_tool(tool, {})
            assert not r.is_error, (tool, text_of(r))
        screen = await client.call_tool("get_screen_state", {})
        assert not screen.is_error and has_image(screen) and "state_id=" in text_of(screen)
        shot = await client.call_tool("screenshot", {"app": calculator.pid})
        assert not shot.is_error and has_image(shot) and "state_id=" not in text_of(shot)
        snap = await client.call_tool("capture_app_snapshot", {"app": calculator.pid})
        assert runtime.ctx.snapshots is not None  # the vault opens in the test data dir
        assert not snap.is_error, text_of(snap)
        assert json.loads(text_of(snap).split("\n\n")[0])["snapshotId"]
        s = await client.call_tool("get_app_state", {"app": calculator.pid})
        agent_session = client.agent_session  # type: ignore[attr-defined]
        assert runtime.ctx.sessions.get(agent_session) is not None
        await asyncio.sleep(0.6)
        assert runtime.ctx.sessions.get(agent_session) is None  # released while idle
        assert runtime.ctx.sessions.released >= 1
        r = await client.call_tool(
            "click", {"state_id": state_id_of(s), "element_id": element_id(s, '"1 1"')}
        )
        assert r.is_error and diag_of(r)["code"] == "state_id_invalid"
        again = await client.call_tool("get_app_state", {"app": calculator.pid})
        assert not again.is_error  # rebuilt transparently


async def test_snapshot_preview_is_revoked_when_the_turn_ends(calculator: App) -> None:
    import httpx

    from deskpilot.web.preview import PreviewServer

    async with memory_client() as client:
        port = client.runtime.ctx.snapshots  # type: ignore[attr-defined]
        previews = PreviewServer(port.service)
        await previews.start_async()
        try:
            snap = await client.call_tool(
                "capture_app_snapshot", {"app": calculator.pid}, meta={"turn_id": "a"}
            )
            data = json.loads(text_of(snap).split("\n\n")[0])
            url = data["previewUrl"]
            assert url.startswith("http://127.0.0.1:")
            async with httpx.AsyncClient() as http:
                ok = await http.get(url)
                assert ok.status_code == 200 and ok.content[:8] == b"\x89PNG\r\n\x1a\n"
                await client.call_tool("status", {}, meta={"turn_id": "b"})  # a new turn
                gone = await http.get(url)
                assert gone.status_code in (401, 403, 404, 410)
        finally:
            await previews.stop_async()


async def test_a_binding_to_a_window_that_closed_is_dropped_with_advice(calculator: App) -> None:
    dialog = await astart_app(["zenity", "--info", "--title=Bound dialog", "--text=bye"])
    try:
        async with memory_client() as client:
            await client.call_tool("pause", {})
            bind = await client.call_tool("bind_target", {"app": dialog.pid})
            assert not bind.is_error, text_of(bind)
            await client.call_tool("resume", {})
            bound = await client.call_tool("get_app_state", {})
            assert f"pid={dialog.pid}" in text_of(bound).splitlines()[0], text_of(bound)
            dialog.stop()  # the bound window goes away
            gone = await client.call_tool("get_app_state", {})
            assert gone.is_error
            d = diag_of(gone)
            assert d["code"] == "target_not_found"
            assert d["details"]["reason"] == "bound_window_closed", d
            # the session is unbound now: the calculator can be read and acted on again
            s = await client.call_tool("get_app_state", {"app": calculator.pid})
            r = await client.call_tool(
                "click", {"state_id": state_id_of(s), "element_id": element_id(s, '"1 1"')}
            )
            assert not r.is_error, text_of(r)
    finally:
        dialog.stop()
