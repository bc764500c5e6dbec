"""The host's pipes, parsed where the bytes arrive.

The client uses asyncio's low-level subprocess protocol rather than stream readers: frames are
parsed in ``pipe_data_received`` and each response resolves its caller's future right there,
so a round trip costs one task wake-up instead of two (the ping benchmark in
docs/benchmarks.md is what this buys). Large payloads (screenshots) are collected as a list of
chunks and joined once, never re-sliced from a growing buffer.

The pairing rule of the protocol holds here too: a binary frame must directly follow the JSON
descriptor that announces it, and a descriptor that announces one must get it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from deskpilot.protocol.frames import (
    HEADER_SIZE,
    FrameError,
    FrameKind,
    parse_header,
)
from deskpilot.protocol.wire import carries_binary

OnMessage = Callable[[dict[str, Any], bytes | None], None]
OnFailure = Callable[[FrameError | None], None]


class FrameParser:
    """Incremental frame parser; ``feed`` calls ``on_message(json, binary_or_None)``."""

    def __init__(self, on_message: OnMessage) -> None:
        self._on_message = on_message
        self._head = bytearray()
        self._need = 0  # payload bytes still missing for the current frame
        self._kind: FrameKind | None = None
        self._chunks: list[bytes] = []
        self._held: dict[str, Any] | None = None  # a descriptor waiting for its binary frame

    @property
    def at_boundary(self) -> bool:
        return self._kind is None and not self._head and self._held is None

    def feed(self, data: bytes) -> None:
        view = memoryview(data)
        pos = 0
        end = len(view)
        while pos < end:
            if self._kind is None:
                take = min(HEADER_SIZE - len(self._head), end - pos)
                self._head += view[pos : pos + take]
                pos += take
                if len(self._head) < HEADER_SIZE:
                    return
                self._need, self._kind = parse_header(self._head)
                self._head.clear()
                self._chunks = []
                continue
            take = min(self._need, end - pos)
            self._chunks.append(bytes(view[pos : pos + take]))
            pos += take
            self._need -= take
            if self._need == 0:
                kind = self._kind
                payload = self._chunks[0] if len(self._chunks) == 1 else b"".join(self._chunks)
                self._chunks = []
                self._kind = None
                self._frame(kind, payload)

    def _frame(self, kind: FrameKind, payload: bytes) -> None:
        if kind is FrameKind.BINARY:
            if self._held is None:
                raise FrameError(
                    "binary_not_adjacent", "binary payload was not adjacent to its descriptor"
                )
            held, self._held = self._held, None
            self._on_message(held, payload)
            return
        if self._held is not None:
            raise FrameError("binary_missing", "a JSON frame arrived where a binary frame was owed")
        try:
            msg = json.loads(payload)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise FrameError("invalid_json", f"JSON frame is not valid JSON: {exc}") from None
        if not isinstance(msg, dict):
            raise FrameError("not_an_object", "a host response must be a JSON object")
        if carries_binary(msg):
            self._held = msg
        else:
            self._on_message(msg, None)


class HostProtocol:
    """Feeds the host's stdout into a FrameParser; flow control for its stdin; the exit.

    Two plain pipe protocols instead of asyncio's subprocess transport, which hands every
    chunk of output to the protocol one event-loop iteration later (``call_soon``); here a
    response resolves its caller's future in the same iteration it arrives.
    """

    def __init__(self, on_message: OnMessage, on_closed: OnFailure) -> None:
        self.parser = FrameParser(on_message)
        self._on_closed = on_closed
        self._closed = False
        self._paused = False
        self._drain_waiters: list[asyncio.Future[None]] = []
        self.exited: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    # ---- stdout (an asyncio.Protocol via ReadSide)

    def data_received(self, data: bytes) -> None:
        if self._closed:
            return
        try:
            self.parser.feed(data)
        except FrameError as exc:
            self.close(exc)

    def output_ended(self) -> None:
        if not self.parser.at_boundary:
            self.close(FrameError("truncated", "the host's output ended inside a frame"))
        else:
            self.close(None)

    def process_exited(self, returncode: int) -> None:
        if not self.exited.done():
            self.exited.set_result(returncode)
        self.close(None)

    def close(self, error: FrameError | None) -> None:
        if self._closed:
            return
        self._closed = True
        self._wake_drain(ConnectionResetError("the host connection is closed"))
        self._on_closed(error)

    # ---- stdin flow control (via WriteSide)

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake_drain(None)

    def stdin_lost(self) -> None:
        self._wake_drain(ConnectionResetError("the host's stdin is closed"))

    def _wake_drain(self, exc: Exception | None) -> None:
        waiters, self._drain_waiters = self._drain_waiters, []
        for waiter in waiters:
            if not waiter.done():
                if exc is None:
                    waiter.set_result(None)
                else:
                    waiter.set_exception(exc)

    async def drain(self) -> None:
        if not self._paused:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._drain_waiters.append(waiter)
        await waiter


class ReadSide(asyncio.Protocol):
    def __init__(self, host: HostProtocol) -> None:
        self.host = host

    def data_received(self, data: bytes) -> None:
        self.host.data_received(data)

    def eof_received(self) -> bool:
        self.host.output_ended()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.host.output_ended()


class WriteSide(asyncio.Protocol):
    def __init__(self, host: HostProtocol) -> None:
        self.host = host

    def pause_writing(self) -> None:
        self.host.pause_writing()

    def resume_writing(self) -> None:
        self.host.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self.host.stdin_lost()
