"""Knowing when the UI has finished reacting to an action, instead of sleeping.

All rules are bounded by the request's ``settleMs`` (1.5 s by default):

* the app's accessibility events (when the window has a tree): wait up to 600 ms for the first
  one (GTK buttons answer ``DoAction`` — and Enter or Space — at once but emit ``clicked``
  only after a 250 ms "activate" animation), then until none arrived for 50 ms;
* after synthetic input to a window with a tree, *also* the pixels: the window must have
  looked the same for the last 60 ms. Both conditions are watched at the same time, so the
  longer of the two decides, not their sum;
* after synthetic input to a window without a tree: until the pixels changed and then held
  still for 120 ms, or did not change at all for 300 ms.

When the action's result is to carry the post-action observation, the wait overlaps with
reading the tree: once the events pause for ``SPECULATE_QUIET_S`` the tree is read, and it
is kept only if no event arrived from the moment the read began until the wait ended (D-Bus
keeps one sender's messages in order, so an event the app sent before answering a read is
seen before that answer); otherwise it is read again. The pixels are captured by the caller
only after the wait, so the screenshot shows the settled UI.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Final, Generic, TypeVar

from deskpilot.host.accessibility import Accessibility
from deskpilot.host.atspi.events import EVENT_QUIET_S
from deskpilot.host.x11.desktop import X11Desktop
from deskpilot.protocol.errors import DeskpilotError
from deskpilot.protocol.wire import Rect

POLL_S: Final = 0.01
PIXEL_POLL_S: Final = 0.02
PIXEL_STILL_S: Final = 0.06  # with a tree: unchanged this long
SPECULATE_QUIET_S: Final = 0.015
MAX_READS: Final = 4
NO_TREE_STABLE_S: Final = 0.12  # without a tree: unchanged this long after a change
NO_TREE_QUIET_S: Final = 0.3  # without a tree: no change at all this long: nothing is coming

T = TypeVar("T")


class _Speculation(Generic[T]):
    """One read of the window started during the wait, and when it started."""

    def __init__(self, read: Callable[[], Awaitable[T]]) -> None:
        self.started = time.monotonic()
        self.task: asyncio.Task[T] = asyncio.ensure_future(read())
        #: the app changed after the read began; a read in flight is left to finish (its
        #: D-Bus calls are not abandoned half-way) and then dropped
        self.stale = False

    def finished_stale(self) -> bool:
        if not (self.stale and self.task.done()):
            return False
        if not self.task.cancelled():
            self.task.exception()  # retrieved: a failed stale read is not worth a warning
        return True

    async def cancel(self) -> None:
        self.task.cancel()
        with contextlib.suppress(BaseException):
            await self.task


class Settler:
    def __init__(self, desktop: X11Desktop, accessibility: Accessibility | None) -> None:
        self.desktop = desktop
        self.accessibility = accessibility

    def fingerprint(self, rect: Rect) -> int | None:
        capturer = self.desktop.capturer
        if capturer is None or rect.width <= 0 or rect.height <= 0:
            return None
        try:
            return capturer.grab(rect).fingerprint()
        except DeskpilotError:
            return None

    async def settle(
        self,
        bus_name: str,
        since: float,
        budget_ms: float,
        *,
        pixels: Rect | None = None,
        read: Callable[[], Awaitable[T]] | None = None,
    ) -> tuple[bool, T | None]:
        """Wait for the app's events to go quiet (and, with ``pixels``, that area to hold
        still). Returns (settled, what ``read`` returned while nothing changed, or None: the
        caller reads again itself). ``read`` errors propagate."""
        acc = self.accessibility
        if acc is None or budget_ms <= 0:
            return True, None
        deadline = since + budget_ms / 1000
        last_print = self.fingerprint(pixels) if pixels is not None else None
        last_change = time.monotonic()
        next_print = last_change + PIXEL_POLL_S
        spec: _Speculation[T] | None = None
        reads = 0
        try:
            while True:
                now = time.monotonic()
                last_event = acc.last_event(bus_name)
                if pixels is not None and now >= next_print:
                    current = self.fingerprint(pixels)
                    if current != last_print:
                        last_print, last_change = current, now
                    next_print = now + PIXEL_POLL_S
                if spec is not None and last_event >= spec.started:
                    spec.stale = True  # the app changed while it was being read
                if spec is not None and spec.finished_stale():
                    spec = None
                if (
                    read is not None
                    and spec is None
                    and reads < MAX_READS
                    and acc.went_quiet(bus_name, since, now, quiet_s=SPECULATE_QUIET_S)
                ):
                    spec = _Speculation(read)
                    reads += 1
                events_done = acc.went_quiet(bus_name, since, now, quiet_s=EVENT_QUIET_S)
                pixels_done = pixels is None or now - last_change >= PIXEL_STILL_S
                if events_done and pixels_done:
                    if spec is None:
                        return True, None
                    value = await spec.task
                    if not spec.stale and acc.last_event(bus_name) < spec.started:
                        return True, value
                    spec = None  # events arrived during the read: wait again
                    continue
                if now >= deadline:
                    return False, None
                await asyncio.sleep(POLL_S)
        finally:
            if spec is not None and not spec.task.done():
                await spec.cancel()

    async def pixels_only(
        self, rect: Rect, baseline: int | None, since: float, budget_ms: float
    ) -> bool:
        """No tree: the pixels changed and held still for 120 ms, or never changed in 300 ms."""
        if budget_ms <= 0:
            return True
        if baseline is None:
            return False
        deadline = since + budget_ms / 1000
        start = time.monotonic()
        last = baseline
        last_change: float | None = None
        while True:
            await asyncio.sleep(PIXEL_POLL_S)
            now = time.monotonic()
            current = self.fingerprint(rect)
            if current is None:
                return False
            if current != last:
                last, last_change = current, now
            elif (last_change is not None and now - last_change >= NO_TREE_STABLE_S) or (
                last_change is None and now - start >= NO_TREE_QUIET_S
            ):
                return True
            if now >= deadline:
                return False
