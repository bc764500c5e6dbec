"""Where the vault's 32-byte installation key lives.

Preferred: the OS keyring through ``keyring`` (Secret Service on Linux), under service
``deskpilot`` and name ``snapshot-vault-installation-key-v1``. A headless machine often has no
usable keyring (no session bus, no Secret Service daemon, or only keyring's ``fail``
backend); there the key goes into a file ``snapshot-vault.key`` beside the vault directory,
mode 0600, and :func:`key_storage` says so plainly for ``deskpilot doctor``. A file key is
only as safe as the account: anyone who can read the data directory as this user can read
the snapshots.

Choosing is sticky: an existing key file always wins (a machine that once fell back keeps
working when a keyring appears later), and a vault whose marker says its key is in the
keyring refuses to start a fresh file key when the keyring is unreachable — that would
silently orphan every stored snapshot. ``DESKPILOT_VAULT_KEY_STORAGE=file|keyring`` forces
a choice. Any key that does not decode to exactly 32 bytes is ``vault_key_invalid``; there
is no padding, truncation or fallback.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import enum
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.vault.crypto import KEY_BYTES, check_key, key_id

KEYRING_SERVICE = "deskpilot"
KEYRING_USERNAME = "snapshot-vault-installation-key-v1"
KEY_FILE_NAME = "snapshot-vault.key"
STORAGE_ENV = "DESKPILOT_VAULT_KEY_STORAGE"

Preference = Literal["auto", "keyring", "file"]


class KeyStorage(enum.StrEnum):
    KEYRING = "keyring"
    FILE = "file"


@dataclass(frozen=True)
class KeyInfo:
    """Where the key is (or would be) kept, for doctor and ``vault stats``."""

    storage: KeyStorage
    location: str  # "keyring:<backend>" or the key file's path
    detail: str  # one plain sentence: why this storage
    key_id: str | None = None  # hex, when the key was loaded

    def to_json(self) -> dict[str, str | None]:
        return {
            "storage": self.storage.value,
            "location": self.location,
            "detail": self.detail,
            "keyId": self.key_id,
        }


def key_file_path(vault_root: Path) -> Path:
    return vault_root.parent / KEY_FILE_NAME


def _preference(prefer: Preference | None) -> Preference:
    if prefer is not None:
        return prefer
    raw = os.environ.get(STORAGE_ENV, "auto").strip().lower() or "auto"
    if raw not in ("auto", "keyring", "file"):
        raise DeskpilotError(
            ErrorCode.INVALID_REQUEST,
            f"{STORAGE_ENV} must be auto, keyring or file (got {raw!r})",
        )
    return raw  # type: ignore[return-value]


def keyring_status() -> tuple[bool, str]:
    """Whether a real keyring backend is usable here, and a sentence saying which or why not."""
    try:
        import keyring
        from keyring.backends import chainer, fail
    except Exception as exc:  # pragma: no cover - keyring is a hard dependency
        return False, f"the keyring package cannot be imported ({type(exc).__name__})"
    try:
        backend = keyring.get_keyring()
    except Exception as exc:
        return False, f"no keyring backend could be loaded ({type(exc).__name__})"
    name = f"{type(backend).__module__}.{type(backend).__name__}"
    if isinstance(backend, fail.Keyring):
        return False, "no OS keyring backend is available (no Secret Service on the session bus)"
    if isinstance(backend, chainer.ChainerBackend) and not backend.backends:
        return False, "no OS keyring backend is available"
    try:
        keyring.get_password(KEYRING_SERVICE, KEYRING_USERNAME)
    except Exception as exc:
        return False, f"the keyring backend {name} is not usable ({type(exc).__name__})"
    return True, name


def _decode(text: str, where: str) -> bytes:
    raw = text.strip()
    try:
        key = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
    except (binascii.Error, ValueError):
        raise DeskpilotError(
            ErrorCode.VAULT_KEY_INVALID, f"the vault key in {where} is not valid base64url"
        ) from None
    if len(key) != KEY_BYTES:
        raise DeskpilotError(
            ErrorCode.VAULT_KEY_INVALID,
            f"the vault key in {where} is {len(key)} bytes; it must be exactly {KEY_BYTES}",
        )
    return key


def _encode(key: bytes) -> str:
    return base64.urlsafe_b64encode(key).decode().rstrip("=")


def _read_key_file(path: Path) -> bytes:
    st = path.stat()
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise DeskpilotError(
            ErrorCode.VAULT_KEY_INVALID,
            f"the vault key file {path} is readable by others (mode "
            f"{stat.S_IMODE(st.st_mode):04o}); run chmod 600 on it",
        )
    return _decode(path.read_text(encoding="ascii"), str(path))


def _create_key_file(path: Path, key: bytes) -> bytes:
    """Write the key atomically; if another process won the race, use its key."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, (_encode(key) + "\n").encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # fails if the file exists: never replace a key
    except FileExistsError:
        return _read_key_file(path)
    finally:
        tmp.unlink(missing_ok=True)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return key


def load_or_create_key(
    vault_root: Path,
    *,
    prefer: Preference | None = None,
    expect_keyring: bool = False,
) -> tuple[bytes, KeyInfo]:
    """The installation key, created on first use.

    ``expect_keyring`` is set by the vault when its marker records a keyring key: then a
    missing or unreachable keyring is an error, not a reason to mint a new key.
    """
    pref = _preference(prefer)
    path = key_file_path(vault_root)
    if pref != "keyring" and path.exists():
        key = _read_key_file(path)
        return key, KeyInfo(
            KeyStorage.FILE,
            str(path),
            "key file (mode 0600) beside the vault",
            key_id(key).hex(),
        )
    if pref != "file":
        usable, why = keyring_status()
        if usable:
            import keyring

            stored = keyring.get_password(KEYRING_SERVICE, KEYRING_USERNAME)
            if stored is not None:
                key = _decode(stored, f"the OS keyring ({why})")
            else:
                if expect_keyring:
                    raise DeskpilotError(
                        ErrorCode.VAULT_KEY_INVALID,
                        "the vault's key is missing from the OS keyring; its snapshots cannot "
                        "be read (run `deskpilot vault reset` to start an empty vault)",
                    )
                key = secrets.token_bytes(KEY_BYTES)
                keyring.set_password(KEYRING_SERVICE, KEYRING_USERNAME, _encode(key))
                back = keyring.get_password(KEYRING_SERVICE, KEYRING_USERNAME)
                if back is None or _decode(back, "the OS keyring") != key:
                    raise DeskpilotError(
                        ErrorCode.VAULT_KEY_INVALID,
                        "the OS keyring did not keep the vault key that was just stored",
                    )
            check_key(key)
            return key, KeyInfo(
                KeyStorage.KEYRING, f"keyring:{why}", "OS keyring", key_id(key).hex()
            )
        if pref == "keyring" or expect_keyring:
            raise DeskpilotError(
                ErrorCode.VAULT_KEY_INVALID,
                f"the vault key is kept in the OS keyring, which is not usable here: {why}",
            )
        detail = f"key file (mode 0600) beside the vault, because {why}"
    else:
        detail = f"key file (mode 0600) beside the vault, because {STORAGE_ENV}=file"
    key = _create_key_file(path, secrets.token_bytes(KEY_BYTES))
    return key, KeyInfo(KeyStorage.FILE, str(path), detail, key_id(key).hex())


def key_storage(vault_root: Path | None = None) -> KeyInfo:
    """Which storage holds (or would hold) the key, without creating one. For doctor."""
    if vault_root is None:
        from deskpilot.store.paths import vault_dir

        vault_root = vault_dir()
    pref = _preference(None)
    path = key_file_path(vault_root)
    if pref != "keyring" and path.exists():
        return KeyInfo(KeyStorage.FILE, str(path), "key file (mode 0600) beside the vault")
    if pref == "file":
        return KeyInfo(
            KeyStorage.FILE, str(path), f"key file (mode 0600), because {STORAGE_ENV}=file"
        )
    usable, why = keyring_status()
    if usable:
        return KeyInfo(KeyStorage.KEYRING, f"keyring:{why}", "OS keyring")
    return KeyInfo(
        KeyStorage.FILE,
        str(path),
        f"key file (mode 0600) beside the vault, because {why}",
    )


def forget_key(vault_root: Path) -> None:
    """Delete the key file and the keyring entry (``vault reset --new-key``)."""
    key_file_path(vault_root).unlink(missing_ok=True)
    usable, _ = keyring_status()
    if usable:
        import keyring
        from keyring.errors import PasswordDeleteError

        with contextlib.suppress(PasswordDeleteError):
            keyring.delete_password(KEYRING_SERVICE, KEYRING_USERNAME)


__all__ = [
    "KEYRING_SERVICE",
    "KEYRING_USERNAME",
    "KEY_FILE_NAME",
    "STORAGE_ENV",
    "KeyInfo",
    "KeyStorage",
    "forget_key",
    "key_file_path",
    "key_storage",
    "keyring_status",
    "load_or_create_key",
]
