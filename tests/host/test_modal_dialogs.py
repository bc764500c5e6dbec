"""Actions that open a modal dialog: through the real host, against real mousepad.

GTK3 runs a menu item's or a button's handler inside the D-Bus dispatch of the accessibility
call that activated it, and ``gtk_dialog_run`` keeps that dispatch open until the dialog
closes. The host must come back promptly, keep reading the app while the dialog runs, survive
key presses into the dialog, and not deadlock the app when it exits with the dialog still up.
"""

# no `from __future__ import annotations`: dbus-fast reads D-Bus signatures from annotations
import asyncio
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from dbus_fast.aio import MessageBus
from dbus_fast.service import ServiceInterface, method
from host_harness import HostProcess, act, launch_accessible, observe, wait_for

from deskpilot.desktop import apps
from deskpilot.host.atspi.action_conns import ACTION_REPLY_WAIT_S
from deskpilot.host.atspi.bus import ROOT_PATH, a11y_address, connect_session
from deskpilot.host.atspi.client import AtspiClient
from deskpilot.host.atspi.model import ElementRef, NodeRef, SemanticOp

pytestmark = pytest.mark.desktop

PROMPT_S = 2.0  # an action that opens a modal dialog must come back well within this


def line_id(tree: str, pattern: str) -> int:
    for line in tree.splitlines():
        if re.search(pattern, line):
            return int(line.rsplit("[", 1)[1].rstrip("]"))
    raise AssertionError(f"no line matches {pattern!r} in:\n{tree}")


@pytest.fixture
def mousepad(desktop: object) -> Iterator[apps.App]:
    app = launch_accessible(["mousepad"])  # a throwaway XDG_CONFIG_HOME: no restore dialog
    try:
        yield app
    finally:
        app.stop()


def window_id(host: HostProcess, title: str) -> str:
    def find() -> str | None:
        for w in host.call({"type": "list_windows"})["windows"]:
            if w["title"] == title:
                return str(w["windowId"])
        return None

    found: str = wait_for(find, timeout=10)
    return found


def timed_observe(host: HostProcess, target: dict[str, Any], session: str) -> dict[str, Any]:
    """An answer within ``PROMPT_S``, read again while it is *partial* — the app answered but
    not all of its tree by the read's deadline (a loaded machine: the file chooser is big),
    as an agent would read again. A *stale* answer (the app answered nothing) is not retried:
    that is the deadlock this file guards against."""
    for _ in range(3):
        t0 = time.monotonic()
        obs, _ = observe(host, target, session=session, includeScreenshot=False)
        assert time.monotonic() - t0 < PROMPT_S, "the app stopped answering accessibility calls"
        read = obs.get("treeRead") or {}
        assert read.get("staleAgeMs") is None, f"the app answered nothing: {read}"
        if read.get("partial") is None:
            return obs
    return obs


def observe_until(
    host: HostProcess,
    target: dict[str, Any],
    session: str,
    ok: Callable[[dict[str, Any]], bool],
    timeout: float = 10,
    *,
    prompt: bool = True,
) -> dict[str, Any]:
    """Observe until ``ok`` holds; with ``prompt`` each answer must come within ``PROMPT_S``
    (off while the app is still starting)."""

    def look() -> dict[str, Any] | None:
        if prompt:
            obs = timed_observe(host, target, session)
        else:
            obs = observe(host, target, session=session, includeScreenshot=False)[0]
        return obs if ok(obs) else None

    found: dict[str, Any] = wait_for(look, timeout=timeout, interval=0.2)
    return found


def open_save_as(host: HostProcess, app: apps.App, session: str) -> dict[str, Any]:
    """File › Save As… by semantic clicks; returns the action result of the second click."""
    target = {"pid": app.pid}
    obs = observe_until(
        host, target, session, lambda o: 'menu "File"' in o["tree"], 20, prompt=False
    )
    act(host, obs, {"kind": "click", "elementId": line_id(obs["tree"], r'menu "File"')}, session)
    obs = timed_observe(host, target, session)
    item = line_id(obs["tree"], r'menuItem "Save As')
    t0 = time.monotonic()
    result = act(host, obs, {"kind": "click", "elementId": item}, session)
    result["wallS"] = time.monotonic() - t0
    return result


def closed(obs: dict[str, Any]) -> bool:
    """The observed window is no longer the Save As dialog."""
    return "Save As" not in obs["window"]["title"]


def test_menu_item_opening_a_modal_dialog_returns_and_the_dialog_can_be_driven(
    mousepad: apps.App, tmp_path: Path
) -> None:
    out = tmp_path / "saved-from-dialog.txt"
    with HostProcess() as host:
        obs = observe_until(
            host, {"pid": mousepad.pid}, "m", lambda o: "- textField" in o["tree"], 20, prompt=False
        )
        field = line_id(obs["tree"], r"- textField")
        act(host, obs, {"kind": "set_value", "elementId": field, "value": "modal ok"}, "m")

        result = open_save_as(host, mousepad, "m")
        assert result["type"] == "action_result", result
        assert result["dispatched"] is True and result["method"] == "semantic", result
        assert result["wallS"] < PROMPT_S, result
        dialog = {"windowId": window_id(host, "Save As")}

        # the app answers while the dialog runs, before and after a key press into it (the
        # key press is what used to deadlock it: atk-bridge re-entered a busy connection)
        obs = timed_observe(host, dialog, "m")
        assert re.search(r'dialog "Save As" \[modal\]', obs["tree"]), obs["tree"]
        keys = act(host, obs, {"kind": "press_key", "keys": ["ctrl+a", "BackSpace"]}, "m")
        assert keys["dispatched"] is True, keys
        obs = timed_observe(host, dialog, "m")
        assert obs["elementCount"] > 20, obs["tree"]

        name = line_id(obs["tree"], r'textField "Name')
        act(host, obs, {"kind": "set_value", "elementId": name, "value": str(out)}, "m")
        obs = observe_until(
            host,
            dialog,
            "m",
            lambda o: bool(re.search(r'button "Save"(?! \[disabled\])', o["tree"])),
        )
        save = act(
            host,
            obs,
            {"kind": "click", "elementId": line_id(obs["tree"], r'button "Save"')},
            "m",
        )
        assert save["dispatched"] is True, save
        wait_for(lambda: out.exists() and out.read_text() == "modal ok", timeout=10)

        # the dialog is gone and the main window keeps answering
        obs = observe_until(host, {"pid": mousepad.pid}, "m", closed)
        assert obs["elementCount"] > 5, obs["tree"]
        assert out.name in obs["window"]["title"], obs["window"]


def test_the_host_exiting_with_the_dialog_open_does_not_deadlock_the_app(
    mousepad: apps.App,
) -> None:
    with HostProcess() as first:
        result = open_save_as(first, mousepad, "a")
        assert result["dispatched"] is True and result["wallS"] < PROMPT_S, result
        window_id(first, "Save As")
    # the first host is gone; the socket its action ran on must not have closed under the app
    with HostProcess() as second:
        dialog = {"windowId": window_id(second, "Save As")}
        obs = timed_observe(second, dialog, "b")
        act(second, obs, {"kind": "press_key", "keys": ["a"]}, "b")
        obs = timed_observe(second, dialog, "b")
        assert obs["elementCount"] > 20, obs["tree"]
        cancel = line_id(obs["tree"], r'button "Cancel"')
        act(second, obs, {"kind": "click", "elementId": cancel}, "b")
        obs = observe_until(second, {"pid": mousepad.pid}, "b", closed)
        assert re.search(r"- textField", obs["tree"]), obs["tree"]


# ------------------------------------------------------------------ an app that answers late


class _Application(ServiceInterface):
    def __init__(self) -> None:
        super().__init__("org.a11y.atspi.Application")

    @method()
    def GetApplicationBusAddress(self) -> "s":  # noqa: F821
        return ""  # no private socket: actions use the bus, like GTK4 or Qt apps


class _SlowAction(ServiceInterface):
    """Replies to DoAction only after its handler ran (older atk-bridge, other toolkits)."""

    def __init__(self) -> None:
        super().__init__("org.a11y.atspi.Action")
        self.finished = 0

    @method()
    def GetActions(self) -> "a(sss)":  # noqa: F821
        return [["click", "", ""]]

    @method()
    async def DoAction(self, index: "i") -> "b":  # noqa: F821
        await asyncio.sleep(3.0)  # a modal dialog run before the reply
        self.finished += 1
        return True


async def test_an_action_whose_reply_does_not_come_counts_as_dispatched_promptly(
    desktop: object,
) -> None:
    session = await connect_session(None)
    app_bus = await MessageBus(bus_address=await a11y_address(session)).connect()
    slow = _SlowAction()
    app_bus.export(ROOT_PATH, _Application())
    app_bus.export("/slow", slow)
    element = ElementRef(
        id=1,
        ref=NodeRef(str(app_bus.unique_name), "/slow"),
        pid=os.getpid(),
        role="button",
        atspi_role=43,
        name="Slow",
        states=frozenset(),
        interfaces=frozenset({"Action"}),
        actions=("click",),
        extents=None,
    )
    try:
        async with await AtspiClient.connect() as client:
            for round_ in (1, 2):
                t0 = time.monotonic()
                result = await client.perform(element, SemanticOp.invoke(), settle=False)
                spent = time.monotonic() - t0
                assert ACTION_REPLY_WAIT_S <= spent < ACTION_REPLY_WAIT_S + 0.7, spent
                assert "has not returned from it yet" in result.detail, result
                assert slow.finished == round_ - 1  # the app really was still inside it
                await asyncio.sleep(3.0)
                assert slow.finished == round_
            # the client keeps serving other calls meanwhile and after
            assert await client.applications() is not None
    finally:
        app_bus.disconnect()
        session.disconnect()
