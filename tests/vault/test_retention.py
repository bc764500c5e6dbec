"""Retention, quota and file cleanup, driven by a clock the test moves."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

from PIL import Image
from vault_helpers import Clock, add_session, fixed_service, make_noise_png, make_png

from deskpilot.protocol.wire import AppIdentity
from deskpilot.store.db import Database
from deskpilot.store.settings import Settings
from deskpilot.vault.retention import MaintenanceScheduler
from deskpilot.vault.service import SnapshotService
from deskpilot.vault.store import Vault

DAY = 86400.0
APP = AppIdentity(executable="mousepad")


def _count(db: Database, table: str = "snapshots") -> int:
    row = db.query_one(f"SELECT COUNT(*) AS n FROM {table}")
    assert row is not None
    return int(row["n"])


def _svb(vault: Vault) -> int:
    return sum(1 for f in vault.files() if f.storage_key is not None)


def test_evidence_expires_after_24h(
    service: SnapshotService, clock: Clock, vault: Vault, db: Database
) -> None:
    Settings.update(db, full_recording_enabled=True)  # evidence frames are kept only then
    rec = service.record_evidence(make_png(100, 100), app=APP, trigger="after")
    assert rec is not None
    clock.advance(24 * 3600 - 1)
    assert service.run_maintenance().expired_snapshots == 0
    clock.advance(2)
    report = service.run_maintenance()
    assert report.expired_snapshots == 1
    assert _svb(vault) == 0  # the file went with the row, in the same run


def test_manual_snapshots_expire_after_retention_setting(
    service: SnapshotService, clock: Clock, db: Database, vault: Vault
) -> None:
    rec = service.capture_app_snapshot(make_png(50, 50), app=APP)
    assert rec.expires_at == clock.now + 30 * DAY
    clock.advance(29 * DAY)
    assert service.run_maintenance().expired_snapshots == 0
    # the setting is read at each run: shortening it applies to snapshots already stored
    Settings.update(db, evidence_retention_days=7)
    assert service.run_maintenance().expired_snapshots == 1
    assert _count(db) == 0 and _svb(vault) == 0


def test_manual_default_30_days(service: SnapshotService, clock: Clock, db: Database) -> None:
    service.capture_app_snapshot(make_png(50, 50), app=APP)
    clock.advance(30 * DAY + 1)
    assert service.run_maintenance().expired_snapshots == 1
    assert _count(db) == 0


def test_session_snapshots_go_with_their_session(
    service: SnapshotService, db: Database, vault: Vault
) -> None:
    add_session(db, "s1")
    add_session(db, "s2")
    service.capture_app_snapshot(make_png(1300, 100), app=APP, session_id="s1")
    Settings.update(db, full_recording_enabled=True)  # evidence frames are kept only then
    service.record_evidence(make_png(50, 50), app=APP, session_id="s1")
    keep = service.capture_app_snapshot(make_png(50, 50), app=APP, session_id="s2")
    assert _svb(vault) == 4
    db.execute("DELETE FROM sessions WHERE id = 's1'")  # the kernel deletes a session
    assert _count(db) == 1
    assert _count(db, "vault_tombstones") == 3
    report = service.run_maintenance()  # no 24 h wait: the rows are known to be gone
    assert report.tombstoned_files_removed == 3
    assert _svb(vault) == 1 and _count(db, "vault_tombstones") == 0
    assert service.read_blob(keep.id, "image")


def test_quota_evicts_least_recently_used_first(db: Database, vault: Vault, clock: Clock) -> None:
    png = make_noise_png(400, 300)
    probe = fixed_service(db, vault, clock)
    one = probe.capture_app_snapshot(png, app=APP)
    size = sum(one.blobs.values())
    probe.delete(one.id)
    svc = fixed_service(db, vault, clock, quota_bytes=int(size * 3.5))
    ids = []
    for _ in range(3):
        ids.append(svc.capture_app_snapshot(png, app=APP).id)
        clock.advance(10)
    # reading the oldest makes it recently used: the second-oldest is now the LRU
    svc.read_blob(ids[0], "image")
    clock.advance(10)
    fourth = svc.capture_app_snapshot(png, app=APP).id  # over quota: evict exactly one
    remaining = {r.id for r in svc.repo.recent(limit=10)}
    assert remaining == {ids[0], ids[2], fourth}
    assert svc.repo.total_bytes() <= int(size * 3.5)
    assert _svb(vault) == 3  # the evicted snapshot's file is gone immediately
    clock.advance(10)
    fifth = svc.capture_app_snapshot(png, app=APP).id
    assert {r.id for r in svc.repo.recent(limit=10)} == {ids[0], fourth, fifth}


def test_quota_setting_is_read_and_enforced_by_maintenance(
    service: SnapshotService, db: Database, clock: Clock
) -> None:
    noise = Image.frombytes("RGB", (1200, 1000), os.urandom(1200 * 1000 * 3))
    buf = io.BytesIO()
    noise.save(buf, format="PNG", compress_level=1)
    png = buf.getvalue()  # ~3.6 MB that does not compress
    for _ in range(6):
        service.capture_app_snapshot(png, app=APP)
        clock.advance(1)
    oldest_first = [r.id for r in reversed(service.repo.recent(limit=10))]
    assert service.repo.total_bytes() > 16 * 1024 * 1024
    Settings.update(db, vault_quota_bytes=16 * 1024 * 1024)  # the setting's minimum
    report = service.run_maintenance()
    remaining = [r.id for r in reversed(service.repo.recent(limit=10))]
    assert report.evicted_snapshots == 6 - len(remaining) > 0
    assert remaining == oldest_first[-len(remaining) :]  # the newest survive
    assert service.repo.total_bytes() <= 16 * 1024 * 1024
    assert report.bytes_after <= 16 * 1024 * 1024 < report.bytes_before


def test_orphans_removed_only_after_grace(
    service: SnapshotService, vault: Vault, clock: Clock
) -> None:
    kept = service.capture_app_snapshot(make_png(50, 50), app=APP)
    # a crash between rename and row insert, and an interrupted write
    orphan = vault.put(b"lost", blob_id="blob_lost", kind="image")
    part = vault.blobs_dir / ".deadbeef.part"
    part.write_bytes(b"half")
    report = service.run_maintenance()
    assert report.orphan_files_removed == 0 and report.orphan_files_pending == 2
    clock.advance(24 * 3600 - 60)
    assert service.run_maintenance().orphan_files_removed == 0
    clock.advance(120)
    report = service.run_maintenance()
    assert report.orphan_files_removed == 2
    assert not vault.path_for(orphan.storage_key).exists() and not part.exists()
    assert service.read_blob(kept.id, "image")  # a known blob is never an orphan


def test_batches_of_200(db: Database, vault: Vault, clock: Clock) -> None:
    svc = fixed_service(db, vault, clock, full_recording_enabled=True)
    sizes: list[int] = []
    original = svc.repo.expired_ids

    def spy(now: float, *, manual_cutoff: float, limit: int) -> list[str]:
        out = original(now, manual_cutoff=manual_cutoff, limit=limit)
        sizes.append(len(out))
        return out

    svc.repo.expired_ids = spy  # type: ignore[method-assign]
    png = make_png(8, 8)
    for _ in range(450):
        svc.record_evidence(png, app=APP)
    clock.advance(25 * 3600)
    report = svc.run_maintenance()
    assert report.expired_snapshots == 450
    assert sizes == [200, 200, 50, 0]
    assert _svb(vault) == 0


def test_scheduler_runs_at_start_and_periodically(
    service: SnapshotService, clock: Clock, db: Database
) -> None:
    Settings.update(db, full_recording_enabled=True)
    service.record_evidence(make_png(8, 8), app=APP)
    clock.advance(25 * 3600)
    sched = MaintenanceScheduler(service.maintenance, interval_s=0.05)
    sched.start()
    try:
        deadline = time.monotonic() + 5
        while sched.runs < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        sched.stop()
    assert sched.runs >= 3
    assert _count(db) == 0  # the first run, at start, already expired it


def test_service_start_maintenance_runs_immediately(
    service: SnapshotService, clock: Clock, db: Database
) -> None:
    Settings.update(db, full_recording_enabled=True)
    service.record_evidence(make_png(8, 8), app=APP)
    clock.advance(25 * 3600)
    service.start_maintenance()  # default interval: 6 h; the first run is at start
    try:
        deadline = time.monotonic() + 5
        while _count(db) and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        service.stop_maintenance()
    assert _count(db) == 0


def test_file_mtime_uses_real_time(vault: Vault, tmp_path: Path) -> None:
    """Orphan age compares the clock with file mtimes; both are epoch seconds."""
    sb = vault.put(b"x", blob_id="b", kind="image")
    assert abs(os.stat(vault.path_for(sb.storage_key)).st_mtime - time.time()) < 60
