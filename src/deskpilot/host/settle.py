"""Knowing when the UI has finished reacting to an action, instead of sleeping.

All rules are bounded by the request's ``settleMs`` (1.5 s by default):

* the app's accessibility events (when the window has a tree): wait for the first one (see
  "The first event" below), then until none arrived for 50 ms;
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

**The first event.** After a semantic operation (``DoAction``, ``SetValue``...) the wait for
the app's first event is bounded by what its toolkit is known to need, counted from the moment
the app answered the call (:meth:`Settler.first_event_window`):

* GTK 4 (``ToolkitName`` "GTK", version 4): its buttons answer ``DoAction`` at once and emit
  ``clicked`` only when a 250 ms "activate" timer fires (gtkbutton.c ``ACTIVATE_TIMEOUT``):
  250 ms + the follow-up below, then the barrier;
* GTK 3 ("gtk", atk-bridge): atk-bridge answers ``DoAction`` and then runs the handler in the
  same dispatch (host/atspi/action_conns.py); measured, its first event comes < 1 ms after the
  answer: the follow-up, then the barrier;
* the follow-up (GTK, ``GTK_FOLLOW_UP_S``, 100 ms): work a handler hands to a GLib timeout or
  idle callback reports later than the handler itself — gnome-calculator's "=" result comes
  50–60 ms after ``clicked``, from its solver thread through a 50 ms poll;
* Chromium: the browser answers and its renderer performs the action; measured, the first
  event comes 2–16 ms after the answer: 50 ms, or twice the app's median reaction over its
  last ``REACTIONS_KEPT`` semantic operations if that is longer (a loaded machine), then the
  barrier (which orders the browser's events, not the renderer's: hence the 50 ms);
* any other toolkit: 600 ms (``FIRST_EVENT_S``) from the call, as before.

The *barrier* is what proves nothing is coming: a call to the app (``GetState`` of the element)
on the bus its events arrive on. D-Bus keeps one sender's messages in order, so once it is
answered, every event the app sent before answering has been seen; and the app answers it only
after the work that was due — GTK's timer callback, GTK 3's handler, however long they take
(measured on a busy gnome-calculator: its 250 ms timer fired 514 ms after the answer, and the
barrier waited for it). An event before the window ends, or before the barrier is answered,
hands the wait to the 50 ms quiet rule. An app that does not answer the barrier is waited for
no longer than 600 ms from the call (the old rule). ``ActionResult.wait_bound`` says which
bound ended the wait. Not covered: work an app puts off for longer than its window (a page's
``setTimeout`` of 200 ms, a solver slower than the follow-up); the old rule caught such work
up to 600 ms after the call.

**LibreOffice's command states.** LibreOffice updates what its toolbars, sidebar and menus
show of the document (Bold checked or not, the paragraph style, the font) from a timer that
fires 300 ms after the change that invalidated them (sfx2's bindings, ``TIMEOUT_FIRST``), not
with the change: selecting a word that is not bold sends its selection events at once and
the Bold button's ``StateChanged:checked`` ≈ 330–350 ms later (measured). A result read when
the first burst went quiet showed Bold as it was before — an agent that saw "unchecked" after
applying it would undo its own work. So for LibreOffice (:meth:`Settler.hold_s`) a wait that
saw events does not end before ``LIBREOFFICE_STATE_UPDATE_S`` after the first of them; the
updates' own events then get the usual quiet interval. And a semantic operation's first
event is waited for that long from the answer (not GTK's 100 ms): with the keyboard focus
on a toolbar button, selecting text in the document sends nothing at once — the status
bar's "Selected: …" and Bold's state come together with the timer, ≈ 400 ms later.

**The toolkit's delay** (:meth:`Settler.toolkit_delay_ms`): after a semantic operation, the
time from the moment the app answered the AT-SPI call (``DoAction``, ``InsertText``...) until
its first accessibility event arrived — time the settle rule spends waiting for the app to
start reacting, which no watcher of the app can shorten. GTK 4 buttons answer ``DoAction``
at once and emit ``clicked`` 250 ms later (gtkbutton.c ``ACTIVATE_TIMEOUT``), so a GTK 4
button click reports ≈ 250 ms; GTK 3 and Chromium react within a few ms (0 when the first
event came before the answer). None when no event came within the plain first-event window
or the wait itself (nothing to attribute: that wait is the rule's) or the action was not
semantic; an event the barrier held the wait for — a GTK timer that fires late on a loaded
machine — is still the toolkit's delay. The delays
are also kept per app: a Chromium app's window widens with them (above).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import statistics
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from deskpilot.host.accessibility import Accessibility
from deskpilot.host.atspi.events import EVENT_QUIET_S, FIRST_EVENT_S
from deskpilot.host.atspi.model import ElementRef
from deskpilot.host.x11.desktop import X11Desktop
from deskpilot.protocol.errors import DeskpilotError
from deskpilot.protocol.wire import Rect, WaitBound

POLL_S: Final = 0.01  # a wake-up when no rule names a sooner moment
PIXEL_POLL_S: Final = 0.02
PIXEL_STILL_S: Final = 0.06  # with a tree: unchanged this long
SPECULATE_QUIET_S: Final = 0.015
MAX_READS: Final = 4
NO_TREE_STABLE_S: Final = 0.12  # without a tree: unchanged this long after a change
NO_TREE_QUIET_S: Final = 0.3  # without a tree: no change at all this long: nothing is coming
#: how often a late-effect watch looks at the pixels (each look grabs the window)
LATE_PIXEL_POLL_S: Final = 0.05
#: the toolkits' first-event windows, from the app's answer (see "The first event" above)
GTK4_ACTIVATION_S: Final = 0.25
GTK_FOLLOW_UP_S: Final = 0.1
CHROMIUM_REACTION_S: Final = 0.05
REACTIONS_KEPT: Final = 16
#: how long the toolkit lookup of a new app may take before the plain rule is used
TOOLKIT_LOOKUP_S: Final = 0.3
#: LibreOffice's command states follow a change by sfx2's 300 ms bindings timer (see
#: "LibreOffice's command states" above): a wait with events lasts at least this long from
#: the first one
LIBREOFFICE_STATE_UPDATE_S: Final = 0.4
#: accessible application names of LibreOffice (its process is soffice.bin)
LIBREOFFICE_NAMES: Final = frozenset({"soffice", "soffice.bin", "libreoffice"})

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class FirstEventWindow:
    """How long a semantic op's first event is waited for, and what ended the wait when none
    came by then (see the module docstring)."""

    #: the moment (monotonic) by which the first event is due
    due: float
    #: what ends the wait when no event came by ``due`` and the barrier was answered
    bound: WaitBound
    #: a call to the app on the bus its events arrive on (None: ``due`` alone ends the wait)
    barrier: Callable[[], Awaitable[object]] | None = None


@dataclass(frozen=True, slots=True)
class Settled(Generic[T]):
    """How the wait ended: settled or not, what ``read`` returned while nothing changed (None:
    the caller reads again itself), and which bound ended it (None: there was no wait)."""

    settled: bool
    value: T | None
    bound: WaitBound | None


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
        #: (ToolkitName, version) per bus name; a bus name is never reused, so never stale
        self._toolkits: dict[str, tuple[str, str]] = {}
        #: the accessible application name per bus name (learnt with the toolkit)
        self._names: dict[str, str] = {}
        #: the app's recent reaction times (s, answer to first event), per bus name
        self._reactions: dict[str, deque[float]] = {}

    def fingerprint(self, rect: Rect) -> int | None:
        capturer = self.desktop.capturer
        if capturer is None or rect.width <= 0 or rect.height <= 0:
            return None
        try:
            return capturer.grab(rect).fingerprint()
        except DeskpilotError:
            return None

    async def first_event_window(
        self, element: ElementRef, answered: float | None
    ) -> FirstEventWindow | None:
        """The window for the first event of a semantic op on ``element`` that the app
        answered at ``answered`` (monotonic), by the app's toolkit; None: the plain rule."""
        acc = self.accessibility
        if acc is None or answered is None:
            return None
        toolkit, version = await self._toolkit(acc, element.bus_name)
        barrier = functools.partial(acc.still_valid, element)
        if self._names.get(element.bus_name) in LIBREOFFICE_NAMES:
            # its reaction may come only with its bindings timer (see the module docstring)
            due = answered + LIBREOFFICE_STATE_UPDATE_S
            return FirstEventWindow(due, "toolkit_none", barrier)
        if toolkit == "gtk" and version.startswith("4"):
            due = answered + GTK4_ACTIVATION_S + GTK_FOLLOW_UP_S
            return FirstEventWindow(due, "toolkit_gtk", barrier)
        if toolkit == "gtk":
            return FirstEventWindow(answered + GTK_FOLLOW_UP_S, "toolkit_none", barrier)
        if toolkit == "chromium":
            recent = self._reactions.get(element.bus_name)
            typical = 2 * statistics.median(recent) if recent else 0.0
            due = answered + min(max(CHROMIUM_REACTION_S, typical), FIRST_EVENT_S)
            return FirstEventWindow(due, "toolkit_none", barrier)
        return None

    async def _toolkit(self, acc: Accessibility, bus_name: str) -> tuple[str, str]:
        """The app's toolkit name (lower case) and version; ("", "") when it cannot be told.
        Asked once per app, of that app only (usually known already from its tree read, so
        no call at all): another app that is stopped — and would never answer a question to
        every app — cannot push the acting app back to the 600 ms rule."""
        known = self._toolkits.get(bus_name)
        if known is not None:
            return known
        client = getattr(acc, "client", None)
        if client is None:
            return "", ""
        try:
            app = await asyncio.wait_for(client.application(bus_name), TOOLKIT_LOOKUP_S)
        except Exception:
            return "", ""  # not remembered: the next action asks again
        if app is None:
            return "", ""
        found = (app.kit, app.toolkit_version or "")
        self._toolkits[bus_name] = found
        self._names[bus_name] = app.name.lower()
        return found

    async def hold_s(self, bus_name: str) -> float:
        """How long after its first event a wait on this app must last at least: LibreOffice
        shows its command states only ``LIBREOFFICE_STATE_UPDATE_S`` after a change."""
        acc = self.accessibility
        if acc is None:
            return 0.0
        if bus_name not in self._names:
            await self._toolkit(acc, bus_name)
        name = self._names.get(bus_name, "")
        return LIBREOFFICE_STATE_UPDATE_S if name in LIBREOFFICE_NAMES else 0.0

    async def settle(
        self,
        bus_name: str,
        since: float,
        budget_ms: float,
        *,
        pixels: Rect | None = None,
        read: Callable[[], Awaitable[T]] | None = None,
        window: FirstEventWindow | None = None,
        hold_s: float = 0.0,
    ) -> Settled[T]:
        """Wait for the app's events to go quiet (and, with ``pixels``, that area to hold
        still); ``window``: how long the first event may take (default: ``FIRST_EVENT_S`` from
        ``since``); ``hold_s``: once events came, the wait lasts at least this long from the
        first (:meth:`hold_s`). ``read`` errors propagate."""
        acc = self.accessibility
        if acc is None or budget_ms <= 0:
            return Settled(True, None, None)
        deadline = since + budget_ms / 1000
        plain_due = since + FIRST_EVENT_S
        if window is None:
            window = FirstEventWindow(plain_due, "first_event")
        # an app that does not answer the barrier is waited for no longer than the plain rule
        give_up = max(window.due, plain_due)
        last_print = self.fingerprint(pixels) if pixels is not None else None
        last_change = time.monotonic()
        next_print = last_change + PIXEL_POLL_S
        spec: _Speculation[T] | None = None
        barrier: asyncio.Future[object] | None = None
        reads = 0
        try:
            while True:
                now = time.monotonic()
                last_event = acc.last_event(bus_name)
                events = last_event > since
                if pixels is not None and now >= next_print:
                    current = self.fingerprint(pixels)
                    if current != last_print:
                        last_print, last_change = current, now
                    next_print = now + PIXEL_POLL_S
                if spec is not None and last_event >= spec.started:
                    spec.stale = True  # the app changed while it was being read
                if spec is not None and spec.finished_stale():
                    spec = None
                no_event_bound: WaitBound | None = None
                if not events and now >= window.due:
                    if window.barrier is not None and barrier is None:
                        barrier = asyncio.ensure_future(window.barrier())
                    if barrier is None or barrier.done():
                        no_event_bound = window.bound
                    elif now >= give_up:
                        no_event_bound = "first_event"
                held = 0.0
                if events and hold_s > 0:
                    first = acc.first_event_after(bus_name, since)
                    held = first + hold_s if first is not None else 0.0
                if events:
                    may_start = now - last_event >= SPECULATE_QUIET_S
                    events_done = now - last_event >= EVENT_QUIET_S and now >= held
                else:
                    may_start = now >= window.due  # the read overlaps the barrier
                    events_done = no_event_bound is not None
                may_read = read is not None and spec is None and reads < MAX_READS
                if may_read and may_start:
                    assert read is not None
                    spec = _Speculation(read)
                    reads += 1
                    may_read = False
                pixels_done = pixels is None or now - last_change >= PIXEL_STILL_S
                if events_done and pixels_done:
                    bound: WaitBound = "event" if events else (no_event_bound or window.bound)
                    if spec is None:
                        return Settled(True, None, bound)
                    value = await spec.task
                    if not spec.stale and acc.last_event(bus_name) < spec.started:
                        return Settled(True, value, bound)
                    spec = None  # events arrived during the read: wait again
                    continue
                if now >= deadline:
                    return Settled(False, None, "budget")
                # sleep until the next moment one of the rules above can change its answer
                if events:
                    wakes = [last_event + EVENT_QUIET_S, held]
                    if may_read:
                        wakes.append(last_event + SPECULATE_QUIET_S)
                elif now < window.due:
                    wakes = [window.due]
                else:
                    wakes = [give_up]  # the barrier's answer wakes the loop sooner
                if pixels is not None:
                    wakes += [next_print, last_change + PIXEL_STILL_S]
                wake = min([w for w in wakes if w > now] or [now + POLL_S])
                timeout = min(wake, deadline) - now
                running: list[asyncio.Future[Any]] = []
                if spec is not None and spec.stale:
                    running.append(spec.task)
                if barrier is not None and not barrier.done() and not events:
                    running.append(barrier)
                await self._pause(acc, bus_name, timeout, not events, running)
        finally:
            if spec is not None and not spec.task.done():
                await spec.cancel()
            if barrier is not None:
                await _drop(barrier)

    @staticmethod
    async def _pause(
        acc: Accessibility,
        bus_name: str,
        timeout: float,
        until_event: bool,
        running: list[asyncio.Future[Any]],
    ) -> None:
        """Sleep ``timeout`` s, or less: until the app's first event (``until_event``: before
        it, the next event starts the quiet intervals) or until one of ``running`` ends (a
        stale read: a new one may start then; the barrier: its answer may end the wait). Once
        events flow, later events only push the quiet intervals further out, so they need no
        wake-up of their own."""
        timeout = max(timeout, 0.0005)
        if not running:
            if until_event:
                await acc.next_event(bus_name, timeout)
            else:
                await asyncio.sleep(timeout)
            return
        waiter: asyncio.Future[Any] = asyncio.ensure_future(
            acc.next_event(bus_name, timeout) if until_event else asyncio.sleep(timeout)
        )
        pending: set[asyncio.Future[Any]] = {waiter, *running}
        try:
            await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not waiter.done():
                waiter.cancel()
                with contextlib.suppress(BaseException):
                    await waiter

    def toolkit_delay_ms(
        self, bus_name: str, sent: float, answered: float, waited_until: float
    ) -> float | None:
        """The toolkit's delay of a semantic operation sent at ``sent`` and answered at
        ``answered`` (monotonic): from the answer to the app's first accessibility event after
        the send, 0 when that event came before the answer; None when none came within the
        wait that ended at ``waited_until`` nor the plain first-event window (see the module
        docstring). The wait counts too: on a loaded machine the barrier holds it for a GTK
        timer that fires late (514 ms measured), and that delay is still the toolkit's."""
        acc = self.accessibility
        if acc is None:
            return None
        first = acc.first_event_after(bus_name, sent)
        if first is None or first > max(sent + FIRST_EVENT_S, waited_until):
            return None
        delay = max(0.0, first - answered)
        kept = self._reactions.setdefault(bus_name, deque(maxlen=REACTIONS_KEPT))
        kept.append(delay)  # the next window of a Chromium app (first_event_window)
        return round(delay * 1000, 2)

    async def late_change(
        self, bus_name: str | None, rect: Rect, since: float, until: float
    ) -> float | None:
        """Watch for a late effect (host/post_action.py, "Late effects") until ``until``
        (monotonic): with a tree (``bus_name``), the app's next accessibility event after
        ``since`` (its pixels are no sign: a focused field's caret blinks); without one, a
        change of the pixels in ``rect``. When one came, the moment it was seen; else None.
        Sleeps until the next event, or the next look at the pixels."""
        acc = self.accessibility
        if bus_name is not None and acc is not None:
            while acc.last_event(bus_name) <= since:
                now = time.monotonic()
                if now >= until:
                    return None
                await acc.next_event(bus_name, until - now)
            return time.monotonic()
        baseline = self.fingerprint(rect)
        while True:
            now = time.monotonic()
            if now >= until or baseline is None:
                return None
            await asyncio.sleep(min(LATE_PIXEL_POLL_S, until - now))
            if self.fingerprint(rect) != baseline:
                return time.monotonic()

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


async def _drop(task: asyncio.Future[object]) -> None:
    """Cancel the barrier if it is still out (its answer no longer matters), retrieve its
    outcome either way."""
    if not task.done():
        task.cancel()
    with contextlib.suppress(BaseException):
        await task
