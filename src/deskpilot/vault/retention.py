"""How long snapshots live, how much disk they may take, and the job that enforces both.

Rules (docs/vault.md, "Retention"):

* evidence frames: ``ttl`` mode, deleted 24 h after capture;
* app snapshots with a session: ``session`` mode, deleted with their session (the foreign
  key cascades) — and never kept longer than ``evidenceRetentionDays`` even if the session
  row lingers;
* app snapshots without a session: ``manual`` mode, deleted ``evidenceRetentionDays`` after
  capture (default 30) — not kept forever. The cutoff is computed from the setting at each
  run, so changing the setting applies to snapshots already stored;
* a disk quota (``vaultQuotaBytes``) counted in encrypted bytes on disk; above it, whole
  snapshots are evicted least-recently-used first (last capture or preview fetch), checked
  after every capture as well as in maintenance, so the vault cannot fill the disk between
  runs;
* maintenance at start and every 6 h, in batches of 200; files of deleted rows are removed at
  the next run (tombstones), files the database never knew (a crash between the file rename
  and the row insert, stray ``.part`` files) after a 24 h grace.

All time comes from an injectable clock so tests can move it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from deskpilot.store.db import Database
from deskpilot.store.snapshots import SnapshotRepository
from deskpilot.vault.store import Vault

log = logging.getLogger(__name__)

EVIDENCE_TTL_S = 24 * 3600.0
MAINTENANCE_INTERVAL_S = 6 * 3600.0
MAINTENANCE_BATCH = 200
ORPHAN_GRACE_S = 24 * 3600.0
DEFAULT_QUOTA_BYTES = 1024**3
DEFAULT_RETENTION_DAYS = 30

Clock = Callable[[], float]


@dataclass(frozen=True)
class VaultPolicy:
    """The settings the vault obeys, read afresh for every capture and every maintenance run
    (:meth:`load`, from the settings table: a write by any process applies to the next one;
    nothing is cached at start, so a long-lived ``deskpilot serve`` follows the dashboard).

    * ``redact_sensitive_content`` — whether secure regions are painted out of the model
      frame *and* of stored frames (app snapshots, their previews, evidence frames); each
      stored frame records the value it was taken under.
    * ``full_recording_enabled`` — on: the runtime keeps an evidence frame before and after
      each action; off: no evidence frame is stored at all.
    * ``evidence_retention_days`` — lifetime of manual (session-less) app snapshots and the
      upper bound for session snapshots.
    * ``quota_bytes`` — encrypted bytes on disk before LRU eviction.
    """

    redact_sensitive_content: bool = True
    full_recording_enabled: bool = False
    evidence_retention_days: int = DEFAULT_RETENTION_DAYS
    quota_bytes: int = DEFAULT_QUOTA_BYTES

    @property
    def retention_s(self) -> float:
        return float(self.evidence_retention_days) * 86400.0

    @classmethod
    def load(cls, db: Database) -> VaultPolicy:
        """The current settings, read from the settings table (any process may change them)."""
        from deskpilot.store.settings import Settings

        s = Settings.load(db)
        return cls(
            redact_sensitive_content=s.redact_sensitive_content,
            full_recording_enabled=s.full_recording_enabled,
            evidence_retention_days=s.evidence_retention_days,
            quota_bytes=s.vault_quota_bytes,
        )


PolicySource = Callable[[], VaultPolicy]


@dataclass
class MaintenanceReport:
    started_at: float
    expired_snapshots: int = 0
    evicted_snapshots: int = 0
    tombstoned_files_removed: int = 0
    orphan_files_removed: int = 0
    orphan_files_pending: int = 0  # unknown files still inside their grace period
    bytes_before: int = 0
    bytes_after: int = 0
    duration_ms: float = 0.0
    errors: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        return {_camel(k): v for k, v in out.items()}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


class Maintenance:
    """One pass of retention, quota and file cleanup."""

    def __init__(
        self,
        repo: SnapshotRepository,
        vault: Vault,
        policy: PolicySource,
        *,
        clock: Clock = time.time,
        on_deleted: Callable[[Sequence[str]], None] | None = None,
        batch: int = MAINTENANCE_BATCH,
        orphan_grace_s: float = ORPHAN_GRACE_S,
    ) -> None:
        self.repo = repo
        self.vault = vault
        self.policy = policy
        self.clock = clock
        self.on_deleted = on_deleted
        self.batch = batch
        self.orphan_grace_s = orphan_grace_s
        self._lock = threading.RLock()

    def delete(self, ids: Sequence[str]) -> int:
        """Delete snapshots and, right away, their files (via the tombstones)."""
        n = self.repo.delete(ids)
        if self.on_deleted is not None and ids:
            self.on_deleted(ids)
        self.drain_tombstones()
        return n

    def expire(self, now: float, policy: VaultPolicy) -> int:
        total = 0
        cutoff = now - policy.retention_s
        while True:
            ids = self.repo.expired_ids(now, manual_cutoff=cutoff, limit=self.batch)
            if not ids:
                return total
            total += self.delete(ids)

    def enforce_quota(self, policy: VaultPolicy, *, keep: Sequence[str] = ()) -> int:
        """Evict least-recently-used snapshots (never those in ``keep``) until under quota."""
        evicted = 0
        with self._lock:
            while self.repo.total_bytes() > policy.quota_bytes:
                ids = self.repo.least_recently_used(self.batch, exclude=keep)
                if not ids:
                    break
                over = self.repo.total_bytes() - policy.quota_bytes
                chosen: list[str] = []
                for sid in ids:
                    chosen.append(sid)
                    over -= sum(b.byte_length for b in self.repo.blobs(sid))
                    if over <= 0:
                        break
                evicted += self.delete(chosen)
        return evicted

    def drain_tombstones(self) -> int:
        removed = 0
        with self._lock:
            while True:
                keys = self.repo.tombstones(self.batch)
                if not keys:
                    return removed
                for key in keys:
                    removed += int(self.vault.remove(key))
                self.repo.clear_tombstones(keys)

    def sweep_orphans(self, now: float) -> tuple[int, int]:
        """Remove files the database does not know once they are older than the grace."""
        removed = pending = 0
        files = list(self.vault.files())
        for start in range(0, len(files), self.batch):
            chunk = files[start : start + self.batch]
            known = self.repo.known_storage_keys(
                [f.storage_key for f in chunk if f.storage_key is not None]
            )
            for f in chunk:
                if f.storage_key is not None and f.storage_key in known:
                    continue
                if now - f.mtime >= self.orphan_grace_s:
                    removed += int(self.vault.remove_file(f.name))
                else:
                    pending += 1
        return removed, pending

    def run_once(self) -> MaintenanceReport:
        started = time.perf_counter()
        now = self.clock()
        report = MaintenanceReport(started_at=now)
        report.bytes_before = self.repo.total_bytes()
        policy = self.policy()
        for step in ("expire", "quota", "tombstones", "orphans"):
            try:
                if step == "expire":
                    report.expired_snapshots = self.expire(now, policy)
                elif step == "quota":
                    report.evicted_snapshots = self.enforce_quota(policy)
                elif step == "tombstones":
                    report.tombstoned_files_removed = self.drain_tombstones()
                else:
                    report.orphan_files_removed, report.orphan_files_pending = self.sweep_orphans(
                        now
                    )
            except Exception as exc:  # one failing step must not stop the others
                log.warning("vault maintenance step %s failed: %s", step, type(exc).__name__)
                report.errors.append(f"{step}: {type(exc).__name__}")
        report.bytes_after = self.repo.total_bytes()
        report.duration_ms = (time.perf_counter() - started) * 1000.0
        return report


class MaintenanceScheduler:
    """Runs maintenance once at start, then every ``interval_s``, on a daemon thread."""

    def __init__(
        self, maintenance: Maintenance, *, interval_s: float = MAINTENANCE_INTERVAL_S
    ) -> None:
        self.maintenance = maintenance
        self.interval_s = interval_s
        self.runs = 0
        self.last_report: MaintenanceReport | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._loop, name="deskpilot-vault-maintenance", daemon=True
        )
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.last_report = self.maintenance.run_once()
            except Exception as exc:
                log.warning("vault maintenance failed: %s", type(exc).__name__)
            self.runs += 1
            if self._stop.wait(self.interval_s):
                return

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None


__all__ = [
    "DEFAULT_QUOTA_BYTES",
    "DEFAULT_RETENTION_DAYS",
    "EVIDENCE_TTL_S",
    "MAINTENANCE_BATCH",
    "MAINTENANCE_INTERVAL_S",
    "ORPHAN_GRACE_S",
    "Maintenance",
    "MaintenanceReport",
    "MaintenanceScheduler",
    "PolicySource",
    "VaultPolicy",
]
