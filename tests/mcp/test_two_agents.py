"""Two agents on one ``deskpilot serve --transport http``: two ``mcp-session-id``s, two agent
sessions, one desktop, gnome-calculator.

The coordinator's rule stays: the agent session that acts last holds the desktop, and its
claim stops the other one's computer session (``desktop_claimed``). What these tests pin is
what the displaced agent is told and what it can still do: its next action is refused before
anything is sent, saying who took the desktop and how to go on; reading keeps working; the
next observation gives it a fresh session whose state it can act on (which takes the desktop
back); its states from before stay refused with a reason it can read. And turns: two agent
sessions that send the same ``turn_id`` share it, and a new ``turn_id`` moves only the one
that sent it.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp_helpers import (
    diag_of,
    element_id,
    has_image,
    memory_client,
    state_id_of,
    text_of,
)
from mcp_types.version import LATEST_HANDSHAKE_VERSION
from real_clients import Opened, display_of, open_python, status_json

from deskpilot.desktop.apps import App
from serve_kit import HttpServer

pytestmark = pytest.mark.desktop

CALC = {"app": "gnome-calculator"}


async def _click(opened: Opened, state: Any, label: str, meta: dict[str, Any] | None = None) -> Any:
    args = {"state_id": state_id_of(state), "element_id": element_id(state, f'"{label}"')}
    return await opened.call("click", args, meta)


def _ok(result: Any, display: str) -> Any:
    assert not result.is_error, text_of(result)
    assert display_of(text_of(result)) == display, text_of(result)
    return result


def _refused(result: Any, code: str, reason: str) -> dict[str, Any]:
    assert result.is_error, text_of(result)
    d = diag_of(result)
    assert (d["code"], d["details"]["reason"]) == (code, reason), d
    assert d["actionOutcome"] == "not_dispatched", d
    assert "may have run" not in d["message"], d
    return d


def _displaced(result: Any) -> dict[str, Any]:
    """The displaced agent's refusal: who took the desktop, that nothing was done, what next."""
    d = _refused(result, "session_canceled", "desktop_claimed")
    message = d["message"]
    assert "Another agent session of this deskpilot server" in message, message
    assert "nothing of this call was done" in message, message
    assert "get_app_state" in message and "acting takes the desktop back" in message, message
    return d


async def test_a_displaced_agent_is_told_reads_and_takes_the_desktop_back(
    calculator: App, server: HttpServer
) -> None:
    target = server.target
    async with (
        open_python("session", "http", version=LATEST_HANDSHAKE_VERSION, http=target) as a,
        open_python("session", "http", version=LATEST_HANDSHAKE_VERSION, http=target) as b,
    ):
        a1 = _ok(await _click(a, await a.call("get_app_state", CALC, None), "1 1"), "1")
        # B acts: its claim stops A's computer session (the coordinator's last-claim rule)
        b1 = _ok(await _click(b, await b.call("get_app_state", CALC, None), "2 2"), "12")

        # A's next action, on the state its own click returned, is refused before anything is
        # sent, and again while A has not observed
        _displaced(await _click(a, a1, "3 3"))
        _displaced(await _click(a, a1, "3 3"))
        # reads keep working for A
        for tool, args in (("list_apps", {}), ("screenshot", CALC)):
            r = await a.call(tool, args, None)
            assert not r.is_error, (tool, text_of(r))
        assert has_image(r)
        a2 = await a.call("get_app_state", CALC, None)
        _ok(a2, "12")  # the refused clicks did nothing
        # A's states from before the displacement died with its session, saying why
        d = _refused(await _click(a, a1, "3 3"), "state_id_invalid", "desktop_claimed")
        assert "another agent session took the desktop" in d["message"], d
        # acting on the new state works, and takes the desktop back from B
        _ok(await _click(a, a2, "4 4"), "124")
        st_a = status_json(await a.call("status", {}, None))
        # counted: the two clicks and the stale-state attempt (an attempt counts even when it
        # fails); not the displaced refusals, which come before the budget, like a stop's
        assert st_a["actions"] == 3 and st_a["session"]["state"] == "observing", st_a

        # now B is the displaced one, and is told so the same way
        _displaced(await _click(b, b1, "5 5"))
        b2 = _ok(await b.call("get_app_state", CALC, None), "124")
        _ok(await _click(b, b2, "5 5"), "1245")
        st_b = status_json(await b.call("status", {}, None))
        assert st_b["actions"] == 2, st_b  # the displaced refusal was not counted


async def test_a_new_turn_id_moves_only_the_agent_session_that_sent_it(
    calculator: App, server: HttpServer
) -> None:
    """A and B both send turn_id "same" (one turn); B's next turn_id takes B out of it, and A
    goes on acting in it; the turn ends when A leaves it too."""
    target = server.target
    same = {"turn_id": "same"}
    async with (
        open_python("session", "http", version=LATEST_HANDSHAKE_VERSION, http=target) as a,
        open_python("session", "http", version=LATEST_HANDSHAKE_VERSION, http=target) as b,
    ):
        a1 = _ok(await _click(a, await a.call("get_app_state", CALC, same), "1 1", same), "1")
        st_b = status_json(await b.call("status", {}, same))
        assert st_b["turn"]["id"] == "turn:same" and st_b["actions"] == 1, st_b  # one budget
        st_b = status_json(await b.call("status", {}, {"turn_id": "b-next"}))
        assert st_b["turn"]["id"] == "turn:b-next" and st_b["actions"] == 0, st_b
        # A is still in "same": the state its click returned is still its to act on
        a2 = _ok(await _click(a, a1, "2 2", same), "12")
        st_a = status_json(await a.call("status", {}, None))
        assert st_a["turn"] == {"id": "turn:same", "explicit": True, "stopped": False}, st_a
        assert st_a["actions"] == 2, st_a
        # A's own new turn_id ends "same": its states die with it
        st_a = status_json(await a.call("status", {}, {"turn_id": "a-next"}))
        assert st_a["turn"]["id"] == "turn:a-next" and st_a["actions"] == 0, st_a
        d = _refused(await _click(a, a2, "3 3"), "state_id_invalid", "other_turn")
        assert "has ended" in d["message"], d


# ---------------------------------------------------------------------- the stricter rules


async def test_after_the_kill_switch_reads_work_and_actions_wait_for_unhalt(
    calculator: App,
) -> None:
    """The kill switch cancels every session: observing still works (a fresh session), actions
    stay refused until ``unhalt``, and a state from before the kill is void, saying why."""
    async with memory_client() as client:
        kernel: Any = client.runtime.ctx.kernel  # type: ignore[attr-defined]

        async def call(tool: str, args: dict[str, Any]) -> Any:
            return await client.call_tool(tool, args)

        c = Opened(lambda tool, args, meta: call(tool, args), "", None, [])
        one = _ok(await _click(c, await call("get_app_state", CALC), "1 1"), "1")
        await kernel.kill("test")  # what a press of the chord does
        try:
            fresh = _ok(await call("get_app_state", CALC), "1")
            r = await _click(c, fresh, "2 2")
            d = diag_of(r)
            assert r.is_error and d["code"] == "kill_switch_engaged", d
            assert d["actionOutcome"] == "not_dispatched", d
        finally:
            kernel.unhalt("test")
        _refused(await _click(c, one, "2 2"), "state_id_invalid", "kill_switch")
        # the refusal during the halt did not spend the fresh state
        _ok(await _click(c, fresh, "2 2"), "12")
