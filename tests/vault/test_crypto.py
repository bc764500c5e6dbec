"""The file format: authenticated, bound to blob id and kind, and to one key."""

from __future__ import annotations

import os

import pytest

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.vault.crypto import HEADER_BYTES, MAGIC, NONCE_BYTES, TAG_BYTES, Cipher, check_key

PLAIN = os.urandom(4096)


def test_roundtrip_and_layout() -> None:
    c = Cipher(os.urandom(32))
    sealed = c.seal(PLAIN, blob_id="blob_1", kind="image")
    assert sealed.startswith(MAGIC)
    assert sealed[len(MAGIC)] == 1  # format version
    assert len(sealed) == HEADER_BYTES + len(PLAIN) + TAG_BYTES
    assert PLAIN not in sealed
    assert c.open(sealed, blob_id="blob_1", kind="image") == PLAIN


def test_nonce_is_fresh_per_seal() -> None:
    c = Cipher(os.urandom(32))
    a = c.seal(PLAIN, blob_id="b", kind="image")
    b = c.seal(PLAIN, blob_id="b", kind="image")
    nonce = slice(HEADER_BYTES - NONCE_BYTES, HEADER_BYTES)
    assert a[nonce] != b[nonce]
    assert a != b


@pytest.mark.parametrize(
    "where",
    [
        0,  # magic
        len(MAGIC),  # version
        len(MAGIC) + 1,  # key id
        HEADER_BYTES - 1,  # nonce
        HEADER_BYTES,  # first ciphertext byte
        HEADER_BYTES + len(PLAIN) // 2,
        -1,  # tag
    ],
)
def test_any_flipped_byte_fails_authentication(where: int) -> None:
    c = Cipher(os.urandom(32))
    sealed = bytearray(c.seal(PLAIN, blob_id="blob_1", kind="image"))
    sealed[where] ^= 0x01
    with pytest.raises(DeskpilotError) as err:
        c.open(bytes(sealed), blob_id="blob_1", kind="image")
    # a flipped key-id byte reads as "another key"; everything else as an integrity failure
    assert err.value.code in (ErrorCode.VAULT_INTEGRITY_ERROR, ErrorCode.VAULT_KEY_INVALID)
    if where != len(MAGIC) + 1:
        assert err.value.code is ErrorCode.VAULT_INTEGRITY_ERROR


def test_truncated_blob_fails() -> None:
    c = Cipher(os.urandom(32))
    sealed = c.seal(PLAIN, blob_id="b", kind="image")
    for cut in (1, TAG_BYTES, len(sealed) - HEADER_BYTES):
        with pytest.raises(DeskpilotError) as err:
            c.open(sealed[:-cut], blob_id="b", kind="image")
        assert err.value.code is ErrorCode.VAULT_INTEGRITY_ERROR


@pytest.mark.parametrize(("blob_id", "kind"), [("blob_2", "image"), ("blob_1", "preview")])
def test_aad_binds_blob_id_and_kind(blob_id: str, kind: str) -> None:
    c = Cipher(os.urandom(32))
    sealed = c.seal(PLAIN, blob_id="blob_1", kind="image")
    with pytest.raises(DeskpilotError) as err:
        c.open(sealed, blob_id=blob_id, kind=kind)
    assert err.value.code is ErrorCode.VAULT_INTEGRITY_ERROR


def test_wrong_key_is_reported_as_wrong_key() -> None:
    sealed = Cipher(os.urandom(32)).seal(PLAIN, blob_id="b", kind="image")
    with pytest.raises(DeskpilotError) as err:
        Cipher(os.urandom(32)).open(sealed, blob_id="b", kind="image")
    assert err.value.code is ErrorCode.VAULT_KEY_INVALID
    assert "different installation key" in err.value.message


@pytest.mark.parametrize("length", [0, 16, 24, 31, 33, 64])
def test_key_of_wrong_length_is_an_error(length: int) -> None:
    with pytest.raises(DeskpilotError) as err:
        check_key(os.urandom(length))
    assert err.value.code is ErrorCode.VAULT_KEY_INVALID
    with pytest.raises(DeskpilotError):
        Cipher(os.urandom(length))


def test_unknown_kind_rejected() -> None:
    with pytest.raises(DeskpilotError) as err:
        Cipher(os.urandom(32)).seal(PLAIN, blob_id="b", kind="video")
    assert err.value.code is ErrorCode.INVALID_REQUEST
