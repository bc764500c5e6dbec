"""Vault fixtures: a fresh data dir, database and vault per test, and a clock tests can move.

The key is always a file key here (``DESKPILOT_VAULT_KEY_STORAGE=file``) so no test ever
touches the keyring of the account running the suite; the keyring path has its own test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from vault_helpers import Clock

from deskpilot.store.db import Database
from deskpilot.vault.service import SnapshotService
from deskpilot.vault.store import Vault


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "data"
    monkeypatch.setenv("DESKPILOT_DATA_DIR", str(d))
    monkeypatch.setenv("DESKPILOT_VAULT_KEY_STORAGE", "file")
    return d


@pytest.fixture
def vault_root(data_dir: Path) -> Path:
    return data_dir / "snapshot-vault"


@pytest.fixture
def db(data_dir: Path) -> Iterator[Database]:
    database = Database(data_dir / "deskpilot.sqlite3")
    yield database
    database.close()


@pytest.fixture
def vault(vault_root: Path) -> Vault:
    return Vault.open(vault_root)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def service(db: Database, vault: Vault, clock: Clock) -> SnapshotService:
    return SnapshotService(db, vault, clock=clock)
