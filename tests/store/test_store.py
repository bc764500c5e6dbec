"""The store on a real SQLite file: pragmas, migrations, repositories, settings."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import EventType, SessionState, TaskContract
from deskpilot.protocol.wire import TargetSpec
from deskpilot.store import Database, data_dir
from deskpilot.store.halts import HaltRepository
from deskpilot.store.leases import LeaseRepository
from deskpilot.store.session_rows import SessionRepository
from deskpilot.store.settings import Settings, SettingsModel
from deskpilot.store.timeline import TimelineRepository
from deskpilot.store.verifications import VerificationRepository


@pytest.fixture
def db(tmp_path: Path) -> Database:
    return Database(tmp_path / "d.sqlite3")


def test_wal_foreign_keys_and_migrations(db: Database, tmp_path: Path) -> None:
    assert db.query_one("PRAGMA journal_mode")[0] == "wal"  # type: ignore[index]
    assert db.query_one("PRAGMA foreign_keys")[0] == 1  # type: ignore[index]
    assert db.schema_version >= 2
    tables = {r["name"] for r in db.query("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {
        "sessions",
        "actions",
        "timeline_events",
        "verifications",
        "snapshots",
        "snapshot_blobs",
        "settings",
        "leases",
        "confirmations",
        "halts",
        "agent_sessions",
    } <= tables
    version = db.schema_version
    db.close()
    again = Database(tmp_path / "d.sqlite3")  # reopening does not re-run migrations
    assert again.schema_version == version
    with pytest.raises(sqlite3.IntegrityError):
        again.execute(
            "INSERT INTO timeline_events(session_id, type, created_at) VALUES ('nope', 'x', 0)"
        )


def test_data_dir_honours_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DESKPILOT_DATA_DIR", str(tmp_path / "here"))
    assert data_dir() == tmp_path / "here" and (tmp_path / "here").is_dir()


def test_session_rows_round_trip_and_compare_and_set(db: Database) -> None:
    repo = SessionRepository(db)
    contract = TaskContract(allowed_apps=["mousepad"], max_steps=5)
    repo.insert("s1", "agent", "delegated", contract, TargetSpec(window_id="0x1"))
    row = repo.get("s1")
    assert (
        row is not None and row.contract == contract and row.target == TargetSpec(window_id="0x1")
    )
    assert row.state == SessionState.PREFLIGHTING and not row.terminal
    assert repo.set_state("s1", SessionState.OBSERVING, expect=SessionState.PREFLIGHTING)
    assert not repo.set_state("s1", SessionState.ACTING, expect=SessionState.PREFLIGHTING)
    assert repo.set_state("s1", SessionState.CANCELED, cancel_reason="kill_switch")
    row = repo.get("s1")
    assert row is not None and row.ended_at is not None and row.cancel_reason == "kill_switch"
    assert repo.list_active() == []


def test_timeline_and_verifications(db: Database) -> None:
    SessionRepository(db).insert("s1", "agent", "atomic", TaskContract(), None)
    tl = TimelineRepository(db)
    a = tl.append("s1", EventType.SESSION_STARTED, payload={"mode": "atomic"})
    b = tl.append("s1", EventType.SESSION_PAUSED, payload={"by": "person"})
    assert [e.seq for e in tl.list("s1")] == [a.seq, b.seq]
    assert tl.list("s1", after_seq=a.seq)[0].payload == {"by": "person"}
    assert tl.last("s1").type == EventType.SESSION_PAUSED  # type: ignore[union-attr]
    v = VerificationRepository(db)
    v.start("v1", "s1", {"kind": "visual", "assertion": "text_present", "text": "84"})
    v.complete("v1", passed=True, reason="assertion_passed", evidence={"frameId": "f1"})
    got = v.latest("s1")
    assert got is not None and got.passed is True and got.evidence == {"frameId": "f1"}


def test_lease_release_never_drops_a_newer_holder(db: Database) -> None:
    leases = LeaseRepository(db)
    leases.put("desktop", "s1", "a")
    leases.put("desktop", "s2", "b")
    assert not leases.release("desktop", "s1")
    assert leases.get("desktop").session_id == "s2"  # type: ignore[union-attr]
    assert leases.release("desktop", "s2") and leases.get("desktop") is None


def test_halts_coalesce_and_bind_by_agent_start(db: Database) -> None:
    halts = HaltRepository(db)
    first = halts.engage("kill_switch")
    assert halts.engage("kill_switch").id == first.id
    assert halts.lift("cli") == 1 and halts.active() is None
    assert halts.agent_session_began("a") == halts.agent_session_began("a")


def test_settings_defaults_update_validation_and_listeners(db: Database) -> None:
    assert Settings.load(db) == SettingsModel()  # a fresh install reads the defaults
    assert Settings.load(db).kill_switch == "ctrl+shift+Escape"
    seen: list[tuple[str, str]] = []
    unsubscribe = Settings.subscribe(
        lambda _db, old, new: seen.append((old.kill_switch, new.kill_switch))
    )
    try:
        rev = Settings.revision(db)
        new = Settings.update(db, killSwitch="ctrl+alt+k", evidence_retention_days=7)
        assert new.kill_switch == "ctrl+alt+k" and new.evidence_retention_days == 7
        assert Settings.load(db) == new and Settings.revision(db) != rev
        assert seen == [("ctrl+shift+Escape", "ctrl+alt+k")]
        with pytest.raises(DeskpilotError) as e:
            Settings.update(db, vault_quota_bytes=5)
        assert e.value.code == ErrorCode.INVALID_REQUEST and "vault_quota_bytes" in e.value.message
        with pytest.raises(DeskpilotError):
            Settings.update(db, pipPanel=True)  # not a setting: nothing would read it
        with pytest.raises(DeskpilotError):
            Settings.update(db, remote={"steer": True})  # not a remote capability
        assert Settings.update(db, remote={"observe": True}).remote.observe is True
        # a hand-broken row loses only itself
        db.execute(
            "UPDATE settings SET value_json = '\"many\"' WHERE key = 'evidenceRetentionDays'"
        )
        assert Settings.load(db).evidence_retention_days == 30
        assert Settings.load(db).kill_switch == "ctrl+alt+k"
        assert Settings.reset(db).kill_switch == "ctrl+shift+Escape"
    finally:
        unsubscribe()
