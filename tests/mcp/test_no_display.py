"""A server started without an X display says so, with what to do, and not as retryable."""

from __future__ import annotations

import os

from mcp_helpers import DESKPILOT, diag_of

from mcp import Client, StdioServerParameters


async def test_without_a_display_the_error_says_how_to_get_one() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "DBUS_SESSION_BUS_ADDRESS")}
    params = StdioServerParameters(command=DESKPILOT, args=["serve"], env=env)
    async with Client(params) as client:
        r = await client.call_tool("get_app_state", {"app": "gnome-calculator"})
        assert r.is_error
        d = diag_of(r)
        assert d["code"] == "environment_unavailable"
        assert d["details"]["reason"] == "no_display" and d["retryable"] is False
        assert "deskpilot desktop up" in d["message"]
