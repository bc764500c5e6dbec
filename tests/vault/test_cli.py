"""``deskpilot vault stats|gc|reset`` as a user runs them: a real subprocess, a real data dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from vault_helpers import make_png

from deskpilot.protocol.wire import AppIdentity
from deskpilot.store.db import Database
from deskpilot.store.settings import Settings
from deskpilot.vault.service import SnapshotService
from deskpilot.vault.store import Vault


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deskpilot.cli.main", "vault", *args],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=60,
    )


def test_stats_and_gc(db: Database, vault: Vault, data_dir: Path) -> None:
    svc = SnapshotService(db, vault)
    svc.capture_app_snapshot(make_png(1300, 200), app=AppIdentity(executable="mousepad"))
    Settings.update(db, full_recording_enabled=True)  # evidence frames are kept only then
    old = svc.record_evidence(make_png(50, 50), app=AppIdentity(executable="mousepad"))
    assert old is not None
    db.execute("UPDATE snapshots SET expires_at = ? WHERE id = ?", (time.time() - 1, old.id))
    orphan = vault.put(b"x", blob_id="b", kind="image")
    day_ago = time.time() - 25 * 3600
    os.utime(vault.path_for(orphan.storage_key), (day_ago, day_ago))

    out = _cli("stats", "--json")
    assert out.returncode == 0, out.stderr
    stats = json.loads(out.stdout)
    assert stats["vaultDir"] == str(data_dir / "snapshot-vault")
    assert stats["key"]["storage"] == "file"
    assert stats["policy"]["quotaBytes"] == 1024**3
    assert stats["policy"]["evidenceRetentionDays"] == 30
    assert stats["files"] == 4
    assert {b["kind"] for b in stats["blobs"]} == {"image", "preview", "evidence"}

    out = _cli("gc", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["expiredSnapshots"] == 1
    assert report["orphanFilesRemoved"] == 1
    assert report["errors"] == []
    assert len(list(vault.files())) == 2

    human = _cli("stats")
    assert human.returncode == 0 and "key:" in human.stdout and "file" in human.stdout
    assert "expired 0" in _cli("gc").stdout


def test_reset_requires_confirmation_and_recovers_a_lost_key(
    db: Database, vault: Vault, vault_root: Path
) -> None:
    svc = SnapshotService(db, vault)
    svc.capture_app_snapshot(make_png(30, 30), app=AppIdentity())
    (vault_root.parent / "snapshot-vault.key").unlink()  # the key is lost
    out = _cli("stats")
    assert out.returncode == 1
    assert "vault_key_invalid" in out.stderr and "vault reset" in out.stderr
    assert _cli("reset").returncode == 2
    out = _cli("reset", "--yes")
    assert out.returncode == 0 and "deleted 1 snapshots" in out.stdout
    assert _cli("stats", "--json").returncode == 0
