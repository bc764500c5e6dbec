"""Which bound ended the wait after a semantic action, as an agent sees it: the official MCP
Python SDK talks to a real ``deskpilot serve`` over stdio on the private desktop; every
action's diagnostic step carries ``waitBound`` (host/settle.py, carried in the host's action
result through the kernel), and the session's timeline records it on ``action_executed``.

* gnome-calculator (GTK 4): "=" on an empty display changes nothing and ends by GTK's
  activation bound (``toolkit_gtk``); "7" changes the display and ends by its events;
* a GTK 3 window (tests/host/noop_gtk_app.py): "Nothing" has no handler and ends by the
  toolkit's short bound (``toolkit_none``); "Count" relabels a label and ends by its event.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import DESKPILOT, diag_of, element_id, state_id_of, text_of

from deskpilot.desktop.apps import App
from deskpilot.protocol.session import EventType
from deskpilot.store.db import Database
from deskpilot.store.timeline import TimelineRepository
from desktop_kit import GTK3_NOOP_ARGV, app_fixture
from mcp import Client, StdioServerParameters

pytestmark = pytest.mark.desktop

gtk3 = app_fixture("gtk3", GTK3_NOOP_ARGV, scope="function", desktop="dp_desktop")


def serve(data_dir: Path) -> StdioServerParameters:
    env = {**os.environ, "DESKPILOT_DATA_DIR": str(data_dir)}
    return StdioServerParameters(command=DESKPILOT, args=["serve"], env=env)


async def press(client: Client, app: str | int, button: str) -> dict[str, Any]:
    """A click on the button whose tree line matches ``button``, on a fresh state; the
    diagnostic's one step."""
    state = await client.call_tool("get_app_state", {"app": app})
    assert not state.is_error, text_of(state)
    state_id = state_id_of(state)
    result = await client.call_tool(
        "click", {"state_id": state_id, "element_id": element_id(state, button)}
    )
    d = diag_of(result)
    assert d["actionOutcome"] == "call_returned", text_of(result)
    (step,) = d["steps"]
    assert step["kind"] == "click" and step["method"] == "semantic", d
    return step


async def timeline_bounds(client: Client, data_dir: Path) -> list[str | None]:
    """``waitBound`` of every ``action_executed`` of the client's session, in order."""
    status = await client.call_tool("status", {})
    sid = json.loads(text_of(status).split("\ndeskpilot diagnostic")[0])["session"]["sessionId"]
    rows = TimelineRepository(Database(data_dir / "deskpilot.sqlite3")).list(sid)
    return [r.payload.get("waitBound") for r in rows if r.type is EventType.ACTION_EXECUTED]


async def test_the_calculator_says_its_no_effect_click_ended_by_gtks_bound(
    calculator: App, tmp_path: Path
) -> None:
    async with Client(serve(tmp_path)) as client:
        nothing = await press(client, "gnome-calculator", r'button "= ="')  # empty display
        assert nothing["waitBound"] == "toolkit_gtk", nothing
        seven = await press(client, "gnome-calculator", r'button "7 7"')
        assert seven["waitBound"] == "event", seven
        assert await timeline_bounds(client, tmp_path) == ["toolkit_gtk", "event"]


async def test_a_gtk3_window_says_no_reaction_ended_by_the_toolkits_short_bound(
    gtk3: App, tmp_path: Path
) -> None:
    async with Client(serve(tmp_path)) as client:
        # a button without a handler: ends by GTK 3's short window, unless the app happened
        # to emit something meanwhile (then by its events)
        nothing = [(await press(client, gtk3.pid, r'button "Nothing"'))["waitBound"]]
        nothing += [(await press(client, gtk3.pid, r'button "Nothing"'))["waitBound"]]
        nothing += [(await press(client, gtk3.pid, r'button "Nothing"'))["waitBound"]]
        assert set(nothing) <= {"toolkit_none", "event"} and "toolkit_none" in nothing, nothing
        count = await press(client, gtk3.pid, r'button "Count"')
        assert count["waitBound"] == "event", count
        assert await timeline_bounds(client, tmp_path) == [*nothing, "event"]
