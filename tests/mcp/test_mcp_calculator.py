"""gnome-calculator through the SDK client in memory: compute, and count the calls.

Each click's result must carry the next state, so the agent's loop is
get_app_state → action → action → …: two actions cost three calls, not five.
"""

from __future__ import annotations

import re
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

from deskpilot.desktop.apps import App

pytestmark = pytest.mark.desktop


class CountingClient:
    def __init__(self, client: Any) -> None:
        self.client = client
        self.calls: list[str] = []

    async def __call__(self, tool: str, args: dict[str, Any]) -> Any:
        self.calls.append(tool)
        return await self.client.call_tool(tool, args)


def _display(result: Any) -> str:
    m = re.search(r'textField = "([^"]*)"[^\n]*\[\d+\]$', text_of(result), re.M)
    assert m, text_of(result)
    return m.group(1)


async def test_get_app_state_has_header_tree_and_image(calculator: App) -> None:
    async with memory_client() as client:
        r = await client.call_tool("get_app_state", {"app": "gnome-calculator"})
        assert not r.is_error, text_of(r)
        text = text_of(r)
        lines = text.splitlines()
        assert lines[0] == f'App=(name="gnome-calculator", pid={calculator.pid})'
        assert lines[1].startswith('Window=(title="Calculator", id=0x')
        assert lines[2].startswith("state_id=st_")
        assert lines[3].startswith("frameId=") and lines[4].startswith("treeVersion=")
        assert re.match(r"image=\d+x\d+ ", lines[5])
        assert '- window "Calculator" [1]' in text
        assert has_image(r)
        d = diag_of(r)
        assert d["actionOutcome"] == "not_applicable"
        assert d["observationOutcome"] == "available" and d["stateIdIssued"] is True
        assert set(d["timings"]) == {
            "initializeMs",
            "discoveryMs",
            "rpcMs",
            "approvalMs",
            "bridgeTotalMs",
            "formatMs",
            "toolElapsedMs",
            "betweenCallsMs",
            "toolkitDelayMs",
        }
        assert d["timings"]["toolkitDelayMs"] is None  # a read: no app reaction to wait for
        # the same app by pid, desktop id and WM_CLASS
        for ref in (calculator.pid, "org.gnome.Calculator", "GNOME-CALCULATOR.gnome-calculator"):
            again = await client.call_tool("get_app_state", {"app": ref})
            assert not again.is_error, text_of(again)


async def test_compute_and_two_actions_cost_three_calls(calculator: App) -> None:
    async with memory_client() as client:
        call = CountingClient(client)
        state = await call("get_app_state", {"app": "gnome-calculator"})
        results = [state]
        for label in ("7 7", "× ×", "6 6", "= ="):
            prev = results[-1]
            r = await call(
                "click",
                {"state_id": state_id_of(prev), "element_id": element_id(prev, f'"{label}"')},
            )
            assert not r.is_error, text_of(r)
            d = diag_of(r)
            assert d["actionOutcome"] == "call_returned", d
            assert d["observationOutcome"] == "available", d
            # a left single click on a button: the host runs the button's own action
            assert d["steps"][0] == {
                "kind": "click",
                "outcome": "call_returned",
                "method": "semantic",
                "waitBound": "event",  # every press changes the display: its events end the wait
                "risk": "L1",  # the kernel's rating, by value with the result
            }
            # GTK emits clicked 250 ms after the invoke: the toolkit's delay, reported apart
            assert d["timings"]["toolkitDelayMs"] >= 100, d["timings"]
            assert has_image(r)
            results.append(r)
        assert call.calls == ["get_app_state", "click", "click", "click", "click"]
        assert call.calls[:3] == ["get_app_state", "click", "click"]  # 2 actions, 3 calls
        assert _display(results[-1]) == "42"
        status = await client.call_tool("status", {})
        assert '"actions": 4' in text_of(status)


async def test_state_id_is_single_use(calculator: App) -> None:
    async with memory_client() as client:
        state = await client.call_tool("get_app_state", {"app": "gnome-calculator"})
        args = {"state_id": state_id_of(state), "element_id": element_id(state, '"1 1"')}
        first = await client.call_tool("click", args)
        assert not first.is_error, text_of(first)
        again = await client.call_tool("click", args)
        assert again.is_error
        d = diag_of(again)
        assert d["code"] == "state_id_invalid"
        assert d["details"]["reason"] == "already_used"
        assert d["actionOutcome"] == "not_dispatched"
        assert text_of(again).startswith("deskpilot diagnostic: {")


async def test_a_bad_element_id_does_not_spend_the_state_id(calculator: App) -> None:
    async with memory_client() as client:
        state = await client.call_tool("get_app_state", {"app": "gnome-calculator"})
        sid = state_id_of(state)
        typo = await client.call_tool("click", {"state_id": sid, "element_id": 9999})
        assert typo.is_error and diag_of(typo)["code"] == "invalid_request"
        assert diag_of(typo)["actionOutcome"] == "not_dispatched"
        # says what to do, and nothing that reads as "ids count lines" (trial-6: "it has 149
        # elements" for id 149 suggested 149 should be valid)
        said = text_of(typo)
        assert "Read the state again (get_app_state)" in said and "elements)" not in said, said
        good = {"state_id": sid, "element_id": element_id(state, '"1 1"')}
        ok = await client.call_tool("click", good)
        assert not ok.is_error, text_of(ok)


async def test_an_action_refused_before_dispatch_does_not_spend_the_state_id(
    calculator: App,
) -> None:
    async with memory_client() as client:
        state = await client.call_tool("get_app_state", {"app": "gnome-calculator"})
        sid, one = state_id_of(state), element_id(state, '"1 1"')
        refused = await client.call_tool(
            "set_value", {"state_id": sid, "element_id": one, "value": "text"}
        )
        d = diag_of(refused)
        assert refused.is_error and d["code"] == "unsupported_action", d
        assert d["actionOutcome"] == "not_dispatched"
        ok = await client.call_tool("click", {"state_id": sid, "element_id": one})
        assert not ok.is_error, text_of(ok)


async def test_stale_state_heals_once_by_reobserving(calculator: App) -> None:
    """A valid but outdated stateId (the window changed since) is re-observed, its element
    found again by signature, and the action retried once."""
    async with memory_client() as client:
        old = await client.call_tool("get_app_state", {"app": "gnome-calculator"})
        fresh = await client.call_tool("get_app_state", {"app": "gnome-calculator"})
        one = await client.call_tool(
            "click", {"state_id": state_id_of(fresh), "element_id": element_id(fresh, '"1 1"')}
        )
        assert _display(one) == "1"
        r = await client.call_tool(
            "click", {"state_id": state_id_of(old), "element_id": element_id(old, '"2 2"')}
        )
        assert not r.is_error, text_of(r)
        d = diag_of(r)
        assert d["healed"] == 1 and d["steps"][0]["healed"] is True
        assert _display(r) == "12"
