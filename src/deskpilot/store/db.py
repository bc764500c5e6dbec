"""The one SQLite database: WAL, foreign keys on, versioned migrations, one writer.

SQLite allows one writer at a time anyway; serialising writes in-process behind a lock keeps
``database is locked`` out of the hot path and makes each write a short transaction. Reads use
the same connection (``check_same_thread=False``) under the lock; the kernel's writes are tiny
so a reader pool would cost more than it saves.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from deskpilot.store.paths import database_path
from deskpilot.store.schema import MIGRATIONS


def _private_file(path: Path, *, create: bool = True) -> None:
    """The database holds sessions, audit and settings: its owner's only (SQLite would create
    it 0644 and its -wal/-shm files with the same mode). An older, looser file is tightened."""
    if create:
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            return
        except FileExistsError:
            pass
    try:
        st = path.stat()
        if st.st_mode & 0o077 and st.st_uid == os.getuid():
            os.chmod(path, 0o600)
    except OSError:
        pass  # absent (no -wal yet), or not ours to change: SQLite reports real problems


class Database:
    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else database_path()
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _private_file(self.path)
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None, timeout=10.0
        )
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA journal_mode=WAL")
        for side in ("-wal", "-shm"):  # SQLite gives these the main file's mode
            _private_file(self.path.with_name(self.path.name + side), create=False)
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA busy_timeout=10000")
        self._migrate()

    # -- migrations
    def _migrate(self) -> None:
        with self._lock:
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"
            )
            row = self._conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
            current = int(row[0]) if row and row[0] is not None else 0
            for version, sql in MIGRATIONS:
                if version <= current:
                    continue
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    for statement in _split(sql):
                        self._conn.execute(statement)
                    self._conn.execute("INSERT INTO schema_version VALUES (?)", (version,))
                    self._conn.execute("COMMIT")
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise

    @property
    def schema_version(self) -> int:
        row = self.query_one("SELECT MAX(version) AS v FROM schema_version")
        return int(row["v"]) if row else 0

    # -- access
    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction; the in-process lock makes this the single writer."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")

    def execute(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> int:
        """One write statement in its own transaction; returns the row count."""
        with self.transaction() as conn:
            return conn.execute(sql, params).rowcount

    def query(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return list(self._conn.execute(sql, params).fetchall())

    def query_one(
        self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()
    ) -> sqlite3.Row | None:
        with self._lock:
            row: sqlite3.Row | None = self._conn.execute(sql, params).fetchone()
            return row

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _split(sql: str) -> list[str]:
    return [s.strip() for s in sql.split(";") if s.strip()]
