"""The garbage collector pause around tree reads (host/atspi/collector.py): overlapping reads
share one pause, and the collector ends as it was before the first began."""

from __future__ import annotations

import asyncio
import gc

import pytest

from deskpilot.host.atspi import collector


async def test_overlapping_reads_share_one_pause_and_the_collector_comes_back() -> None:
    assert gc.isenabled()
    first_in, second_in, first_out = asyncio.Event(), asyncio.Event(), asyncio.Event()
    seen: list[bool] = []

    async def first() -> None:
        with collector.paused():
            first_in.set()
            await second_in.wait()
            seen.append(gc.isenabled())
        first_out.set()

    async def second() -> None:
        await first_in.wait()
        with collector.paused():
            second_in.set()
            await first_out.wait()
            seen.append(gc.isenabled())  # the first read ended: still paused for this one
        seen.append(gc.isenabled())

    await asyncio.gather(first(), second())
    assert seen == [False, False, True]


def test_a_failed_read_ends_the_pause_and_a_collector_off_before_stays_off() -> None:
    with pytest.raises(RuntimeError), collector.paused():
        raise RuntimeError("the app went away")
    assert gc.isenabled()
    gc.disable()
    try:
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
