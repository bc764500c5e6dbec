"""The vault's file format: AES-256-GCM with a header that names its format and its key.

Layout of one ``.svb`` file::

    magic     8 bytes  b"DPSVAULT"
    version   1 byte   FORMAT_VERSION
    key id    8 bytes  HMAC-SHA256(key, "deskpilot.snapshot-vault.key-id")[:8]
    nonce    12 bytes  random per file
    body      n bytes  ciphertext ‖ 16-byte GCM tag

The AAD binds the whole header plus the blob id and kind, so a file copied onto another
blob's row, or relabelled from ``evidence`` to ``preview``, fails authentication instead of
decrypting into the wrong place. The key id lets a wrong installation key be reported as
exactly that (``vault_key_invalid``) rather than as tampering; it reveals nothing about the
key (a truncated keyed MAC of a constant).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from deskpilot.protocol.errors import DeskpilotError, ErrorCode

MAGIC = b"DPSVAULT"
FORMAT_VERSION = 1
KEY_BYTES = 32
KEY_ID_BYTES = 8
NONCE_BYTES = 12
TAG_BYTES = 16
HEADER_BYTES = len(MAGIC) + 1 + KEY_ID_BYTES + NONCE_BYTES
AAD_DOMAIN = "deskpilot.snapshot-vault"
BLOB_KINDS = frozenset({"image", "preview", "evidence", "text"})


def check_key(key: bytes) -> None:
    """A key that is not exactly 256 bits is an error, never padded or truncated."""
    if not isinstance(key, bytes) or len(key) != KEY_BYTES:
        length = len(key) if isinstance(key, (bytes, bytearray)) else "non-bytes"
        raise DeskpilotError(
            ErrorCode.VAULT_KEY_INVALID,
            f"the vault key must be exactly {KEY_BYTES} bytes (got {length})",
        )


def key_id(key: bytes) -> bytes:
    check_key(key)
    return hmac.new(key, b"deskpilot.snapshot-vault.key-id", hashlib.sha256).digest()[:KEY_ID_BYTES]


def _aad(header: bytes, blob_id: str, kind: str) -> bytes:
    bound = json.dumps(
        {"domain": AAD_DOMAIN, "formatVersion": FORMAT_VERSION, "blobId": blob_id, "kind": kind},
        separators=(",", ":"),
        sort_keys=True,
    ).encode()
    return header + bound


def _check_kind(kind: str) -> None:
    if kind not in BLOB_KINDS:
        raise DeskpilotError(ErrorCode.INVALID_REQUEST, f"unknown blob kind {kind!r}")


class Cipher:
    """Seals and opens blobs with one installation key."""

    def __init__(self, key: bytes) -> None:
        check_key(key)
        self._aead = AESGCM(key)
        self.key_id = key_id(key)

    def seal(self, plaintext: bytes, *, blob_id: str, kind: str) -> bytes:
        _check_kind(kind)
        nonce = os.urandom(NONCE_BYTES)
        header = MAGIC + bytes([FORMAT_VERSION]) + self.key_id + nonce
        return header + self._aead.encrypt(nonce, plaintext, _aad(header, blob_id, kind))

    def open(self, sealed: bytes, *, blob_id: str, kind: str) -> bytes:
        """Authenticated plaintext, or ``vault_integrity_error`` — never unauthenticated bytes."""
        _check_kind(kind)
        if len(sealed) < HEADER_BYTES + TAG_BYTES or not sealed.startswith(MAGIC):
            raise DeskpilotError(
                ErrorCode.VAULT_INTEGRITY_ERROR, "blob is not a deskpilot vault file"
            )
        version = sealed[len(MAGIC)]
        if version != FORMAT_VERSION:
            raise DeskpilotError(
                ErrorCode.VAULT_INTEGRITY_ERROR,
                f"blob format version {version} is not supported (expected {FORMAT_VERSION})",
            )
        kid_start = len(MAGIC) + 1
        file_key_id = sealed[kid_start : kid_start + KEY_ID_BYTES]
        if not hmac.compare_digest(file_key_id, self.key_id):
            raise DeskpilotError(
                ErrorCode.VAULT_KEY_INVALID,
                "blob was sealed with a different installation key than the one in use",
                details={"blobKeyId": file_key_id.hex(), "currentKeyId": self.key_id.hex()},
            )
        header = sealed[:HEADER_BYTES]
        nonce = header[-NONCE_BYTES:]
        try:
            return self._aead.decrypt(nonce, sealed[HEADER_BYTES:], _aad(header, blob_id, kind))
        except InvalidTag:
            raise DeskpilotError(
                ErrorCode.VAULT_INTEGRITY_ERROR,
                "blob failed authentication (tampered, truncated or bound to another blob)",
            ) from None


__all__ = [
    "BLOB_KINDS",
    "FORMAT_VERSION",
    "HEADER_BYTES",
    "KEY_BYTES",
    "MAGIC",
    "NONCE_BYTES",
    "TAG_BYTES",
    "Cipher",
    "check_key",
    "key_id",
]
