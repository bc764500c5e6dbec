"""The host's request loop: a stdin reader thread feeding one asyncio worker.

Why a thread: the reader must notice stdin closing (the client's "let go" signal before it
kills us, 300 ms grace) even while an action is busy or stuck, and release any keys or buttons
that action holds. So the reader thread owns the exits: on EOF it releases held input through
its own X connection and ends the process (0); on a framing failure — a frame of unknown kind,
a binary request, an empty/oversize/truncated frame — it does the same after one ``error``
frame, with exit 76. Everything else, including malformed JSON inside a well-formed frame,
gets a typed ``error`` response and the loop keeps serving.

Requests run one at a time in arrival order (the client's lane is FIFO), except
``cancel_session``, which the reader applies at once: the session is marked canceled, its held
input is released, the running action stops at its next checkpoint, and the ack goes out
directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable
from typing import IO, Any, Protocol

from deskpilot.protocol.errors import ErrorCode
from deskpilot.protocol.frames import FrameError, FrameKind, FrameReader, FrameWriter, StreamClosed
from deskpilot.protocol.host_exits import EXIT_PROTOCOL_FAILURE

log = logging.getLogger("deskpilot.host")

EXIT_OK = 0
OUTPUT_LOCK_TIMEOUT_S = 2.0

Reply = tuple[dict[str, Any], bytes | None]


class Handler(Protocol):
    async def handle(self, request: dict[str, Any]) -> Reply: ...

    def cancel_now(self, request: dict[str, Any]) -> Reply | None:
        """Handle a request on the reader thread when it must not wait in line (cancel)."""
        ...

    def release_inputs(self) -> None:
        """Release held keys/buttons and restore remapped keycodes; any thread, idempotent."""
        ...


class Output:
    """The only writer of stdout frames; whole frames, one at a time."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._writer = FrameWriter(stream)
        self._stream = stream
        self.lock = threading.Lock()

    def send(self, response: dict[str, Any], binary: bytes | None = None) -> None:
        with self.lock:
            self._writer.write_pair(response, binary)

    def send_before_exit(self, response: dict[str, Any] | None) -> None:
        """Best effort: never wait forever for a writer stuck on a full pipe."""
        if not self.lock.acquire(timeout=OUTPUT_LOCK_TIMEOUT_S):
            return
        try:
            if response is not None:
                self._writer.write_json(response)
            self._stream.flush()
        except (OSError, ValueError):
            pass
        finally:
            self.lock.release()


def error_response(
    request_id: Any, code: ErrorCode, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": request_id if isinstance(request_id, int | str) else None,
        "type": "error",
        "code": code.value,
        "message": message,
        "retryable": code.retryable,
    }
    if details:
        out["details"] = details
    return out


class Server:
    def __init__(
        self,
        handler: Handler,
        stdin: IO[bytes],
        output: Output,
        *,
        exit_process: Callable[[int], None] = os._exit,
    ) -> None:
        self.handler = handler
        self.reader = FrameReader(stdin)
        self.output = output
        self._exit_process = exit_process
        self._queue: asyncio.Queue[tuple[dict[str, Any], float]] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._exiting = threading.Event()

    # ---------------------------------------------------------------- exits

    def shutdown(self, code: int, response: dict[str, Any] | None = None) -> None:
        """Release held input, say why (if anything), and end the process now."""
        if self._exiting.is_set():
            return
        self._exiting.set()
        try:
            self.handler.release_inputs()
        except Exception:  # the X server may be gone; nothing left to release then
            log.exception("releasing held input at exit failed")
        self.output.send_before_exit(response)
        self._exit_process(code)

    # ---------------------------------------------------------------- reader thread

    def _read_loop(self) -> None:
        while not self._exiting.is_set():
            try:
                frame = self.reader.read()
                received = time.perf_counter()
            except StreamClosed:
                log.info("stdin closed; releasing held input and exiting")
                self.shutdown(EXIT_OK)
                return
            except FrameError as exc:
                log.error("protocol failure: %s", exc.reason)
                self.shutdown(
                    EXIT_PROTOCOL_FAILURE,
                    error_response(
                        None, ErrorCode.PROTOCOL_ERROR, str(exc), {"reason": exc.reason}
                    ),
                )
                return
            except Exception as exc:  # stdin itself failed (EBADF, EIO)
                log.error("stdin read failed: %s", exc)
                self.shutdown(EXIT_OK)
                return
            if frame.kind is not FrameKind.JSON:
                log.error("protocol failure: binary request")
                self.shutdown(
                    EXIT_PROTOCOL_FAILURE,
                    error_response(
                        None,
                        ErrorCode.PROTOCOL_ERROR,
                        "the host accepts only JSON requests; got a binary frame",
                        {"reason": "binary_request"},
                    ),
                )
                return
            try:
                request = frame.json()
            except FrameError as exc:
                self.output.send(
                    error_response(
                        None, ErrorCode.INVALID_REQUEST, str(exc), {"reason": exc.reason}
                    )
                )
                continue
            if not isinstance(request, dict):
                self.output.send(
                    error_response(
                        None,
                        ErrorCode.INVALID_REQUEST,
                        "a request must be a JSON object",
                        {"reason": "not_an_object"},
                    )
                )
                continue
            try:
                immediate = self.handler.cancel_now(request)
            except Exception:
                log.exception("immediate request handling failed")
                immediate = (
                    error_response(request.get("id"), ErrorCode.INTERNAL_ERROR, "internal error"),
                    None,
                )
            if immediate is not None:
                self.output.send(*immediate)
                continue
            assert self._loop is not None and self._queue is not None
            self._loop.call_soon_threadsafe(self._queue.put_nowait, (request, received))

    # ---------------------------------------------------------------- worker

    async def _serve(self, ready: Callable[[], Awaitable[None]] | None) -> None:
        self._loop = asyncio.get_running_loop()
        self._queue = asyncio.Queue()
        if ready is not None:
            await ready()
        reader = threading.Thread(target=self._read_loop, name="stdin-reader", daemon=True)
        reader.start()
        while True:
            request, received = await self._queue.get()
            try:
                response, binary = await self.handler.handle(request)
                _stamp_host_time(response, received)
            except Exception:
                log.exception("request handling failed")
                response, binary = (
                    error_response(request.get("id"), ErrorCode.INTERNAL_ERROR, "internal error"),
                    None,
                )
            if self._exiting.is_set():
                return
            with contextlib.suppress(BrokenPipeError):
                self.output.send(response, binary)

    def run(self, ready: Callable[[], Awaitable[None]] | None = None) -> None:
        asyncio.run(self._serve(ready))


def _stamp_host_time(response: dict[str, Any], received: float) -> None:
    """Add ``timingsMs.host``: frame received → response built, the host's whole share of a
    request (hand-off to the worker, validation, the work, the response model), so a client
    can tell its own overhead from the host's. Only responses that carry timings get it."""
    timings = response.get("timingsMs")
    if isinstance(timings, dict):
        timings["host"] = round((time.perf_counter() - received) * 1000, 3)
