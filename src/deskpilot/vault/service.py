"""The vault's front door for the runtime and MCP: capture, evidence, previews, maintenance.

Typical wiring (runtime)::

    vault = Vault.open()
    service = SnapshotService(db, vault)            # policy read from settings per call
    server = PreviewServer(service); service.attach_preview(server.start())
    service.start_maintenance()                     # at start, then every 6 h

    rec = service.capture_app_snapshot(png, app=capture.window.app, window=capture.window,
                                       sensitive_regions=obs.sensitive_regions,
                                       session_id=sid, turn_id=turn)
    rec.preview_url   # http://127.0.0.1:<port>/snapshot/<id>/preview?cap=<token>
    service.end_turn(turn)                          # revokes that turn's preview tokens

Every capture path checks the credential-app blocklist first, then — while
``redactSensitiveContent`` is on (the default) — paints secure regions out *before* any byte
reaches the disk; redaction metadata travels with the snapshot row. Evidence frames (the
before/after frames of an action) are stored only while ``fullRecordingEnabled`` is on. Both
settings are read from the settings table on every call, so a change by any process (the
dashboard, ``deskpilot settings set``) applies to the next frame without a restart.
"""

from __future__ import annotations

import dataclasses
import secrets
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.privacy import assert_capture_allowed
from deskpilot.protocol.wire import AppIdentity, Rect, WindowInfo
from deskpilot.store.db import Database
from deskpilot.store.snapshots import BlobKind, BlobRow, SnapshotRepository, SnapshotRow
from deskpilot.vault import images
from deskpilot.vault.capabilities import CapabilityRegistry, preview_url, validate_ttl
from deskpilot.vault.retention import (
    EVIDENCE_TTL_S,
    MAINTENANCE_INTERVAL_S,
    Maintenance,
    MaintenanceReport,
    MaintenanceScheduler,
    VaultPolicy,
)
from deskpilot.vault.store import Vault, wipe_files

#: which frame of an action an evidence frame is (``observation``: one not tied to an action)
EvidenceTrigger = Literal["before", "after", "observation"]


@dataclass(frozen=True)
class SnapshotRecord:
    """What a caller learns about a stored snapshot. Never holds pixels."""

    id: str
    kind: Literal["app_snapshot", "evidence"]
    session_id: str | None
    retention_mode: Literal["ttl", "session", "manual"]
    created_at: float
    #: when it will be deleted at the latest (session snapshots may go earlier, with their
    #: session); computed from the current retention setting for session/manual modes.
    expires_at: float | None
    width: int | None
    height: int | None
    blobs: dict[str, int] = field(default_factory=dict)  # kind -> encrypted bytes
    redaction: dict[str, Any] = field(default_factory=dict)
    app: dict[str, Any] | None = None
    preview_url: str | None = None
    preview_expires_at: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "snapshotId": self.id,
            "kind": self.kind,
            "sessionId": self.session_id,
            "retentionMode": self.retention_mode,
            "createdAt": self.created_at,
            "expiresAt": self.expires_at,
            "width": self.width,
            "height": self.height,
            "blobs": dict(self.blobs),
            "redaction": dict(self.redaction),
            "app": self.app,
            "previewUrl": self.preview_url,
            "previewExpiresAt": self.preview_expires_at,
        }


def _new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


def _window_size(window: WindowInfo | None) -> tuple[int, int] | None:
    if window is None:
        return None
    return (window.bounds.width, window.bounds.height)


class SnapshotService:
    def __init__(
        self,
        db: Database,
        vault: Vault,
        policy: VaultPolicy | Callable[[], VaultPolicy] | None = None,
        *,
        capabilities: CapabilityRegistry | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.db = db
        self.vault = vault
        self.repo = SnapshotRepository(db)
        self.clock = clock
        self.capabilities = capabilities or CapabilityRegistry(clock)
        if policy is None:
            self._policy: Callable[[], VaultPolicy] = lambda: VaultPolicy.load(db)
        elif isinstance(policy, VaultPolicy):
            fixed = policy
            self._policy = lambda: fixed
        else:
            self._policy = policy
        self.maintenance = Maintenance(
            self.repo, vault, self._policy, clock=clock, on_deleted=self._revoke_snapshots
        )
        self._preview_base: str | None = None
        self._scheduler: MaintenanceScheduler | None = None

    # -- wiring
    @property
    def policy(self) -> VaultPolicy:
        return self._policy()

    def attach_preview(self, base_url: str | None) -> None:
        """Where the preview server listens (``http://127.0.0.1:<port>``); None detaches."""
        self._preview_base = base_url.rstrip("/") if base_url else None

    @property
    def preview_base_url(self) -> str | None:
        return self._preview_base

    def start_maintenance(self, *, interval_s: float = MAINTENANCE_INTERVAL_S) -> None:
        if self._scheduler is None:
            self._scheduler = MaintenanceScheduler(self.maintenance, interval_s=interval_s)
            self._scheduler.start()

    def stop_maintenance(self) -> None:
        if self._scheduler is not None:
            self._scheduler.stop()
            self._scheduler = None

    # -- capture
    def capture_app_snapshot(
        self,
        png: bytes,
        *,
        app: AppIdentity,
        window: WindowInfo | None = None,
        sensitive_regions: Sequence[Rect] | None = None,
        session_id: str | None = None,
        turn_id: str | None = None,
        preview_ttl_s: float | None = None,
    ) -> SnapshotRecord:
        """Store an app snapshot (original PNG + preview when wider than 1,200 px).

        ``sensitive_regions`` are in window coordinates (``window.bounds`` size); ``None``
        means the caller has no tree for this frame, which is recorded in the redaction
        metadata as ``regionsKnown: false`` so an audit can tell "nothing to hide" from
        "not known".
        """
        assert_capture_allowed(app)
        if window is not None:
            assert_capture_allowed(window.app)
        validate_ttl(preview_ttl_s)  # a bad TTL must not leave a stored snapshot behind
        regions = list(sensitive_regions or ())
        policy = self.policy
        prepared = images.prepare_capture(
            png,
            regions=regions,
            window_size=_window_size(window),
            redact_enabled=policy.redact_sensitive_content,
        )
        products: list[tuple[BlobKind, bytes]] = [("image", prepared.png)]
        if prepared.width > images.MAX_PREVIEW_WIDTH:
            img = prepared.image if prepared.image is not None else images.decode_png(png)
            products.append(("preview", images.encode_png(images.preview_image(img))))
        redaction = prepared.redaction.to_json() | {
            "regionsKnown": sensitive_regions is not None,
            # the setting that decided whether the regions were painted (docs/privacy.md)
            "redactSensitiveContent": policy.redact_sensitive_content,
            "secureRegionCount": len(regions),
        }
        now = self.clock()
        record = self._store(
            kind="app_snapshot",
            retention_mode="session" if session_id else "manual",
            session_id=session_id,
            expires_at=None,
            app=app.wire(),
            width=prepared.width,
            height=prepared.height,
            redaction=redaction,
            products=products,
            now=now,
            policy=policy,
        )
        if self._preview_base is not None:
            return self.issue_preview(
                record, session_id=session_id, turn_id=turn_id, ttl_s=preview_ttl_s
            )
        return record

    def record_evidence(
        self,
        png: bytes,
        *,
        app: AppIdentity,
        window: WindowInfo | None = None,
        sensitive_regions: Sequence[Rect] | None = None,
        session_id: str | None = None,
        trigger: EvidenceTrigger = "after",
        frame_id: str | None = None,
        action_id: str | None = None,
    ) -> SnapshotRecord | None:
        """Store an evidence frame (≤ 1,200 px wide, 24 h TTL) for the audit: the window
        before or after an action (``trigger``, with the action's ledger id).

        Only while ``fullRecordingEnabled`` is on; off, nothing is stored and None comes
        back (a credential app is refused either way). Secure regions are painted out while
        ``redactSensitiveContent`` is on.
        """
        assert_capture_allowed(app)
        if window is not None:
            assert_capture_allowed(window.app)
        policy = self.policy
        if not policy.full_recording_enabled:
            return None
        width, height = images.png_dimensions(png)
        img = images.decode_png(png)
        regions = list(sensitive_regions or ())
        if policy.redact_sensitive_content:
            info = images.redact(img, regions, images.region_scale(img.size, _window_size(window)))
        else:
            reasons = ("redaction_disabled_by_setting",) if regions else ()
            info = images.RedactionInfo(applied=False, region_count=0, reason_codes=reasons)
        frame = images.evidence_image(img)
        redaction = info.to_json() | {
            "regionsKnown": sensitive_regions is not None,
            "trigger": trigger,
            "frameId": frame_id,
            "actionId": action_id,
            "sourceWidth": width,
            "sourceHeight": height,
            "redactSensitiveContent": policy.redact_sensitive_content,
            "secureRegionCount": len(regions),
        }
        now = self.clock()
        return self._store(
            kind="evidence",
            retention_mode="ttl",
            session_id=session_id,
            expires_at=now + EVIDENCE_TTL_S,
            app=app.wire(),
            width=frame.width,
            height=frame.height,
            redaction=redaction,
            products=[("evidence", images.encode_png(frame))],
            now=now,
            policy=policy,
        )

    def model_frame(
        self,
        png: bytes,
        *,
        sensitive_regions: Sequence[Rect] | None = None,
        window: WindowInfo | None = None,
    ) -> tuple[bytes, int, int, float]:
        """The in-memory JPEG for the decision model; secure regions painted out unless
        ``redactSensitiveContent`` is off."""
        regions = sensitive_regions if self.policy.redact_sensitive_content else None
        return images.model_frame(png, redact_regions=regions, window_size=_window_size(window))

    def _store(
        self,
        *,
        kind: Literal["app_snapshot", "evidence"],
        retention_mode: Literal["ttl", "session", "manual"],
        session_id: str | None,
        expires_at: float | None,
        app: dict[str, Any] | None,
        width: int,
        height: int,
        redaction: dict[str, Any],
        products: Sequence[tuple[BlobKind, bytes]],
        now: float,
        policy: VaultPolicy,
    ) -> SnapshotRecord:
        snapshot_id = _new_id("snap")
        stored: list[BlobRow] = []
        try:
            for blob_kind, data in products:
                blob_id = _new_id("blob")
                sb = self.vault.put(data, blob_id=blob_id, kind=blob_kind)
                stored.append(
                    BlobRow(
                        id=blob_id,
                        snapshot_id=snapshot_id,
                        kind=blob_kind,
                        storage_key=sb.storage_key,
                        byte_length=sb.byte_length,
                        content_type="image/png",
                        created_at=now,
                        last_access_at=now,
                    )
                )
            size = sum(b.byte_length for b in stored)
            if size > policy.quota_bytes:
                raise DeskpilotError(
                    ErrorCode.SNAPSHOT_TOO_LARGE,
                    f"the snapshot needs {size} bytes; the vault quota is {policy.quota_bytes}",
                )
            row = SnapshotRow(
                id=snapshot_id,
                session_id=session_id,
                kind=kind,
                retention_mode=retention_mode,
                expires_at=expires_at,
                app=app,
                width=width,
                height=height,
                redaction=redaction,
                created_at=now,
            )
            try:
                self.repo.insert(row, stored)
            except sqlite3.IntegrityError:
                if session_id is not None and not self.repo.session_exists(session_id):
                    raise DeskpilotError(
                        ErrorCode.SESSION_NOT_FOUND, f"session {session_id!r} does not exist"
                    ) from None
                raise
        except BaseException:
            for b in stored:
                self.vault.remove(b.storage_key)
            raise
        self.maintenance.enforce_quota(policy, keep=[snapshot_id])
        return self._record(row, stored, policy)

    # -- reading
    def _record(
        self, row: SnapshotRow, blobs: Sequence[BlobRow], policy: VaultPolicy | None = None
    ) -> SnapshotRecord:
        policy = policy or self.policy
        if row.retention_mode == "ttl":
            expires = row.expires_at
        else:
            expires = row.created_at + policy.retention_s
        return SnapshotRecord(
            id=row.id,
            kind=row.kind,
            session_id=row.session_id,
            retention_mode=row.retention_mode,
            created_at=row.created_at,
            expires_at=expires,
            width=row.width,
            height=row.height,
            blobs={b.kind: b.byte_length for b in blobs},
            redaction=row.redaction,
            app=row.app,
        )

    def get(self, snapshot_id: str) -> SnapshotRecord:
        row = self.repo.get(snapshot_id)
        if row is None:
            raise DeskpilotError(
                ErrorCode.SNAPSHOT_NOT_FOUND, f"snapshot {snapshot_id!r} does not exist"
            )
        return self._record(row, self.repo.blobs(snapshot_id))

    def read_blob(self, snapshot_id: str, kind: BlobKind) -> bytes:
        """Decrypted bytes of one blob; marks it used for LRU."""
        blob = self.repo.blob(snapshot_id, kind)
        if blob is None:
            raise DeskpilotError(
                ErrorCode.SNAPSHOT_NOT_FOUND, f"snapshot {snapshot_id!r} has no {kind} blob"
            )
        data = self.vault.get(blob.storage_key, blob_id=blob.id, kind=blob.kind)
        self.repo.touch_blob(blob.id, self.clock())
        return data

    def read_preview(self, snapshot_id: str) -> bytes | None:
        """The preview blob, else the original (already ≤ 1,200 wide); only image kinds."""
        kinds: tuple[BlobKind, ...] = ("preview", "image")
        for kind in kinds:
            blob = self.repo.blob(snapshot_id, kind)
            if blob is not None:
                data = self.vault.get(blob.storage_key, blob_id=blob.id, kind=blob.kind)
                self.repo.touch_blob(blob.id, self.clock())
                return data
        return None

    # -- previews and revocation
    def issue_preview(
        self,
        record_or_id: SnapshotRecord | str,
        *,
        session_id: str | None = None,
        turn_id: str | None = None,
        ttl_s: float | None = None,
    ) -> SnapshotRecord:
        """A record carrying a fresh preview URL (also how an expired link is renewed)."""
        record = self.get(record_or_id) if isinstance(record_or_id, str) else record_or_id
        if self._preview_base is None:
            raise DeskpilotError(
                ErrorCode.ENVIRONMENT_UNAVAILABLE, "the preview server is not running"
            )
        if record.kind != "app_snapshot":
            raise DeskpilotError(ErrorCode.INVALID_REQUEST, "only app snapshots have preview links")
        token, expires = self.capabilities.issue(
            record.id,
            session_id=session_id if session_id is not None else record.session_id,
            turn_id=turn_id,
            ttl_s=ttl_s,
        )
        url = preview_url(self._preview_base, record.id, token)
        return dataclasses.replace(record, preview_url=url, preview_expires_at=expires)

    def end_turn(self, turn_id: str) -> int:
        return self.capabilities.revoke_turn(turn_id)

    def end_session(self, session_id: str) -> int:
        return self.capabilities.revoke_session(session_id)

    def _revoke_snapshots(self, ids: Sequence[str]) -> None:
        for sid in ids:
            self.capabilities.revoke_snapshot(sid)

    def delete(self, snapshot_id: str) -> bool:
        return self.maintenance.delete([snapshot_id]) > 0

    def delete_session_snapshots(self, session_id: str) -> int:
        """For a session that is kept but whose snapshots should go now."""
        ids = [r.id for r in self.repo.recent(session_id=session_id, limit=1_000_000)]
        self.capabilities.revoke_session(session_id)
        return self.maintenance.delete(ids)

    # -- operations
    def run_maintenance(self) -> MaintenanceReport:
        return self.maintenance.run_once()

    def stats(self) -> dict[str, Any]:
        policy = self.policy
        files = list(self.vault.files())
        return {
            "vaultDir": str(self.vault.root),
            "key": self.vault.key_info.to_json() if self.vault.key_info else None,
            "policy": {
                "redactSensitiveContent": policy.redact_sensitive_content,
                "fullRecordingEnabled": policy.full_recording_enabled,
                "evidenceRetentionDays": policy.evidence_retention_days,
                "quotaBytes": policy.quota_bytes,
            },
            "trackedBytes": self.repo.total_bytes(),
            "diskBytes": sum(f.size for f in files),
            "files": len(files),
            "activePreviewTokens": self.capabilities.active(),
            **self.repo.stats(),
        }


def open_service(
    db: Database,
    *,
    policy: VaultPolicy | Callable[[], VaultPolicy] | None = None,
    maintenance: bool = True,
) -> SnapshotService:
    """The vault in the data dir, its service, and maintenance started (at start, every 6 h).

    Raises ``vault_key_invalid`` when the key is unusable; callers that can run without
    snapshots (``deskpilot serve``) catch it, report it and leave ``capture_app_snapshot``
    unavailable rather than minting a new key.
    """
    service = SnapshotService(db, Vault.open(), policy)
    if maintenance:
        service.start_maintenance()
    return service


def reset_vault(db: Database, root: Path, *, new_key: bool = False) -> dict[str, int]:
    """Forget every snapshot: rows, files and the key marker (and the key, if asked).

    The way out when the installation key is lost: the old blobs cannot be decrypted by
    anyone, so they are removed and the next open starts an empty vault with the key that is
    available then (or a fresh one with ``new_key``).
    """
    repo = SnapshotRepository(db)
    with db.transaction() as conn:
        rows = conn.execute("DELETE FROM snapshots").rowcount
        conn.execute("DELETE FROM vault_tombstones")
    files = wipe_files(root, drop_key=new_key)
    del repo
    return {"snapshotsDeleted": rows, "filesDeleted": files}


__all__ = [
    "EvidenceTrigger",
    "SnapshotRecord",
    "SnapshotService",
    "open_service",
    "reset_vault",
]
