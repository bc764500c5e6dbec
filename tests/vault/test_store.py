"""Blob files: random names, private permissions, atomic writes that survive kill -9."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.vault.store import BLOB_SUFFIX, Vault

NAME_RE = re.compile(r"^[0-9a-f]{48}\.svb$")


def test_names_permissions_and_roundtrip(vault: Vault, vault_root: Path) -> None:
    sb = vault.put(b"hello vault", blob_id="blob_abc", kind="image")
    path = vault.path_for(sb.storage_key)
    assert path.parent == vault_root / "blobs"
    assert NAME_RE.match(path.name)
    assert "blob_abc" not in path.name
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((vault_root / "blobs").stat().st_mode) == 0o700
    assert stat.S_IMODE(vault_root.stat().st_mode) == 0o700
    assert sb.byte_length == path.stat().st_size
    assert b"hello vault" not in path.read_bytes()
    assert vault.get(sb.storage_key, blob_id="blob_abc", kind="image") == b"hello vault"
    # two puts of the same id never share a file name
    assert vault.put(b"x", blob_id="blob_abc", kind="image").storage_key != sb.storage_key


def test_loose_directory_permissions_are_tightened(vault_root: Path) -> None:
    (vault_root / "blobs").mkdir(parents=True)
    os.chmod(vault_root, 0o755)
    os.chmod(vault_root / "blobs", 0o777)
    Vault.open(vault_root)
    assert stat.S_IMODE(vault_root.stat().st_mode) == 0o700
    assert stat.S_IMODE((vault_root / "blobs").stat().st_mode) == 0o700


def test_flipped_byte_on_disk_is_never_returned(vault: Vault) -> None:
    data = os.urandom(100_000)
    sb = vault.put(data, blob_id="blob_t", kind="preview")
    path = vault.path_for(sb.storage_key)
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0x80
    path.write_bytes(bytes(raw))
    with pytest.raises(DeskpilotError) as err:
        vault.get(sb.storage_key, blob_id="blob_t", kind="preview")
    assert err.value.code is ErrorCode.VAULT_INTEGRITY_ERROR


def test_missing_file_and_malformed_key(vault: Vault) -> None:
    with pytest.raises(DeskpilotError) as err:
        vault.get("0" * 48, blob_id="b", kind="image")
    assert err.value.code is ErrorCode.SNAPSHOT_NOT_FOUND
    with pytest.raises(DeskpilotError) as err:
        vault.get("../../etc/passwd", blob_id="b", kind="image")
    assert err.value.code is ErrorCode.VAULT_INTEGRITY_ERROR


WRITER = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from deskpilot.vault.store import Vault
    vault = Vault.open(Path(sys.argv[1]))
    data = os.urandom(48 * 1024 * 1024)
    print("ready", flush=True)
    while True:
        vault.put(data, blob_id="blob_big", kind="image")
    """
)


def test_kill_9_during_write_leaves_no_partial_blob(vault: Vault, vault_root: Path) -> None:
    """A real writer process is SIGKILLed mid-write: every .svb file is complete and
    authentic, the leftover is only a .part file, and the vault opens again."""
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(vault_root)],
        stdout=subprocess.PIPE,
        env=os.environ.copy(),
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"ready"
        blobs = vault_root / "blobs"
        deadline = time.monotonic() + 60
        killed_mid_write = False
        while time.monotonic() < deadline:
            parts = [p for p in blobs.iterdir() if p.name.endswith(".part")]
            complete = [p for p in blobs.iterdir() if p.name.endswith(BLOB_SUFFIX)]
            if complete and any(p.stat().st_size > 0 for p in parts if p.exists()):
                proc.send_signal(signal.SIGKILL)
                killed_mid_write = True
                break
            time.sleep(0.0005)
        assert killed_mid_write, "never saw a write in progress"
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == -signal.SIGKILL

    reopened = Vault.open(vault_root)  # the vault still opens
    files = list(reopened.files())
    temps = [f for f in files if f.name.endswith(".part")]
    assert temps, "the kill should have interrupted a temp file"
    assert all(f.storage_key is None for f in temps)  # a temp file is never taken for a blob
    svbs = [f for f in files if f.storage_key is not None]
    assert svbs
    for f in svbs:
        plain = reopened.get(f.storage_key or "", blob_id="blob_big", kind="image")
        assert len(plain) == 48 * 1024 * 1024
