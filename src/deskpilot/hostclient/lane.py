"""The single FIFO operation lane in front of one host connection.

Up to ``max_in_flight`` calls may be outstanding at the host at once and up to ``max_queued``
more wait, first come first served; anything past that is refused at once instead of piling
up behind a slow host (docs/hostclient.md, "One FIFO lane"). Admission never awaits when a
slot is free, so a burst
of calls started in one event-loop turn is admitted or refused deterministically, before any
response can free a slot.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

from deskpilot.hostclient.failures import capacity_error
from deskpilot.protocol.errors import DeskpilotError, ErrorCode


class OperationLane:
    def __init__(self, max_in_flight: int, max_queued: int) -> None:
        if max_in_flight < 1 or max_queued < 0:
            raise ValueError("the lane needs at least one in-flight slot")
        self.max_in_flight = max_in_flight
        self.max_queued = max_queued
        self._in_flight = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._failure: DeskpilotError | None = None

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @property
    def queued(self) -> int:
        return len(self._waiters)

    @property
    def idle(self) -> bool:
        return self._in_flight == 0 and not self._waiters

    def _check_open(self) -> None:
        if self._failure is not None:
            raise DeskpilotError(
                ErrorCode.NATIVE_HOST_UNAVAILABLE,
                f"the host connection is closed: {self._failure.message}",
                retryable=False,
                details={"cause": self._failure.code.value},
            )

    async def acquire(self) -> None:
        self._check_open()
        if self._in_flight < self.max_in_flight and not self._waiters:
            self._in_flight += 1
            return
        if len(self._waiters) >= self.max_queued:
            raise capacity_error(
                ErrorCode.NATIVE_HOST_OPERATION_CAPACITY_REACHED,
                f"the host lane is full ({self.max_in_flight} in flight and "
                f"{self.max_queued} queued); try again when calls complete",
            )
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                # the slot was handed to us just as we were cancelled: pass it on
                self.release()
            else:
                with suppress(ValueError):
                    self._waiters.remove(waiter)
            raise
        # a handed-over slot keeps _in_flight unchanged (release() did not decrement)

    def release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._in_flight -= 1

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        await self.acquire()
        try:
            yield
        finally:
            self.release()

    def fail_all(self, error: DeskpilotError) -> None:
        """Close the lane: every queued call fails with a clear error, new calls too."""
        self._failure = error
        self._check_waiters(error)

    def _check_waiters(self, error: DeskpilotError) -> None:
        exc = DeskpilotError(
            ErrorCode.NATIVE_HOST_UNAVAILABLE,
            f"the host was stopped before this queued call was sent: {error.message}",
            retryable=False,
            details={"cause": error.code.value, "queued": True},
        )
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(exc)
