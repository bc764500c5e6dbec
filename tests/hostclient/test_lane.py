"""The FIFO lane on its own: order, capacity, cancellation, closing."""

from __future__ import annotations

import asyncio

import pytest

from deskpilot.hostclient.lane import OperationLane
from deskpilot.protocol.errors import DeskpilotError, ErrorCode


async def test_admits_in_fifo_order_and_refuses_past_capacity() -> None:
    lane = OperationLane(max_in_flight=2, max_queued=3)
    order: list[int] = []
    gate = asyncio.Event()

    async def op(i: int) -> int:
        async with lane.slot():
            order.append(i)
            await gate.wait()
        return i

    tasks = [asyncio.create_task(op(i)) for i in range(7)]
    await asyncio.sleep(0)
    assert lane.in_flight == 2 and lane.queued == 3
    gate.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    refused = [r for r in results if isinstance(r, DeskpilotError)]
    assert len(refused) == 2
    for err in refused:
        assert err.code is ErrorCode.ENVIRONMENT_UNAVAILABLE
        assert err.details["diagnosticCode"] == "native_host_operation_capacity_reached"
    assert order == [0, 1, 2, 3, 4]
    assert lane.idle


async def test_cancelled_waiter_leaves_the_queue() -> None:
    lane = OperationLane(max_in_flight=1, max_queued=1)
    await lane.acquire()
    waiter = asyncio.create_task(lane.acquire())
    await asyncio.sleep(0)
    assert lane.queued == 1
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert lane.queued == 0
    # the freed queue place is usable again
    second = asyncio.create_task(lane.acquire())
    await asyncio.sleep(0)
    lane.release()
    await second
    assert lane.in_flight == 1
    lane.release()
    assert lane.idle


async def test_slot_handed_to_a_cancelled_waiter_is_passed_on() -> None:
    lane = OperationLane(max_in_flight=1, max_queued=2)
    await lane.acquire()
    first = asyncio.create_task(lane.acquire())
    second = asyncio.create_task(lane.acquire())
    await asyncio.sleep(0)
    lane.release()  # hands the slot to `first`...
    first.cancel()  # ...which is cancelled before it runs
    with pytest.raises(asyncio.CancelledError):
        await first
    await asyncio.wait_for(second, 1)
    assert lane.in_flight == 1


async def test_fail_all_fails_queued_and_new_calls() -> None:
    lane = OperationLane(max_in_flight=1, max_queued=4)
    await lane.acquire()
    queued = [asyncio.create_task(lane.acquire()) for _ in range(3)]
    await asyncio.sleep(0)
    lane.fail_all(DeskpilotError(ErrorCode.ACTION_TIMEOUT, "request 7 timed out"))
    for task in queued:
        with pytest.raises(DeskpilotError) as info:
            await task
        assert info.value.code is ErrorCode.NATIVE_HOST_UNAVAILABLE
        assert info.value.details["queued"] is True
        assert "timed out" in info.value.message
    with pytest.raises(DeskpilotError) as info:
        await lane.acquire()
    assert info.value.code is ErrorCode.NATIVE_HOST_UNAVAILABLE
