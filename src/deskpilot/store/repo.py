"""Shared plumbing for the repositories: one write path, optionally inside a caller's transaction.

A kernel step often writes several rows that must land together (a state change and its
timeline event); repositories take the caller's connection for that, and open their own short
transaction otherwise.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from deskpilot.store.db import Database


class Repository:
    def __init__(self, db: Database) -> None:
        self.db = db

    @contextmanager
    def _tx(self, conn: sqlite3.Connection | None) -> Iterator[sqlite3.Connection]:
        if conn is not None:
            yield conn
            return
        with self.db.transaction() as own:
            yield own


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)


def loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)
