"""Fixtures for the MCP tests: the private desktop, real sample apps, a real host.

Every test talks to deskpilot through the official SDK's ``Client``: in memory (the server
object in this process, a real host subprocess behind it) or over a stdio subprocess
(``deskpilot serve``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mcp_helpers import start_app

from deskpilot.desktop.apps import App
from serve_kit import HttpServer, http_server


@pytest.fixture
def calculator(dp_desktop: Any) -> Iterator[App]:
    app = start_app(["gnome-calculator"])
    yield app
    app.stop()


@pytest.fixture
def server(dp_desktop: Any) -> Iterator[HttpServer]:
    """A ``deskpilot serve --transport http`` of this test only (a server kept across tests
    would hold the desktop lease for 30 s after its last action, refusing the next test's
    stdio server)."""
    with http_server() as srv:
        yield srv
