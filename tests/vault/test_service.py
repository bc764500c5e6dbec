"""capture_app_snapshot / record_evidence / model_frame end to end, down to stored pixels."""

from __future__ import annotations

from pathlib import Path

import pytest
from vault_helpers import Clock, add_session, decode, fixed_service, make_png, window

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import AppIdentity, Rect
from deskpilot.store.db import Database
from deskpilot.store.settings import Settings
from deskpilot.vault.service import SnapshotService
from deskpilot.vault.store import Vault

GREEN = (20, 160, 40)
GREY = (128, 128, 128)


def _files(vault: Vault) -> list[str]:
    return sorted(f.name for f in vault.files())


def test_app_snapshot_is_redacted_in_stored_pixels(service: SnapshotService, vault: Vault) -> None:
    """A 2x capture of an 800x500 window with a password field at (100,200,300x30):
    the decrypted original and preview are grey exactly there, green elsewhere."""
    png = make_png(1600, 1000, GREEN)
    rec = service.capture_app_snapshot(
        png,
        app=AppIdentity(executable="mousepad"),
        window=window(800, 500),
        sensitive_regions=[Rect(x=100, y=200, width=300, height=30)],
    )
    assert rec.kind == "app_snapshot" and rec.retention_mode == "manual"
    assert rec.redaction["applied"] is True and rec.redaction["regionCount"] == 1
    assert rec.redaction["imageRegions"] == [[200, 400, 600, 60]]
    assert rec.redaction["regionsKnown"] is True
    assert set(rec.blobs) == {"image", "preview"}

    original = decode(service.read_blob(rec.id, "image"))
    assert original.size == (1600, 1000)
    assert original.getpixel((200, 400)) == GREY
    assert original.getpixel((799, 459)) == GREY
    assert original.getpixel((800, 460)) == GREEN
    assert original.getpixel((199, 400)) == GREEN

    preview = decode(service.read_blob(rec.id, "preview"))
    assert preview.size == (1200, 750)
    assert preview.getpixel((300, 310)) == GREY  # inside 150..600 x 300..345
    assert preview.getpixel((10, 10)) == GREEN

    # the stored row carries the same metadata
    assert service.get(rec.id).redaction == rec.redaction


def test_small_snapshot_has_no_separate_preview(service: SnapshotService) -> None:
    rec = service.capture_app_snapshot(make_png(800, 600), app=AppIdentity(executable="xterm"))
    assert set(rec.blobs) == {"image"}
    assert rec.redaction["applied"] is False
    assert rec.redaction["regionsKnown"] is False
    assert decode(service.read_preview(rec.id) or b"").size == (800, 600)


@pytest.mark.parametrize(
    "app",
    [AppIdentity(executable="keepassxc"), AppIdentity(executable="x", wm_class="pinentry-gtk-2")],
)
def test_blocked_app_refused_and_nothing_stored(
    service: SnapshotService, vault: Vault, db: Database, app: AppIdentity
) -> None:
    for call in (service.capture_app_snapshot, service.record_evidence):
        with pytest.raises(DeskpilotError) as err:
            call(make_png(100, 100), app=app)
        assert err.value.code is ErrorCode.SENSITIVE_INPUT_BLOCKED
    # also when the app arrives only on the window
    with pytest.raises(DeskpilotError):
        service.capture_app_snapshot(
            make_png(100, 100), app=AppIdentity(), window=window(100, 100, app=app)
        )
    assert _files(vault) == []
    assert db.query_one("SELECT COUNT(*) AS n FROM snapshots")["n"] == 0  # type: ignore[index]


def test_non_png_refused(service: SnapshotService, vault: Vault) -> None:
    with pytest.raises(DeskpilotError) as err:
        service.capture_app_snapshot(b"\xff\xd8\xff\xe0 jpeg", app=AppIdentity(executable="x"))
    assert err.value.code is ErrorCode.INVALID_REQUEST
    assert _files(vault) == []


def test_session_snapshot_and_unknown_session(
    service: SnapshotService, db: Database, vault: Vault
) -> None:
    add_session(db, "s1")
    rec = service.capture_app_snapshot(make_png(10, 10), app=AppIdentity(), session_id="s1")
    assert rec.retention_mode == "session" and rec.session_id == "s1"
    with pytest.raises(DeskpilotError) as err:
        service.capture_app_snapshot(make_png(10, 10), app=AppIdentity(), session_id="nope")
    assert err.value.code is ErrorCode.SESSION_NOT_FOUND
    assert len(_files(vault)) == 1  # the refused snapshot left no file behind


def test_evidence_frames_follow_full_recording(
    db: Database, vault: Vault, clock: Clock, service: SnapshotService
) -> None:
    png = make_png(2400, 1500, GREEN)
    region = [Rect(x=0, y=0, width=100, height=100)]
    win = window(1200, 750)
    # default settings: fullRecordingEnabled off → no evidence frame is stored at all
    for trigger in ("before", "after", "observation"):
        assert service.record_evidence(png, app=win.app, window=win, trigger=trigger) is None  # type: ignore[arg-type]
    assert _files(vault) == []
    Settings.update(db, full_recording_enabled=True)  # read from the settings table
    rec = service.record_evidence(
        png,
        app=win.app,
        window=win,
        sensitive_regions=region,
        trigger="before",
        frame_id="f1",
        action_id="act_1",
    )
    assert rec is not None
    assert rec.kind == "evidence" and rec.retention_mode == "ttl"
    assert rec.expires_at == pytest.approx(clock.now + 24 * 3600)
    assert (rec.width, rec.height) == (1200, 750)
    assert rec.redaction["trigger"] == "before" and rec.redaction["frameId"] == "f1"
    assert rec.redaction["actionId"] == "act_1"
    frame = decode(service.read_blob(rec.id, "evidence"))
    assert frame.size == (1200, 750)
    # window (0..100) → image x2 (0..200) → evidence x0.5 (0..100)
    assert frame.getpixel((50, 50)) == GREY
    assert frame.getpixel((150, 150)) == GREEN
    # and off again: the next frame is not kept
    Settings.update(db, full_recording_enabled=False)
    assert service.record_evidence(png, app=win.app, window=win, trigger="after") is None
    assert len(_files(vault)) == 1


def test_model_frame_follows_redact_setting(db: Database, service: SnapshotService) -> None:
    png = make_png(800, 500, GREEN)
    region = [Rect(x=10, y=10, width=100, height=50)]
    jpeg, *_ = service.model_frame(png, sensitive_regions=region, window=window(800, 500))
    r, g, b = decode(jpeg).getpixel((50, 30))
    assert abs(r - 128) < 8 and abs(g - 128) < 8 and abs(b - 128) < 8
    Settings.update(db, redact_sensitive_content=False)
    jpeg, *_ = service.model_frame(png, sensitive_regions=region, window=window(800, 500))
    r, g, _b = decode(jpeg).getpixel((50, 30))
    assert g > 140 and r < 60


@pytest.mark.parametrize("setting", [True, False])
def test_stored_frames_follow_the_redact_setting(
    db: Database, service: SnapshotService, setting: bool
) -> None:
    """Snapshots and evidence paint the secure region out while ``redactSensitiveContent``
    is on, keep it as captured when it is off, and record which it was."""
    Settings.update(db, redact_sensitive_content=setting, full_recording_enabled=True)
    png = make_png(800, 500, GREEN)
    region = [Rect(x=10, y=10, width=100, height=50)]
    win = window(800, 500)
    inside = GREY if setting else GREEN
    snap = service.capture_app_snapshot(png, app=win.app, window=win, sensitive_regions=region)
    assert snap.redaction["redactSensitiveContent"] is setting
    assert snap.redaction["applied"] is setting
    assert snap.redaction["secureRegionCount"] == 1
    assert decode(service.read_blob(snap.id, "image")).getpixel((50, 30)) == inside
    ev = service.record_evidence(png, app=win.app, window=win, sensitive_regions=region)
    assert ev is not None and ev.redaction["redactSensitiveContent"] is setting
    assert ev.redaction["applied"] is setting
    if not setting:
        assert ev.redaction["reasonCodes"] == ["redaction_disabled_by_setting"]
    assert decode(service.read_blob(ev.id, "evidence")).getpixel((50, 30)) == inside
    assert decode(service.read_blob(ev.id, "evidence")).getpixel((400, 300)) == GREEN


def test_quota_too_small_for_one_snapshot(
    db: Database, vault: Vault, clock: Clock, tmp_path: Path
) -> None:
    svc = fixed_service(db, vault, clock, quota_bytes=1000)
    with pytest.raises(DeskpilotError) as err:
        svc.capture_app_snapshot(make_png(300, 300), app=AppIdentity())
    assert err.value.code is ErrorCode.SNAPSHOT_TOO_LARGE
    assert _files(vault) == []


def test_tampered_blob_never_returns_wrong_bytes(service: SnapshotService, vault: Vault) -> None:
    rec = service.capture_app_snapshot(make_png(64, 64), app=AppIdentity())
    (f,) = list(vault.files())
    path = vault.blobs_dir / f.name
    raw = bytearray(path.read_bytes())
    raw[-20] ^= 0x04
    path.write_bytes(bytes(raw))
    with pytest.raises(DeskpilotError) as err:
        service.read_blob(rec.id, "image")
    assert err.value.code is ErrorCode.VAULT_INTEGRITY_ERROR


def test_open_service_uses_the_data_dir_and_starts_maintenance(
    db: Database, data_dir: Path, clock: Clock
) -> None:
    from deskpilot.vault.service import open_service

    service = open_service(db)
    try:
        assert service.vault.root == data_dir / "snapshot-vault"
        assert service._scheduler is not None and service._scheduler.runs >= 0
        rec = service.capture_app_snapshot(make_png(20, 20), app=AppIdentity())
        assert rec.preview_url is None  # no preview server attached
        assert service.read_blob(rec.id, "image")
    finally:
        service.stop_maintenance()


def test_bad_preview_ttl_stores_nothing(service: SnapshotService, vault: Vault) -> None:
    service.attach_preview("http://127.0.0.1:9")
    with pytest.raises(DeskpilotError) as err:
        service.capture_app_snapshot(make_png(20, 20), app=AppIdentity(), preview_ttl_s=7200)
    assert err.value.code is ErrorCode.INVALID_REQUEST
    assert _files(vault) == []
