"""SQLite schema and repositories; every piece of state lives under ``data_dir()``."""

from deskpilot.store.db import Database
from deskpilot.store.paths import data_dir, database_path, logs_dir, vault_dir

__all__ = ["Database", "data_dir", "database_path", "logs_dir", "vault_dir"]
