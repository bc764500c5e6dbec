from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from deskpilot.kernel import Kernel
from deskpilot.kernel.flags import Flags
from deskpilot.store.db import Database

from . import trees
from .backends import RecordedBackend, screen


@pytest.fixture
def db(tmp_path: Path) -> Database:
    return Database(tmp_path / "deskpilot.sqlite3")


@pytest.fixture
def backend() -> RecordedBackend:
    return RecordedBackend(default=screen(trees.EDITOR))


@pytest.fixture
async def kernel(db: Database, backend: RecordedBackend) -> AsyncIterator[Kernel]:
    k = Kernel(backend, db, flags=Flags({}))
    yield k
    await k.close()
