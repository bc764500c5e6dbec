"""Where the installation key lives, and every way a key can be wrong."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

import keyring
import pytest
from jaraco.classes import properties
from keyring.backend import KeyringBackend
from keyring.backends import fail

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.vault.keys import (
    KEYRING_SERVICE,
    KEYRING_USERNAME,
    KeyStorage,
    key_file_path,
    key_storage,
    keyring_status,
    load_or_create_key,
)
from deskpilot.vault.store import Vault, wipe_files


class MemoryKeyring(KeyringBackend):
    """A working keyring backend living in this process (the suite must not touch the real
    account keyring)."""

    @properties.classproperty
    def priority(cls) -> float:
        # Not viable for keyring's auto-discovery: only installed explicitly by a fixture.
        raise RuntimeError("test backend")

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.items.pop((service, username), None)


@pytest.fixture
def no_keyring() -> object:
    """A headless machine: keyring's own ``fail`` backend is all there is."""
    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())  # type: ignore[no-untyped-call]
    yield
    keyring.set_keyring(previous)


@pytest.fixture
def memory_keyring() -> object:
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


def test_file_key_created_0600_and_reused(vault_root: Path) -> None:
    key, info = load_or_create_key(vault_root)
    path = key_file_path(vault_root)
    assert info.storage is KeyStorage.FILE
    assert info.location == str(path)
    assert "file" in info.detail
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.parent == vault_root.parent  # beside the vault, not inside it
    again, _ = load_or_create_key(vault_root)
    assert again == key and len(key) == 32


def test_key_storage_reports_file_without_creating(vault_root: Path) -> None:
    info = key_storage(vault_root)
    assert info.storage is KeyStorage.FILE
    assert not key_file_path(vault_root).exists()


def test_headless_fallback_says_why(
    vault_root: Path, monkeypatch: pytest.MonkeyPatch, no_keyring: None
) -> None:
    monkeypatch.setenv("DESKPILOT_VAULT_KEY_STORAGE", "auto")
    usable, why = keyring_status()
    assert not usable and "no OS keyring" in why
    assert key_storage(vault_root).storage is KeyStorage.FILE
    _, info = load_or_create_key(vault_root)
    assert info.storage is KeyStorage.FILE
    assert why in info.detail


@pytest.mark.parametrize("length", [16, 31, 33, 48])
def test_wrong_length_key_file_is_an_error(vault_root: Path, length: int) -> None:
    path = key_file_path(vault_root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(base64.urlsafe_b64encode(os.urandom(length)).decode())
    path.chmod(0o600)
    with pytest.raises(DeskpilotError) as err:
        Vault.open(vault_root)
    assert err.value.code is ErrorCode.VAULT_KEY_INVALID
    assert f"{length} bytes" in err.value.message
    assert path.read_text().strip()  # the bad key was not replaced


def test_garbage_key_file_is_an_error(vault_root: Path) -> None:
    path = key_file_path(vault_root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("not*base64!")
    path.chmod(0o600)
    with pytest.raises(DeskpilotError) as err:
        load_or_create_key(vault_root)
    assert err.value.code is ErrorCode.VAULT_KEY_INVALID


def test_key_file_readable_by_others_refused(vault_root: Path) -> None:
    load_or_create_key(vault_root)
    key_file_path(vault_root).chmod(0o644)
    with pytest.raises(DeskpilotError) as err:
        load_or_create_key(vault_root)
    assert err.value.code is ErrorCode.VAULT_KEY_INVALID
    assert "chmod 600" in err.value.message


def test_vault_opened_with_another_key_fails_clearly(vault_root: Path) -> None:
    Vault.open(vault_root)
    key_file_path(vault_root).unlink()  # the key is lost; a new one would be minted
    with pytest.raises(DeskpilotError) as err:
        Vault.open(vault_root)
    assert err.value.code is ErrorCode.VAULT_KEY_INVALID
    assert "different installation key" in err.value.message
    assert "vault reset" in err.value.message
    # reset is the way out, and the vault opens again afterwards
    wipe_files(vault_root, drop_key=True)
    Vault.open(vault_root)


def test_vault_with_explicit_wrong_key(vault_root: Path) -> None:
    Vault.open(vault_root)
    with pytest.raises(DeskpilotError) as err:
        Vault(vault_root, os.urandom(32))
    assert err.value.code is ErrorCode.VAULT_KEY_INVALID


def test_invalid_storage_preference(vault_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DESKPILOT_VAULT_KEY_STORAGE", "tpm")
    with pytest.raises(DeskpilotError) as err:
        load_or_create_key(vault_root)
    assert err.value.code is ErrorCode.INVALID_REQUEST


def test_keyring_storage(
    vault_root: Path, monkeypatch: pytest.MonkeyPatch, memory_keyring: MemoryKeyring
) -> None:
    monkeypatch.setenv("DESKPILOT_VAULT_KEY_STORAGE", "auto")
    vault = Vault.open(vault_root)
    assert vault.key_info is not None and vault.key_info.storage is KeyStorage.KEYRING
    assert not key_file_path(vault_root).exists()
    stored = memory_keyring.items[(KEYRING_SERVICE, KEYRING_USERNAME)]
    assert len(base64.urlsafe_b64decode(stored + "=" * (-len(stored) % 4))) == 32
    assert key_storage(vault_root).storage is KeyStorage.KEYRING
    # the same key comes back on the next open
    assert Vault.open(vault_root).key_id == vault.key_id


def test_keyring_key_of_wrong_length(
    vault_root: Path, monkeypatch: pytest.MonkeyPatch, memory_keyring: MemoryKeyring
) -> None:
    monkeypatch.setenv("DESKPILOT_VAULT_KEY_STORAGE", "keyring")
    memory_keyring.items[(KEYRING_SERVICE, KEYRING_USERNAME)] = base64.urlsafe_b64encode(
        os.urandom(16)
    ).decode()
    with pytest.raises(DeskpilotError) as err:
        Vault.open(vault_root)
    assert err.value.code is ErrorCode.VAULT_KEY_INVALID


def test_keyring_vault_does_not_fall_back_to_a_new_file_key(
    vault_root: Path, monkeypatch: pytest.MonkeyPatch, memory_keyring: MemoryKeyring
) -> None:
    monkeypatch.setenv("DESKPILOT_VAULT_KEY_STORAGE", "auto")
    Vault.open(vault_root)
    memory_keyring.items.clear()  # the keyring lost the key
    with pytest.raises(DeskpilotError) as err:
        Vault.open(vault_root)
    assert err.value.code is ErrorCode.VAULT_KEY_INVALID
    assert "missing from the OS keyring" in err.value.message
    assert not key_file_path(vault_root).exists()


def test_forced_keyring_without_backend(
    vault_root: Path, monkeypatch: pytest.MonkeyPatch, no_keyring: None
) -> None:
    monkeypatch.setenv("DESKPILOT_VAULT_KEY_STORAGE", "keyring")
    with pytest.raises(DeskpilotError) as err:
        load_or_create_key(vault_root)
    assert err.value.code is ErrorCode.VAULT_KEY_INVALID
    assert "not usable" in err.value.message
