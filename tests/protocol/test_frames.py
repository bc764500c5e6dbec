"""The frame codec: layout, limits, pairing, and a fuzz that it fails only with FrameError."""

from __future__ import annotations

import asyncio
import fcntl
import io
import json
import os
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deskpilot.protocol.frames import (
    HEADER_SIZE,
    MAX_PAYLOAD_BYTES,
    AsyncFrameReader,
    AsyncFrameWriter,
    AsyncPipeFrameReader,
    Frame,
    FrameError,
    FrameKind,
    FramePairing,
    FrameReader,
    FrameWriter,
    StreamClosed,
    encode_frame,
    encode_header,
    encode_json,
    parse_header,
)


def read_all(data: bytes) -> list[Frame]:
    reader = FrameReader(io.BytesIO(data))
    frames = []
    while True:
        try:
            frames.append(reader.read())
        except StreamClosed:
            return frames


def test_header_is_big_endian_length_plus_kind() -> None:
    assert encode_header(FrameKind.JSON, 0x01020304) == b"\x01\x02\x03\x04\x01"
    assert encode_header(FrameKind.BINARY, 1) == b"\x00\x00\x00\x01\x02"
    assert HEADER_SIZE == 5


def test_json_frame_round_trips_with_unicode() -> None:
    obj = {"id": 1, "type": "ping", "text": "héllo ✓ 日本"}
    data = encode_json(obj)
    assert int.from_bytes(data[:4], "big") == len(data) - 5
    assert data[4] == 1
    (frame,) = read_all(data)
    assert frame.json() == obj


def test_binary_payload_round_trips_byte_for_byte() -> None:
    payload = os.urandom(300_000)
    (frame,) = read_all(encode_frame(FrameKind.BINARY, payload))
    assert frame.kind is FrameKind.BINARY
    assert bytes(frame.payload) == payload


def test_writer_pairs_descriptor_and_binary_in_one_stream() -> None:
    buf = io.BytesIO()
    w = FrameWriter(buf)
    w.write_pair({"id": 1, "type": "capture_result"}, b"\x89PNG-bytes")
    w.write_pair({"id": 2, "type": "pong"}, None)
    w.write_binary(b"x")
    frames = read_all(buf.getvalue())
    assert [f.kind for f in frames] == [
        FrameKind.JSON,
        FrameKind.BINARY,
        FrameKind.JSON,
        FrameKind.BINARY,
    ]
    assert bytes(frames[1].payload) == b"\x89PNG-bytes"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\x00\x00\x00\x00\x01", "empty_payload"),
        (b"\x00\x00\x00\x01\x03x", "unknown_kind"),
        (b"\x00\x00\x00\x01\x00x", "unknown_kind"),
        ((MAX_PAYLOAD_BYTES + 1).to_bytes(4, "big") + b"\x02", "oversize"),
        (b"\x00\x00\x00\x10\x01{}", "truncated"),
        (b"\x00\x00", "truncated"),
    ],
)
def test_malformed_streams_raise_typed_frame_errors(data: bytes, reason: str) -> None:
    with pytest.raises(FrameError) as info:
        read_all(data)
    assert info.value.reason == reason


def test_max_payload_is_accepted_and_one_more_byte_is_not() -> None:
    assert parse_header(MAX_PAYLOAD_BYTES.to_bytes(4, "big") + b"\x02") == (
        MAX_PAYLOAD_BYTES,
        FrameKind.BINARY,
    )
    with pytest.raises(FrameError):
        encode_header(FrameKind.BINARY, MAX_PAYLOAD_BYTES + 1)
    with pytest.raises(FrameError):
        encode_frame(FrameKind.JSON, b"")


def test_json_method_rejects_binary_frames_and_invalid_json() -> None:
    with pytest.raises(FrameError) as info:
        Frame(FrameKind.BINARY, b"{}").json()
    assert info.value.reason == "unexpected_binary"
    with pytest.raises(FrameError) as info:
        Frame(FrameKind.JSON, b"{nope").json()
    assert info.value.reason == "invalid_json"
    with pytest.raises(FrameError):
        Frame(FrameKind.JSON, b"\xff").json()


def test_pairing_enforces_adjacency() -> None:
    pairing = FramePairing()
    json_frame, bin_frame = Frame(FrameKind.JSON, b"{}"), Frame(FrameKind.BINARY, b"x")
    with pytest.raises(FrameError) as info:
        pairing.check(bin_frame)
    assert info.value.reason == "binary_not_adjacent"
    pairing.expect_binary()
    with pytest.raises(FrameError) as info:
        pairing.check(json_frame)
    assert info.value.reason == "binary_missing"
    pairing.expect_binary()
    pairing.check(bin_frame)
    assert not pairing.owed
    pairing.check(json_frame)


async def test_async_reader_and_writer_round_trip() -> None:
    reader = asyncio.StreamReader()
    payload = os.urandom(70_000)
    reader.feed_data(encode_json({"id": "a", "type": "observation", "image": {}}))
    reader.feed_data(encode_frame(FrameKind.BINARY, payload))
    reader.feed_eof()
    r = AsyncFrameReader(reader)
    first = await r.read()
    assert first.json()["id"] == "a"
    second = await r.read()
    assert bytes(second.payload) == payload
    with pytest.raises(StreamClosed):
        await r.read()


async def test_async_writer_output_reads_back_with_the_sync_reader() -> None:
    class Sink(asyncio.Transport):
        def __init__(self) -> None:
            super().__init__()
            self.data = bytearray()

        def write(self, data: bytes | bytearray | memoryview) -> None:
            self.data += data

        def is_closing(self) -> bool:
            return False

        def close(self) -> None:
            pass

    loop = asyncio.get_running_loop()
    sink = Sink()
    protocol = asyncio.StreamReaderProtocol(asyncio.StreamReader())
    writer = asyncio.StreamWriter(sink, protocol, None, loop)
    w = AsyncFrameWriter(writer)
    await w.write_json({"id": 1, "type": "pong"})
    await w.write_pair({"id": 2, "type": "capture_result"}, b"PNG")
    frames = read_all(bytes(sink.data))
    assert [f.kind for f in frames] == [FrameKind.JSON, FrameKind.JSON, FrameKind.BINARY]
    assert json.loads(bytes(frames[1].payload))["id"] == 2


async def test_async_reader_truncated_inside_header_and_payload() -> None:
    for data in (b"\x00\x00\x00", b"\x00\x00\x00\x09\x01abc"):
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        with pytest.raises(FrameError) as info:
            await AsyncFrameReader(reader).read()
        assert info.value.reason == "truncated"


# ------------------------------------------------------------------------------ fuzz

_FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _mutated(data: bytes) -> st.SearchStrategy[bytes]:
    """Valid streams with a few bytes flipped, cut or inserted."""
    if not data:
        return st.just(data)
    return st.one_of(
        st.integers(0, len(data)).map(lambda i: data[:i]),
        st.tuples(st.integers(0, len(data) - 1), st.integers(0, 255)).map(
            lambda t: data[: t[0]] + bytes([t[1]]) + data[t[0] + 1 :]
        ),
        st.tuples(st.integers(0, len(data)), st.binary(min_size=1, max_size=8)).map(
            lambda t: data[: t[0]] + t[1] + data[t[0] :]
        ),
    )


def _valid_frames() -> st.SearchStrategy[bytes]:
    payload = st.binary(min_size=1, max_size=64)
    frame = st.tuples(st.sampled_from([FrameKind.JSON, FrameKind.BINARY]), payload).map(
        lambda kp: encode_frame(kp[0], kp[1])
    )
    return st.lists(frame, max_size=4).map(b"".join)


@_FUZZ
@given(st.one_of(st.binary(max_size=512), _valid_frames().flatmap(_mutated)))
def test_fuzz_sync_reader_ends_in_frames_or_a_frame_error(data: bytes) -> None:
    reader = FrameReader(io.BytesIO(data))
    consumed = 0
    for _ in range(len(data) + 1):  # every frame consumes ≥ 6 bytes: this bound cannot loop
        try:
            frame = reader.read()
        except StreamClosed:
            assert consumed == len(data)
            return
        except FrameError as exc:
            assert exc.reason in {"truncated", "unknown_kind", "empty_payload", "oversize"}
            return
        consumed += HEADER_SIZE + len(frame.payload)
        if frame.kind is FrameKind.JSON:
            try:
                frame.json()
            except FrameError as exc:
                assert exc.reason == "invalid_json"
    raise AssertionError("the reader did not terminate")


@_FUZZ
@given(st.binary(max_size=512))
def test_fuzz_async_reader_ends_in_frames_or_a_frame_error(data: bytes) -> None:
    async def run() -> None:
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        r = AsyncFrameReader(reader)
        for _ in range(len(data) + 1):
            try:
                await asyncio.wait_for(r.read(), 5)
            except FrameError:
                return
        raise AssertionError("the reader did not terminate")

    asyncio.run(run())


def _pipe_with(data: bytes) -> int:
    """A pipe holding ``data`` and then EOF; returns the read end."""
    r, w = os.pipe()
    fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ: room for the test's bytes
    os.write(w, data)
    os.close(w)
    return r


async def test_pipe_reader_round_trips_pairs_across_partial_writes() -> None:
    payload = bytes(range(256)) * 40_000  # 10 MB: larger than the pipe, arrives in pieces
    r, w = os.pipe()

    def write() -> None:
        with open(w, "wb") as out:
            FrameWriter(out).write_pair({"id": 1, "type": "capture_result"}, payload)

    writer = threading.Thread(target=write)
    writer.start()
    reader = AsyncPipeFrameReader(r)
    head = await asyncio.wait_for(reader.read(), 10)
    body = await asyncio.wait_for(reader.read(), 10)
    writer.join()
    assert head.json() == {"id": 1, "type": "capture_result"}
    assert body.kind is FrameKind.BINARY and bytes(body.payload) == payload
    with pytest.raises(StreamClosed):
        await reader.read()
    os.close(r)


async def test_pipe_reader_truncation_and_bad_headers_are_typed() -> None:
    cases = [
        (encode_json({"a": 1})[:3], "truncated"),
        (encode_json({"a": 1})[:-1], "truncated"),
        (b"\x00\x00\x00\x00\x01", "empty_payload"),
        (b"\x00\x00\x00\x01\x07x", "unknown_kind"),
        (b"\xff\xff\xff\xff\x02", "oversize"),
    ]
    for data, reason in cases:
        r = _pipe_with(data)
        with pytest.raises(FrameError) as info:
            await asyncio.wait_for(AsyncPipeFrameReader(r).read(), 5)
        assert info.value.reason == reason
        os.close(r)


@_FUZZ
@given(st.one_of(st.binary(max_size=512), _valid_frames().flatmap(_mutated)))
def test_fuzz_pipe_reader_ends_in_frames_or_a_frame_error(data: bytes) -> None:
    async def run() -> None:
        r = _pipe_with(data)
        reader = AsyncPipeFrameReader(r)
        try:
            for _ in range(len(data) + 1):
                try:
                    await asyncio.wait_for(reader.read(), 5)
                except FrameError:
                    return
            raise AssertionError("the reader did not terminate")
        finally:
            os.close(r)

    asyncio.run(run())
