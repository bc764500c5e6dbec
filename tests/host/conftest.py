"""The host tests' shared fixture: one real host process per test module (``host_harness``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from host_harness import HostProcess


@pytest.fixture(scope="module")
def host(desktop: object) -> Iterator[HostProcess]:
    with HostProcess() as h:
        yield h
