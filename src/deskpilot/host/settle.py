"""Knowing when the UI has finished reacting to an action, instead of sleeping.

Three rules, all bounded by the request's ``settleMs`` (1.5 s by default):

* after a semantic op (AT-SPI), the app's own accessibility events decide: wait up to 600 ms
  for the first one (GTK buttons answer ``DoAction`` at once but emit ``clicked`` only after a
  250 ms "activate" animation), then until none arrived for 50 ms;
* after synthetic input to a window with a tree: the same event rule, then two equal pixel
  fingerprints 60 ms apart;
* without a tree: until the pixels changed and then held still for 120 ms, or did not change
  at all for 300 ms.

When the action's result is to carry the post-action observation, the event rule overlaps
with reading the tree: once the events pause for ``SPECULATE_QUIET_MS`` the tree is read,
and it is kept only if no event arrived from the moment the read began until the full 50 ms
of quiet had passed (D-Bus keeps one sender's messages in order, so an event the app sent
before answering a read is seen before that answer). Otherwise it is read again. The pixels
are captured only after the quiet is confirmed, so the screenshot shows the settled UI.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

from deskpilot.host.accessibility import Accessibility
from deskpilot.host.x11.desktop import X11Desktop
from deskpilot.protocol.errors import DeskpilotError
from deskpilot.protocol.wire import Rect

POLL_S: Final = 0.03
STABLE_S: Final = 0.12  # unchanged this long after a change: the UI has settled
QUIET_S: Final = 0.3  # no change at all this long after dispatch: nothing is coming
EVENT_QUIET_MS: Final = 50.0
FIRST_EVENT_MS: Final = 600.0
SPECULATE_QUIET_MS: Final = 15.0
MAX_SPECULATIONS: Final = 3

T = TypeVar("T")


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

    async def after_input(
        self,
        bus_name: str | None,
        rect: Rect,
        baseline: int | None,
        since: float,
        budget_ms: float,
    ) -> bool:
        """Synthetic input: the event rule (when the window has a tree), then still pixels."""
        if budget_ms <= 0:
            return True
        deadline = since + budget_ms / 1000
        if self.accessibility is not None and bus_name is not None:
            quiet = await self.accessibility.settle(bus_name, since, max_ms=budget_ms)
            if not quiet:
                return False
            return await self.pixels_still(rect, deadline, stable_s=0.06, quiet_s=0.06)
        if baseline is None:
            return False
        return await self.pixels_still(
            rect, deadline, stable_s=STABLE_S, quiet_s=QUIET_S, last=baseline
        )

    async def after_semantic(self, bus_name: str, since: float, budget_ms: float) -> bool:
        """A semantic op: the app's events went quiet (bounded)."""
        if budget_ms <= 0 or self.accessibility is None:
            return True
        return await self.accessibility.settle(bus_name, since, max_ms=budget_ms)

    async def after_semantic_reading(
        self,
        bus_name: str,
        since: float,
        budget_ms: float,
        read: Callable[[], Awaitable[T]],
    ) -> tuple[bool, T | None]:
        """The event rule of :meth:`after_semantic`, with ``read`` done during the final quiet.

        Returns (settled, what ``read`` returned while nothing changed, or None: the caller
        reads again itself). ``read`` errors propagate.
        """
        acc = self.accessibility
        if acc is None or budget_ms <= 0:
            return True, None
        deadline = since + budget_ms / 1000
        quiet = await acc.settle(
            bus_name, since, max_ms=budget_ms, quiet_ms=SPECULATE_QUIET_MS, first_ms=FIRST_EVENT_MS
        )
        if not quiet:
            return False, None
        for _ in range(MAX_SPECULATIONS):
            started = time.monotonic()
            value = await read()
            last = acc.last_event(bus_name)
            if last < started:
                if last <= since:  # the app reported nothing at all: nothing more is coming
                    return True, value
                wait = last + EVENT_QUIET_MS / 1000 - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                if acc.last_event(bus_name) < started:
                    return True, value
            remaining_ms = (deadline - time.monotonic()) * 1000
            if remaining_ms <= 0:
                return False, None
            quiet = await acc.settle(
                bus_name, started, max_ms=remaining_ms, quiet_ms=SPECULATE_QUIET_MS, first_ms=0.0
            )
            if not quiet:
                return False, None
        remaining_ms = (deadline - time.monotonic()) * 1000
        if remaining_ms <= 0:
            return False, None
        return await acc.settle(bus_name, time.monotonic(), max_ms=remaining_ms), None

    async def pixels_still(
        self,
        rect: Rect,
        deadline: float,
        *,
        stable_s: float,
        quiet_s: float,
        last: int | None = None,
    ) -> bool:
        start = time.monotonic()
        if last is None:
            last = self.fingerprint(rect)
        last_change: float | None = None
        while True:
            await asyncio.sleep(POLL_S)
            now = time.monotonic()
            current = self.fingerprint(rect)
            if current is None:
                return False
            if current != last:
                last, last_change = current, now
            elif (last_change is not None and now - last_change >= stable_s) or (
                last_change is None and now - start >= quiet_s
            ):
                return True
            if now >= deadline:
                return False
