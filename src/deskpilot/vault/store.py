"""Encrypted blob files under ``<vault>/blobs/``.

Each blob is one file named by 24 random bytes in hex plus ``.svb`` — 48 hex characters with
no relation to any id; only the database maps a blob to its file. The directory is 0700 and
files 0600. A write goes to a temporary ``.part`` file in the same directory, is fsynced,
renamed over its final name and the directory fsynced: a crash (even ``kill -9``) leaves
either the whole blob or a stray ``.part`` file that is never read and is swept as an orphan.

``vault.json`` beside ``blobs/`` records the format version, the key id and where the key is
kept, so opening the vault with a different key fails at once with a clear
``vault_key_invalid`` instead of every read failing later.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.vault.crypto import FORMAT_VERSION, Cipher
from deskpilot.vault.keys import KeyInfo, KeyStorage, Preference, load_or_create_key

BLOB_SUFFIX = ".svb"
TEMP_SUFFIX = ".part"
MARKER_NAME = "vault.json"
STORAGE_KEY_RE = re.compile(r"^[0-9a-f]{48}$")


@dataclass(frozen=True)
class StoredBlob:
    storage_key: str
    byte_length: int  # bytes on disk (header + ciphertext + tag): what the quota counts


@dataclass(frozen=True)
class VaultFile:
    name: str
    storage_key: str | None  # None for a temp file or anything not shaped like a blob
    size: int
    mtime: float


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if (path.stat().st_mode & 0o777) != 0o700:
        os.chmod(path, 0o700)


def _write_atomic(directory: Path, name: str, data: bytes) -> None:
    tmp = directory / f".{secrets.token_hex(12)}{TEMP_SUFFIX}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.replace(tmp, directory / name)
    _fsync_dir(directory)


class Vault:
    """The encrypted file store. Thread-safe: every operation is independent file I/O."""

    def __init__(self, root: Path, key: bytes, key_info: KeyInfo | None = None) -> None:
        self.root = root
        self.blobs_dir = root / "blobs"
        self._cipher = Cipher(key)
        self.key_info = key_info
        _private_dir(root)
        _private_dir(self.blobs_dir)
        self._check_marker()

    @classmethod
    def open(cls, root: Path | None = None, *, prefer: Preference | None = None) -> Vault:
        """Open (creating on first use) the vault and its installation key."""
        if root is None:
            from deskpilot.store.paths import vault_dir

            root = vault_dir()
        marker = _read_marker(root)
        expect_keyring = bool(marker and marker.get("keyStorage") == KeyStorage.KEYRING.value)
        key, info = load_or_create_key(root, prefer=prefer, expect_keyring=expect_keyring)
        return cls(root, key, info)

    @property
    def key_id(self) -> str:
        return self._cipher.key_id.hex()

    def _check_marker(self) -> None:
        marker = _read_marker(self.root)
        if marker is None:
            body = {
                "formatVersion": FORMAT_VERSION,
                "keyId": self.key_id,
                "keyStorage": self.key_info.storage.value if self.key_info else None,
            }
            _write_atomic(self.root, MARKER_NAME, json.dumps(body).encode())
            os.chmod(self.root / MARKER_NAME, 0o600)
            return
        if marker.get("keyId") != self.key_id:
            raise DeskpilotError(
                ErrorCode.VAULT_KEY_INVALID,
                "the snapshot vault was created with a different installation key than the one "
                "available now; its snapshots cannot be read. Restore the key, or run "
                "`deskpilot vault reset` to start an empty vault",
                details={"vaultKeyId": marker.get("keyId"), "currentKeyId": self.key_id},
            )

    # -- blobs
    def put(self, data: bytes, *, blob_id: str, kind: str) -> StoredBlob:
        sealed = self._cipher.seal(data, blob_id=blob_id, kind=kind)
        storage_key = secrets.token_hex(24)
        _write_atomic(self.blobs_dir, storage_key + BLOB_SUFFIX, sealed)
        return StoredBlob(storage_key=storage_key, byte_length=len(sealed))

    def path_for(self, storage_key: str) -> Path:
        if not STORAGE_KEY_RE.match(storage_key):
            raise DeskpilotError(ErrorCode.VAULT_INTEGRITY_ERROR, "malformed storage key")
        return self.blobs_dir / (storage_key + BLOB_SUFFIX)

    def get(self, storage_key: str, *, blob_id: str, kind: str) -> bytes:
        path = self.path_for(storage_key)
        try:
            sealed = path.read_bytes()
        except FileNotFoundError:
            raise DeskpilotError(
                ErrorCode.SNAPSHOT_NOT_FOUND, "the blob's file is not in the vault"
            ) from None
        return self._cipher.open(sealed, blob_id=blob_id, kind=kind)

    def remove(self, storage_key: str) -> bool:
        try:
            self.path_for(storage_key).unlink()
        except FileNotFoundError:
            return False
        return True

    def remove_file(self, name: str) -> bool:
        """Remove a file in ``blobs/`` by name (orphans, stray temp files)."""
        if "/" in name or name in ("", ".", ".."):
            return False
        try:
            (self.blobs_dir / name).unlink()
        except FileNotFoundError:
            return False
        return True

    def files(self) -> Iterator[VaultFile]:
        with os.scandir(self.blobs_dir) as entries:
            for entry in entries:
                if not entry.is_file(follow_symlinks=False):
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                stem = entry.name[: -len(BLOB_SUFFIX)]
                key = (
                    stem
                    if entry.name.endswith(BLOB_SUFFIX) and STORAGE_KEY_RE.match(stem)
                    else None
                )
                yield VaultFile(entry.name, key, st.st_size, st.st_mtime)

    def disk_bytes(self) -> int:
        return sum(f.size for f in self.files())


def _read_marker(root: Path) -> dict[str, object] | None:
    try:
        raw = (root / MARKER_NAME).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        raise DeskpilotError(
            ErrorCode.VAULT_INTEGRITY_ERROR, f"{root / MARKER_NAME} is not valid JSON"
        ) from None
    if not isinstance(data, dict):
        raise DeskpilotError(ErrorCode.VAULT_INTEGRITY_ERROR, f"{root / MARKER_NAME} is malformed")
    return data


def wipe_files(root: Path, *, drop_key: bool = False) -> int:
    """Remove every blob file and the marker (and the key file when asked); for reset.

    Needs no key, so it works exactly when the vault cannot be opened any more.
    """
    removed = 0
    blobs = root / "blobs"
    if blobs.is_dir():
        for entry in os.scandir(blobs):
            if entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
                removed += 1
    (root / MARKER_NAME).unlink(missing_ok=True)
    if drop_key:
        from deskpilot.vault.keys import forget_key

        forget_key(root)
    return removed


__all__ = ["BLOB_SUFFIX", "MARKER_NAME", "StoredBlob", "Vault", "VaultFile", "wipe_files"]
