"""Rows of the snapshot vault: ``snapshots``, ``snapshot_blobs`` and ``vault_tombstones``.

The database is the only place where a blob id meets its file name (``storage_key``); the
files themselves carry random names. Deleting rows never touches files: a trigger records
each deleted blob's storage key as a tombstone (also for rows removed by the ``ON DELETE
CASCADE`` of a session), and vault maintenance removes the tombstoned files afterwards. That
keeps every delete a single short transaction and lets a crash between "row gone" and "file
gone" heal at the next maintenance run.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from deskpilot.store.db import Database

SnapshotKind = Literal["app_snapshot", "evidence"]
RetentionMode = Literal["ttl", "session", "manual"]
BlobKind = Literal["image", "preview", "evidence", "text"]

_TOMBSTONE_TRIGGER = """
CREATE TRIGGER IF NOT EXISTS snapshot_blobs_tombstone AFTER DELETE ON snapshot_blobs
BEGIN
    INSERT OR IGNORE INTO vault_tombstones(storage_key) VALUES (old.storage_key);
END
"""


@dataclass(frozen=True)
class SnapshotRow:
    id: str
    session_id: str | None
    kind: SnapshotKind
    retention_mode: RetentionMode
    expires_at: float | None
    app: dict[str, Any] | None
    width: int | None
    height: int | None
    redaction: dict[str, Any]
    created_at: float


@dataclass(frozen=True)
class BlobRow:
    id: str
    snapshot_id: str
    kind: BlobKind
    storage_key: str
    byte_length: int
    content_type: str
    created_at: float
    last_access_at: float


def _snapshot(row: sqlite3.Row) -> SnapshotRow:
    return SnapshotRow(
        id=row["id"],
        session_id=row["session_id"],
        kind=row["kind"],
        retention_mode=row["retention_mode"],
        expires_at=row["expires_at"],
        app=json.loads(row["app_json"]) if row["app_json"] else None,
        width=row["width"],
        height=row["height"],
        redaction=json.loads(row["redaction_json"] or "{}"),
        created_at=row["created_at"],
    )


def _blob(row: sqlite3.Row) -> BlobRow:
    return BlobRow(
        id=row["id"],
        snapshot_id=row["snapshot_id"],
        kind=row["kind"],
        storage_key=row["storage_key"],
        byte_length=row["byte_length"],
        content_type=row["content_type"],
        created_at=row["created_at"],
        last_access_at=row["last_access_at"],
    )


def _marks(n: int) -> str:
    return ",".join("?" * n)


class SnapshotRepository:
    def __init__(self, db: Database) -> None:
        self.db = db
        with db.transaction() as conn:
            conn.execute(_TOMBSTONE_TRIGGER)

    # -- writes
    def insert(self, snapshot: SnapshotRow, blobs: Sequence[BlobRow]) -> None:
        """The snapshot and its blobs in one transaction: all visible or none."""
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO snapshots (id, session_id, kind, retention_mode, expires_at, "
                "app_json, width, height, redaction_json, created_at) "
                "VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    snapshot.id,
                    snapshot.session_id,
                    snapshot.kind,
                    snapshot.retention_mode,
                    snapshot.expires_at,
                    json.dumps(snapshot.app) if snapshot.app is not None else None,
                    snapshot.width,
                    snapshot.height,
                    json.dumps(snapshot.redaction),
                    snapshot.created_at,
                ),
            )
            conn.executemany(
                "INSERT INTO snapshot_blobs (id, snapshot_id, kind, storage_key, byte_length, "
                "content_type, created_at, last_access_at) VALUES (?,?,?,?,?,?,?,?)",
                [
                    (
                        b.id,
                        b.snapshot_id,
                        b.kind,
                        b.storage_key,
                        b.byte_length,
                        b.content_type,
                        b.created_at,
                        b.last_access_at,
                    )
                    for b in blobs
                ],
            )

    def touch_blob(self, blob_id: str, now: float) -> None:
        self.db.execute(
            "UPDATE snapshot_blobs SET last_access_at = ? WHERE id = ? AND last_access_at < ?",
            (now, blob_id, now),
        )

    def delete(self, snapshot_ids: Iterable[str]) -> int:
        ids = list(snapshot_ids)
        if not ids:
            return 0
        with self.db.transaction() as conn:
            return conn.execute(
                f"DELETE FROM snapshots WHERE id IN ({_marks(len(ids))})", ids
            ).rowcount

    # -- reads
    def get(self, snapshot_id: str) -> SnapshotRow | None:
        row = self.db.query_one("SELECT * FROM snapshots WHERE id = ?", (snapshot_id,))
        return _snapshot(row) if row else None

    def blobs(self, snapshot_id: str) -> list[BlobRow]:
        rows = self.db.query(
            "SELECT * FROM snapshot_blobs WHERE snapshot_id = ? ORDER BY created_at, id",
            (snapshot_id,),
        )
        return [_blob(r) for r in rows]

    def blob(self, snapshot_id: str, kind: BlobKind) -> BlobRow | None:
        row = self.db.query_one(
            "SELECT * FROM snapshot_blobs WHERE snapshot_id = ? AND kind = ? "
            "ORDER BY created_at LIMIT 1",
            (snapshot_id, kind),
        )
        return _blob(row) if row else None

    def session_exists(self, session_id: str) -> bool:
        return self.db.query_one("SELECT 1 FROM sessions WHERE id = ?", (session_id,)) is not None

    def recent(
        self, *, session_id: str | None = None, kind: SnapshotKind | None = None, limit: int = 100
    ) -> list[SnapshotRow]:
        where: list[str] = []
        params: list[Any] = []
        if session_id is not None:
            where.append("session_id = ?")
            params.append(session_id)
        if kind is not None:
            where.append("kind = ?")
            params.append(kind)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        rows = self.db.query(
            f"SELECT * FROM snapshots {clause} ORDER BY created_at DESC, id LIMIT ?",
            (*params, limit),
        )
        return [_snapshot(r) for r in rows]

    def expired_ids(
        self,
        now: float,
        *,
        manual_cutoff: float,
        limit: int,
    ) -> list[str]:
        """Snapshots past their TTL, plus any non-TTL snapshot created before the cutoff."""
        rows = self.db.query(
            "SELECT id FROM snapshots WHERE (expires_at IS NOT NULL AND expires_at <= ?) "
            "OR (retention_mode IN ('manual','session') AND created_at <= ?) "
            "ORDER BY created_at LIMIT ?",
            (now, manual_cutoff, limit),
        )
        return [str(r["id"]) for r in rows]

    def least_recently_used(self, limit: int, *, exclude: Sequence[str] = ()) -> list[str]:
        """Snapshots ordered by their most recent blob access, oldest first."""
        excl = f"WHERE snapshot_id NOT IN ({_marks(len(exclude))})" if exclude else ""
        rows = self.db.query(
            f"SELECT snapshot_id, MAX(last_access_at) AS used FROM snapshot_blobs {excl} "
            "GROUP BY snapshot_id ORDER BY used, snapshot_id LIMIT ?",
            (*exclude, limit),
        )
        return [str(r["snapshot_id"]) for r in rows]

    def total_bytes(self) -> int:
        row = self.db.query_one("SELECT COALESCE(SUM(byte_length), 0) AS n FROM snapshot_blobs")
        return int(row["n"]) if row else 0

    def known_storage_keys(self, keys: Sequence[str]) -> set[str]:
        if not keys:
            return set()
        rows = self.db.query(
            f"SELECT storage_key FROM snapshot_blobs WHERE storage_key IN ({_marks(len(keys))})",
            tuple(keys),
        )
        return {str(r["storage_key"]) for r in rows}

    def tombstones(self, limit: int) -> list[str]:
        rows = self.db.query("SELECT storage_key FROM vault_tombstones LIMIT ?", (limit,))
        return [str(r["storage_key"]) for r in rows]

    def clear_tombstones(self, keys: Sequence[str]) -> None:
        if keys:
            self.db.execute(
                f"DELETE FROM vault_tombstones WHERE storage_key IN ({_marks(len(keys))})",
                tuple(keys),
            )

    def stats(self) -> dict[str, Any]:
        """Counts and bytes by snapshot kind / retention mode and by blob kind."""
        by_mode = self.db.query(
            "SELECT kind, retention_mode, COUNT(*) AS n FROM snapshots "
            "GROUP BY kind, retention_mode ORDER BY kind, retention_mode"
        )
        by_blob = self.db.query(
            "SELECT kind, COUNT(*) AS n, COALESCE(SUM(byte_length), 0) AS bytes "
            "FROM snapshot_blobs GROUP BY kind ORDER BY kind"
        )
        oldest = self.db.query_one("SELECT MIN(created_at) AS t FROM snapshots")
        pending = self.db.query_one("SELECT COUNT(*) AS n FROM vault_tombstones")
        return {
            "snapshots": [
                {"kind": r["kind"], "retentionMode": r["retention_mode"], "count": r["n"]}
                for r in by_mode
            ],
            "blobs": [{"kind": r["kind"], "count": r["n"], "bytes": r["bytes"]} for r in by_blob],
            "oldestCreatedAt": oldest["t"] if oldest else None,
            "pendingFileDeletes": int(pending["n"]) if pending else 0,
        }


__all__ = [
    "BlobKind",
    "BlobRow",
    "RetentionMode",
    "SnapshotKind",
    "SnapshotRepository",
    "SnapshotRow",
]
