"""The observer's grabs run on a capture thread with its own X connection (x11/capture.py
``CaptureThread``): the pixels are the screen's, exactly as a grab on the caller's thread
gets them, and the caller's event loop keeps running meanwhile — a grab and its encoding
no longer hold up the tree read's D-Bus replies and deadline (docs/host.md, "Grabs off the
event loop"). Real Xvfb, real grabs."""

from __future__ import annotations

import asyncio
import io
import itertools
import os
import time
from collections.abc import Iterator

import pytest
from PIL import Image

from deskpilot.host.x11.capture import Capturer, CaptureThread
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import Rect

pytestmark = pytest.mark.desktop

SCREEN = Rect(x=0, y=0, width=1280, height=800)


@pytest.fixture
def shooter(desktop: object) -> Iterator[CaptureThread]:
    thread = CaptureThread(os.environ["DISPLAY"])
    yield thread
    thread.close()


async def test_the_thread_grabs_and_encodes_the_same_pixels_as_a_grab_here(
    shooter: CaptureThread,
) -> None:
    here = Capturer(os.environ["DISPLAY"])
    try:
        expected = here.grab(SCREEN)
    finally:
        here.close()
    frame, png, encode_ms = await shooter.grab_png(SCREEN)
    assert frame.rect == SCREEN and encode_ms > 0
    assert frame.bgrx == expected.bgrx  # a still desktop: byte for byte the same
    decoded = Image.open(io.BytesIO(png)).convert("RGB")
    assert decoded.size == (SCREEN.width, SCREEN.height)
    assert decoded.tobytes() == expected.image().tobytes()
    again, encode_again = await shooter.encode(frame)
    assert again == png and encode_again > 0
    assert (await shooter.grab(SCREEN)).bgrx == expected.bgrx


async def test_the_event_loop_keeps_running_while_the_thread_grabs_and_encodes(
    shooter: CaptureThread,
) -> None:
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    ticks: list[float] = []

    async def probe() -> None:  # what a tree read's reply callbacks need: the loop's turns
        while not done.is_set():
            ticks.append(loop.time())
            await asyncio.sleep(0.001)

    task = asyncio.ensure_future(probe())
    jobs = []
    for _ in range(5):
        t0 = time.perf_counter()
        await shooter.grab_png(SCREEN)
        jobs.append(time.perf_counter() - t0)
    done.set()
    await task
    # on the loop, each job would have been one stall as long as itself
    assert len(ticks) > 10, ticks
    longest_stall = max(b - a for a, b in itertools.pairwise(ticks))
    assert longest_stall < max(jobs), (longest_stall, jobs)


async def test_a_window_off_screen_is_a_typed_error_from_the_thread(
    shooter: CaptureThread,
) -> None:
    with pytest.raises(DeskpilotError) as caught:
        await shooter.grab_png(Rect(x=-5000, y=-5000, width=100, height=100))
    assert caught.value.code is ErrorCode.CAPTURE_FAILED
    frame, _, _ = await shooter.grab_png(Rect(x=0, y=0, width=10, height=10))  # still serving
    assert frame.rect.width == 10
