"""Synthetic input and action freshness through the real host: typing, keys, held-key safety."""

from __future__ import annotations

import queue
import time
from typing import Any

import pytest
from host_harness import HostProcess, act, observe, wait_for
from Xlib import XK, display

from deskpilot.desktop import apps
from deskpilot.protocol.wire import RESPONSE_ADAPTER

pytestmark = pytest.mark.desktop


def start_zenity(title: str) -> apps.App:
    return apps.launch(
        ["zenity", "--entry", f"--title={title}", "--text=Your text"], capture_stdout=True
    )


def wait_window(host: HostProcess, pid: int) -> dict[str, Any]:
    def find() -> dict[str, Any] | None:
        windows = host.call({"type": "list_windows"})["windows"]
        return next((w for w in windows if w["app"].get("pid") == pid and w["visible"]), None)

    found: dict[str, Any] = wait_for(find, timeout=20)
    return found


def keys_down(names: list[str]) -> list[bool]:
    d = display.Display()
    try:
        keymap = d.query_keymap()
        out = []
        for name in names:
            code = d.keysym_to_keycode(XK.string_to_keysym(name))
            out.append(bool(keymap[code // 8] & (1 << (code % 8))))
        return out
    finally:
        d.close()


def test_unicode_text_typed_with_xtest_reaches_the_app(host: HostProcess) -> None:
    zen = start_zenity("Typing test")
    try:
        window = wait_window(host, zen.pid)
        obs, png = observe(host, {"windowId": window["windowId"]})
        RESPONSE_ADAPTER.validate_python(obs)
        assert png is not None and obs["image"]["byteLength"] == len(png)
        # the entry sits in the middle band of the dialog: a synthetic click there focuses it
        result = act(host, obs, {"kind": "click", "point": {"x": 0.5, "y": 0.45}})
        assert result["type"] == "action_result", result
        assert result["method"] == "synthetic"
        obs, _ = observe(host, {"windowId": window["windowId"]})
        text = "héllo wörld ✓ Ωmega 日本"
        result = act(host, obs, {"kind": "type_text", "text": text})
        assert result["dispatched"] is True
        assert result["method"] == "synthetic"
        assert text not in repr(result)  # typed text is never echoed back
        obs, _ = observe(host, {"windowId": window["windowId"]})
        result = act(host, obs, {"kind": "press_key", "keys": ["Return"]})
        assert result["dispatched"] is True
        assert zen.proc.wait(timeout=10) == 0
        assert zen.proc.stdout is not None
        assert zen.proc.stdout.read().decode() == text + "\n"
    finally:
        zen.stop()


def test_an_action_needs_the_current_observation(host: HostProcess) -> None:
    zen = start_zenity("Freshness test")
    try:
        window = wait_window(host, zen.pid)
        target = {"windowId": window["windowId"]}
        first, _ = observe(host, target, session="fresh")
        second, _ = observe(host, target, session="fresh", includeScreenshot=False)
        assert second["frameId"] != first["frameId"]  # a new frame per observation
        stale = act(host, first, {"kind": "focus_window"}, session="fresh")
        assert stale["code"] == "stale_frame"
        assert stale["retryable"] is True
        wrong_tree = dict(second, treeVersion="t-other")
        assert act(host, wrong_tree, {"kind": "focus_window"}, session="fresh")["code"] == (
            "stale_tree"
        )
        third, _ = observe(host, target, session="fresh")
        unknown = act(host, third, {"kind": "invoke_element", "elementId": 99999}, "fresh")
        assert unknown["code"] == "stale_tree"
        assert unknown["details"]["elementId"] == 99999
        # the binding is gone after any action that passed the frame check
        assert act(host, third, {"kind": "focus_window"}, session="fresh")["code"] == (
            "stale_frame"
        )
        fourth, _ = observe(host, target, session="fresh")
        ok = act(host, fourth, {"kind": "focus_window"}, session="fresh")
        assert ok["type"] == "action_result"
        assert ok["dispatched"] is True
        assert act(host, fourth, {"kind": "focus_window"}, session="fresh")["code"] == (
            "stale_frame"
        )
        # sessions are separate: another session's observation does not count
        fifth, _ = observe(host, target, session="fresh")
        assert act(host, fifth, {"kind": "focus_window"}, session="other")["code"] == (
            "stale_frame"
        )
        # a window that went away makes the observation stale
        sixth, _ = observe(host, target, session="fresh")
        zen.stop()
        gone = act(host, sixth, {"kind": "focus_window"}, session="fresh")
        assert gone["code"] == "stale_tree"
    finally:
        zen.stop()


def test_bad_key_names_fail_before_any_key_is_pressed(host: HostProcess) -> None:
    zen = start_zenity("Key names")
    try:
        window = wait_window(host, zen.pid)
        obs, _ = observe(host, {"windowId": window["windowId"]})
        result = act(host, obs, {"kind": "press_key", "keys": ["shift", "hyper+nonsense"]})
        assert result["code"] == "invalid_request"
        assert keys_down(["Shift_L"]) == [False]
    finally:
        zen.stop()


def test_canceled_sessions_are_refused_and_the_memory_is_bounded(host: HostProcess) -> None:
    zen = start_zenity("Cancel test")
    try:
        window = wait_window(host, zen.pid)
        target = {"windowId": window["windowId"]}
        ack = host.call({"type": "cancel_session", "sessionId": "c-0"})
        assert ack == {"id": ack["id"], "type": "ack", "sessionId": "c-0"}
        obs, _ = observe(host, target, session="c-0")
        refused = act(host, obs, {"kind": "focus_window"}, session="c-0")
        assert refused["code"] == "session_canceled"
        for i in range(1, 65):  # 64 more: c-0 falls out of the FIFO
            host.call({"type": "cancel_session", "sessionId": f"c-{i}"})
        obs, _ = observe(host, target, session="c-0")
        assert act(host, obs, {"kind": "focus_window"}, session="c-0")["type"] == "action_result"
        obs, _ = observe(host, target, session="c-1")
        assert act(host, obs, {"kind": "focus_window"}, session="c-1")["code"] == (
            "session_canceled"
        )
    finally:
        zen.stop()


def _press_and_hang(hang: HostProcess, pid: int, session: str) -> None:
    window = wait_window(hang, pid)
    obs, _ = observe(hang, {"windowId": window["windowId"]}, session=session)
    hang.send(
        {
            "type": "execute_action",
            "sessionId": session,
            "frameId": obs["frameId"],
            "treeVersion": obs["treeVersion"],
            "action": {"kind": "press_key", "keys": ["ctrl+shift"]},
        }
    )
    wait_for(lambda: keys_down(["Control_L", "Shift_L"]) == [True, True], timeout=10)


def test_held_keys_are_released_when_stdin_closes(desktop: object) -> None:
    zen = start_zenity("Held keys")
    try:
        with HostProcess({"DESKPILOT_HOST_TEST_HANG": "press_key"}) as hang:
            _press_and_hang(hang, zen.pid, "held")
            time.sleep(0.2)
            assert keys_down(["Control_L", "Shift_L"]) == [True, True]  # still hanging
            started = time.monotonic()
            hang.close_stdin()
            assert hang.wait(timeout=5) == 0
            assert time.monotonic() - started < 1.0  # inside the client's 300 ms-ish grace
            assert keys_down(["Control_L", "Shift_L"]) == [False, False]
    finally:
        zen.stop()


def test_held_keys_are_released_when_the_session_is_canceled(desktop: object) -> None:
    zen = start_zenity("Cancel held keys")
    try:
        with HostProcess({"DESKPILOT_HOST_TEST_HANG": "press_key"}) as hang:
            _press_and_hang(hang, zen.pid, "doomed")
            hang.send({"type": "cancel_session", "sessionId": "doomed"})
            first, _ = hang.read_response()
            second, _ = hang.read_response()
            by_type = {first["type"]: first, second["type"]: second}
            assert by_type["ack"]["sessionId"] == "doomed"
            assert by_type["error"]["code"] == "session_canceled"
            assert keys_down(["Control_L", "Shift_L"]) == [False, False]
            assert hang.call({"type": "ping"})["type"] == "pong"  # still serving
    finally:
        zen.stop()


def test_the_hang_switch_hangs_inside_the_named_request(desktop: object) -> None:
    with HostProcess({"DESKPILOT_HOST_TEST_HANG": "ping"}) as hang:
        assert hang.call({"type": "list_windows"})["type"] == "windows"
        hang.send({"type": "ping"})
        with pytest.raises(queue.Empty):
            hang.read_response(timeout=1.0)
        hang.close_stdin()
        assert hang.wait(timeout=5) == 0


def test_paste_text_goes_through_the_clipboard(host: HostProcess) -> None:
    zen = start_zenity("Paste test")
    try:
        window = wait_window(host, zen.pid)
        target = {"windowId": window["windowId"]}
        obs, _ = observe(host, target, session="paste")
        act(host, obs, {"kind": "click", "point": {"x": 0.5, "y": 0.45}}, "paste")
        # a GtkEntry keeps at most 64 KiB; the > 200 KB (INCR) case is in test_host_apps
        text = "pasté ✓ " + "𝄞日" * 5_000 + " end"
        obs, _ = observe(host, target, session="paste")
        result = act(host, obs, {"kind": "paste_text", "text": text}, "paste", timeout=30)
        assert result["detail"] == "clipboard + ctrl+v", result
        assert text not in repr(result)
        obs, _ = observe(host, target, session="paste")
        act(host, obs, {"kind": "press_key", "keys": ["Return"]}, "paste")
        assert zen.proc.wait(timeout=10) == 0
        assert zen.proc.stdout is not None
        assert zen.proc.stdout.read().decode() == text + "\n"
        # the host gave the selection up: nothing of the text is left on the clipboard
        d = display.Display()
        try:
            assert d.get_selection_owner(d.intern_atom("CLIPBOARD")) == 0
        finally:
            d.close()
    finally:
        zen.stop()
