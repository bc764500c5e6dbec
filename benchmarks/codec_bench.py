"""Frame codec throughput for 8 MiB binary payloads (a large screenshot's size class).

Run: ``.venv/bin/python benchmarks/codec_bench.py [--frames N] [--rounds R]``

Target (issue 2): ≥ 1 GB/s. Measured per path, median of R rounds of N frames each:

* in memory: ``FrameWriter.write_pair`` (descriptor + 8 MiB binary) into a sink, and
  ``FrameReader.read`` back from a BytesIO — the codec's own cost;
* through an OS pipe: the host's real situation (a writer thread, the sync reader on the
  other end), and the asyncio reader (``AsyncFrameReader`` over a pipe), as the host client
  reads;

Baseline in the same run: a naive codec — ``header + payload`` concatenation on write and a
loop of ``stream.read()`` calls joined with ``+=`` on read — over the same in-memory stream.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import io
import os
import statistics
import struct
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

PAYLOAD = 8 * 1024 * 1024
F_SETPIPE_SZ = 1031


class Sink(io.RawIOBase):
    """Counts bytes; what a fast consumer looks like to the writer."""

    def __init__(self) -> None:
        self.n = 0

    def writable(self) -> bool:
        return True

    def write(self, b: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        n = len(b)
        self.n += n
        return n


def gbps(nbytes: int, seconds: float) -> float:
    return nbytes / seconds / 1e9


def median_rate(fn: Callable[[], int], rounds: int) -> float:
    fn()  # warm-up
    rates = []
    for _ in range(rounds):
        t = time.perf_counter()
        n = fn()
        rates.append(gbps(n, time.perf_counter() - t))
    return statistics.median(rates)


def naive_encode(obj: bytes, payload: bytes) -> bytes:
    return struct.pack(">IB", len(obj), 1) + obj + struct.pack(">IB", len(payload), 2) + payload


def naive_read(stream: io.BytesIO) -> bytes:
    header = stream.read(5)
    length = struct.unpack(">I", header[:4])[0]
    data = b""
    while len(data) < length:
        chunk = stream.read(min(65536, length - len(data)))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from deskpilot.protocol.frames import (
        AsyncFrameReader,
        AsyncPipeFrameReader,
        FrameKind,
        FrameReader,
        FrameWriter,
        encode_json,
    )

    payload = os.urandom(PAYLOAD)
    descriptor = {"id": 1, "type": "capture_result", "image": {"byteLength": PAYLOAD}}
    frames = args.frames
    one = encode_json(descriptor) + struct.pack(">IB", PAYLOAD, 2) + payload
    stream_bytes = one * frames
    total_payload = PAYLOAD * frames

    def write_mem() -> int:
        sink = Sink()
        w = FrameWriter(sink)  # type: ignore[arg-type]
        for _ in range(frames):
            w.write_pair(descriptor, payload)
        return total_payload

    def read_mem() -> int:
        r = FrameReader(io.BytesIO(stream_bytes))
        for _ in range(frames):
            r.read()
            frame = r.read()
            assert frame.kind is FrameKind.BINARY and len(frame.payload) == PAYLOAD
        return total_payload

    def naive_write() -> int:
        sink = Sink()
        head = encode_json(descriptor)[5:]
        for _ in range(frames):
            sink.write(naive_encode(head, payload))
        return total_payload

    def naive_read_all() -> int:
        s = io.BytesIO(stream_bytes)
        for _ in range(frames):
            naive_read(s)
            assert len(naive_read(s)) == PAYLOAD
        return total_payload

    def pipe_pair() -> tuple[int, int]:
        r, w = os.pipe()
        for fd in (r, w):
            with contextlib.suppress(OSError):  # a lower pipe-max-size limit: keep the default
                fcntl.fcntl(fd, F_SETPIPE_SZ, 1 << 20)
        return r, w

    def write_side(fd: int) -> None:
        with open(fd, "wb", buffering=1 << 16) as out:
            w = FrameWriter(out)
            for _ in range(frames):
                w.write_pair(descriptor, payload)

    def via_pipe() -> int:
        r, w = pipe_pair()
        t = threading.Thread(target=write_side, args=(w,))
        t.start()
        with open(r, "rb", buffering=1 << 16) as inp:
            reader = FrameReader(inp)
            for _ in range(frames):
                reader.read()
                assert len(reader.read().payload) == PAYLOAD
        t.join()
        return total_payload

    def via_pipe_async() -> int:
        async def go() -> None:
            r, w = pipe_pair()
            loop = asyncio.get_running_loop()
            sreader = asyncio.StreamReader(limit=1 << 25, loop=loop)
            protocol = asyncio.StreamReaderProtocol(sreader)
            pipe = os.fdopen(r, "rb", 0)
            transport, _ = await loop.connect_read_pipe(lambda: protocol, pipe)
            t = threading.Thread(target=write_side, args=(w,))
            t.start()
            reader = AsyncFrameReader(sreader)
            for _ in range(frames):
                await reader.read()
                assert len((await reader.read()).payload) == PAYLOAD
            transport.close()
            t.join()

        asyncio.run(go())
        return total_payload

    def via_pipe_async_fd() -> int:
        async def go() -> None:
            r, w = pipe_pair()
            t = threading.Thread(target=write_side, args=(w,))
            t.start()
            reader = AsyncPipeFrameReader(r)
            for _ in range(frames):
                await reader.read()
                assert len((await reader.read()).payload) == PAYLOAD
            os.close(r)
            t.join()

        asyncio.run(go())
        return total_payload

    rounds = args.rounds
    results = {
        "write, in memory (FrameWriter.write_pair, zero-copy)": median_rate(write_mem, rounds),
        "read, in memory (FrameReader)": median_rate(read_mem, rounds),
        "write + read through an OS pipe (sync reader)": median_rate(via_pipe, rounds),
        "write + read through an OS pipe (AsyncFrameReader)": median_rate(via_pipe_async, rounds),
        "write + read through an OS pipe (AsyncPipeFrameReader)": median_rate(
            via_pipe_async_fd, rounds
        ),
    }
    baseline = {
        "naive write (concatenate header + payload)": median_rate(naive_write, rounds),
        "naive read (read() chunks joined with +=)": median_rate(naive_read_all, rounds),
    }
    print(f"{frames} frames x 8 MiB per round, median of {rounds} rounds")
    print()
    for name, rate in results.items():
        verdict = "PASS" if rate >= 1.0 else "FAIL"
        print(f"{name:56} {rate:7.2f} GB/s  {verdict} (target >= 1 GB/s)")
    print()
    print("baseline (same run)")
    for name, rate in baseline.items():
        print(f"{name:56} {rate:7.2f} GB/s")
    print()
    print(
        "ratios: write {:.1f}x, read {:.1f}x the naive codec".format(
            results["write, in memory (FrameWriter.write_pair, zero-copy)"]
            / baseline["naive write (concatenate header + payload)"],
            results["read, in memory (FrameReader)"]
            / baseline["naive read (read() chunks joined with +=)"],
        )
    )


if __name__ == "__main__":
    main()
