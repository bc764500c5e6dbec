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
seen before that answer); otherwise it is read again. The read may take the screenshot too
(``Observer.early_screenshot``: not for a window whose early screenshot went stale last time);
once the wait ended the caller grabs the window again and keeps the read's image only if the
pixels are exactly the same (else it encodes the new grab), so the screenshot shows the
settled UI either way.

The loop does not poll: it sleeps until the next moment a rule could be met (a quiet interval
ending, a pixel check, the budget) and, before the app's first event, until that event
arrives.

**The toolkit's delay** (:meth:`Settler.toolkit_delay_ms`): after a semantic operation, the
time from the moment the app answered the AT-SPI call (``DoAction``, ``InsertText``...) until
its first accessibility event arrived — time the settle rule spends waiting for the app to
start reacting, which no watcher of the app can shorten. GTK 3/4 buttons answer ``DoAction``
at once and emit ``clicked`` 250 ms later (gtkbutton.c ``ACTIVATE_TIMEOUT``), so a GTK button
click reports ≈ 250 ms; Chromium reacts within a few ms (0 when its first event came before
the answer). None when no event came within the first-event window (nothing to attribute:
that wait is the rule's) or the action was not semantic.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final, Generic, TypeVar

from deskpilot.host.accessibility import Accessibility
from deskpilot.host.atspi.events import EVENT_QUIET_S, FIRST_EVENT_S
from deskpilot.host.x11.desktop import X11Desktop
from deskpilot.protocol.errors import DeskpilotError
from deskpilot.protocol.wire import Rect

POLL_S: Final = 0.01  # a wake-up when no rule names a sooner moment
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
                may_read = read is not None and spec is None and reads < MAX_READS
                if may_read and acc.went_quiet(bus_name, since, now, quiet_s=SPECULATE_QUIET_S):
                    assert read is not None
                    spec = _Speculation(read)
                    reads += 1
                    may_read = False
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
                # sleep until the next moment one of the rules above can change its answer
                if last_event > since:
                    wakes = [last_event + EVENT_QUIET_S]
                    if may_read:
                        wakes.append(last_event + SPECULATE_QUIET_S)
                else:
                    wakes = [since + FIRST_EVENT_S]
                if pixels is not None:
                    wakes += [next_print, last_change + PIXEL_STILL_S]
                wake = min([w for w in wakes if w > now] or [now + POLL_S])
                timeout = min(wake, deadline) - now
                running = spec.task if spec is not None and spec.stale else None
                await self._pause(acc, bus_name, timeout, last_event <= since, running)
        finally:
            if spec is not None and not spec.task.done():
                await spec.cancel()

    @staticmethod
    async def _pause(
        acc: Accessibility,
        bus_name: str,
        timeout: float,
        until_event: bool,
        running: asyncio.Task[T] | None,
    ) -> None:
        """Sleep ``timeout`` s, or less: until the app's first event (``until_event``: before
        it, the next event starts the quiet intervals) or until a stale read ends (``running``:
        a new one may start then). Once events flow, later events only push the quiet
        intervals further out, so they need no wake-up of their own."""
        timeout = max(timeout, 0.0005)
        if running is None:
            if until_event:
                await acc.next_event(bus_name, timeout)
            else:
                await asyncio.sleep(timeout)
            return
        waiter: asyncio.Future[Any] = asyncio.ensure_future(
            acc.next_event(bus_name, timeout) if until_event else asyncio.sleep(timeout)
        )
        pending: set[asyncio.Future[Any]] = {waiter, running}
        try:
            await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not waiter.done():
                waiter.cancel()
                with contextlib.suppress(BaseException):
                    await waiter

    def toolkit_delay_ms(self, bus_name: str, sent: float, answered: float) -> float | None:
        """The toolkit's delay of a semantic operation sent at ``sent`` and answered at
        ``answered`` (monotonic): from the answer to the app's first accessibility event after
        the send, 0 when that event came before the answer; None when none came within the
        first-event window (see the module docstring)."""
        acc = self.accessibility
        if acc is None:
            return None
        first = acc.first_event_after(bus_name, sent)
        if first is None or first > sent + FIRST_EVENT_S:
            return None
        return round(max(0.0, first - answered) * 1000, 2)

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
