from __future__ import annotations

from collections.abc import Iterator

import pytest
from provider_server import ScriptedServer


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    srv = ScriptedServer()
    try:
        yield srv
    finally:
        srv.close()
