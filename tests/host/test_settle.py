"""The post-action wait, without a desktop: the settle rules (host/settle.py), the event
watcher's clock and the toolkit-delay figure, the early-screenshot back-off and the frame hint
of a tree read.

A fake accessibility side stands in for AT-SPI: the test emits "events" into a real
``EventWatcher`` (fed ``Message`` objects as dbus-fast would), so the settle loop and its
wake-ups are exercised exactly as in the host.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, cast

import pytest
from dbus_fast import Message, MessageType

from deskpilot.host.accessibility import Accessibility, TreeResult
from deskpilot.host.atspi.events import EVENT_QUIET_S, FIRST_EVENT_S, EventWatcher
from deskpilot.host.settle import (
    CHROMIUM_REACTION_S,
    SPECULATE_QUIET_S,
    FirstEventWindow,
    Settler,
)
from deskpilot.host.x11.desktop import X11Desktop

APP = ":1.42"


class FakeAcc:
    """The three calls Settler makes, answered by a real EventWatcher."""

    def __init__(self) -> None:
        self.watcher = EventWatcher(cast(Any, None))

    def emit(self, sender: str = APP) -> None:
        self.watcher._on_message(
            Message(
                message_type=MessageType.SIGNAL,
                interface="org.a11y.atspi.Event.Object",
                member="TextChanged",
                path="/org/a11y/atspi/accessible/1",
                sender=sender,
            )
        )

    def last_event(self, bus_name: str) -> float:
        return self.watcher.last_event(bus_name)

    def went_quiet(self, bus_name: str, since: float, now: float, *, quiet_s: float) -> bool:
        return self.watcher.went_quiet(bus_name, since, now, quiet_s=quiet_s)

    def first_event_after(self, bus_name: str, since: float) -> float | None:
        return self.watcher.first_event_after(bus_name, since)

    async def next_event(self, bus_name: str, timeout: float) -> bool:
        return await self.watcher.next_event(bus_name, timeout)


def settler(acc: FakeAcc) -> Settler:
    return Settler(cast(X11Desktop, None), cast(Accessibility, acc))


async def emit_at(acc: FakeAcc, *delays: float) -> None:
    start = time.monotonic()
    for d in delays:
        await asyncio.sleep(max(0.0, start + d - time.monotonic()))
        acc.emit()


async def test_first_event_after_and_other_senders() -> None:
    acc = FakeAcc()
    before = time.monotonic()
    assert acc.watcher.first_event_after(APP, before) is None
    acc.emit(":1.7")  # another app's event says nothing about this one
    assert acc.watcher.first_event_after(APP, before) is None
    acc.emit()
    first = acc.watcher.first_event_after(APP, before)
    assert first is not None and first >= before
    acc.emit()
    assert acc.watcher.first_event_after(APP, before) == first
    assert acc.watcher.first_event_after(APP, acc.watcher.last_event(APP)) is None


async def test_next_event_wakes_on_the_event_not_on_a_poll() -> None:
    acc = FakeAcc()
    assert await acc.watcher.next_event(APP, 0.02) is False
    task = asyncio.ensure_future(acc.watcher.next_event(APP, 2.0))
    await asyncio.sleep(0.01)
    t0 = time.monotonic()
    acc.emit()
    assert await task is True
    assert time.monotonic() - t0 < 0.05


async def test_settle_ends_one_quiet_interval_after_the_last_event() -> None:
    acc = FakeAcc()
    since = time.monotonic()
    # a GTK-like reaction: nothing for 250 ms, then a burst
    burst = asyncio.ensure_future(emit_at(acc, 0.25, 0.251, 0.26))
    done = await settler(acc).settle(APP, since, 1500)
    end = time.monotonic()
    await burst
    assert done.settled is True and done.value is None and done.bound == "event"
    quiet = end - acc.watcher.last_event(APP)
    assert EVENT_QUIET_S <= quiet < EVENT_QUIET_S + 0.035, quiet  # no polling slack


async def test_settle_without_events_waits_the_first_event_window() -> None:
    acc = FakeAcc()
    since = time.monotonic()
    done = await settler(acc).settle(APP, since, 1500)
    assert done.settled is True and done.bound == "first_event"
    assert FIRST_EVENT_S <= time.monotonic() - since < FIRST_EVENT_S + 0.1


async def test_settle_budget_bounds_it() -> None:
    acc = FakeAcc()
    since = time.monotonic()
    chatter = asyncio.ensure_future(emit_at(acc, *[i * 0.02 for i in range(30)]))
    done = await settler(acc).settle(APP, since, 200)
    chatter.cancel()
    assert done.settled is False and done.bound == "budget"
    assert 0.2 <= time.monotonic() - since < 0.3


async def test_speculative_read_is_kept_only_without_events_during_it() -> None:
    acc = FakeAcc()
    reads: list[float] = []

    async def read() -> int:
        reads.append(time.monotonic())
        n = len(reads)
        if n == 1:
            acc.emit()  # the app changed while the first read was under way
        await asyncio.sleep(0.01)
        return n

    since = time.monotonic()
    acc.emit()
    done = await settler(acc).settle(APP, since, 1500, read=read)
    assert done.settled is True
    assert done.value == 2  # the first read was stale, the second one is what was returned
    assert reads[0] - since >= SPECULATE_QUIET_S


async def test_a_toolkit_window_ends_the_wait_once_the_barrier_is_answered() -> None:
    acc = FakeAcc()
    asked: list[float] = []

    async def barrier() -> bool:
        asked.append(time.monotonic())
        await asyncio.sleep(0.03)  # the app answers after work that was due
        return True

    since = time.monotonic()
    window = FirstEventWindow(since + 0.1, "toolkit_gtk", barrier)
    done = await settler(acc).settle(APP, since, 1500, window=window)
    end = time.monotonic() - since
    assert done.settled is True and done.bound == "toolkit_gtk"
    assert len(asked) == 1 and asked[0] - since >= 0.1  # asked once the window ended
    assert 0.13 <= end < 0.3, end  # and the answer ended it: not the 600 ms rule


async def test_an_event_before_the_barrier_answers_hands_the_wait_to_the_quiet_rule() -> None:
    acc = FakeAcc()

    async def barrier() -> bool:
        acc.emit()  # the due work ran and changed something before the app answered
        await asyncio.sleep(0.01)
        return True

    since = time.monotonic()
    window = FirstEventWindow(since + 0.05, "toolkit_none", barrier)
    done = await settler(acc).settle(APP, since, 1500, window=window)
    assert done.settled is True and done.bound == "event"
    assert time.monotonic() - acc.watcher.last_event(APP) >= EVENT_QUIET_S


async def test_a_barrier_never_answered_is_waited_for_no_longer_than_the_plain_rule() -> None:
    acc = FakeAcc()
    never = asyncio.Event()

    async def barrier() -> bool:
        await never.wait()  # a stopped app
        return True

    since = time.monotonic()
    window = FirstEventWindow(since + 0.02, "toolkit_none", barrier)
    done = await settler(acc).settle(APP, since, 1500, window=window)
    assert done.settled is True and done.bound == "first_event"
    assert FIRST_EVENT_S <= time.monotonic() - since < FIRST_EVENT_S + 0.1


async def test_chromium_window_widens_with_the_apps_typical_reaction() -> None:
    from types import SimpleNamespace

    from deskpilot.host.atspi.model import AppInfo, ElementRef, NodeRef

    acc = FakeAcc()
    acc_any = cast(Any, acc)
    app = AppInfo("chromium", 1, APP, "/", toolkit="Chromium", toolkit_version="1.0")

    async def application(bus_name: str) -> Any:
        return app if bus_name == APP else None

    acc_any.client = SimpleNamespace(application=application)
    acc_any.still_valid = lambda element: asyncio.sleep(0, True)
    s = settler(acc)
    element = ElementRef(
        1, NodeRef(APP, "/a/1"), 7, "button", 0, "b", frozenset(), frozenset(), (), None
    )
    now = time.monotonic()
    window = await s.first_event_window(element, now)
    assert window is not None and window.bound == "toolkit_none"
    assert window.due - now == pytest.approx(CHROMIUM_REACTION_S)
    for _ in range(3):  # the app took 80 ms to react each time (a loaded machine)
        sent = time.monotonic()
        acc.emit()
        s.toolkit_delay_ms(APP, sent - 0.081, sent - 0.08, sent)
    now = time.monotonic()
    window = await s.first_event_window(element, now)
    assert window is not None and 0.15 <= window.due - now <= 0.17


async def test_toolkit_delay_is_answer_to_first_event() -> None:
    acc = FakeAcc()
    s = settler(acc)
    sent = time.monotonic()
    answered = sent + 0.002
    # no reaction: nothing to time
    assert s.toolkit_delay_ms(APP, sent, answered, time.monotonic()) is None
    await asyncio.sleep(0.05)
    acc.emit()
    delay = s.toolkit_delay_ms(APP, sent, answered, time.monotonic())
    assert delay is not None and 45 <= delay < 100
    # the first event came before the app answered the call: the toolkit made nobody wait
    now = time.monotonic()
    assert s.toolkit_delay_ms(APP, sent, now + 1, now) == 0.0
    # an event past the first-event window and after the wait ended is not the reaction the
    # rule waited for
    early = sent - FIRST_EVENT_S - 0.1
    assert s.toolkit_delay_ms(APP, early, sent - FIRST_EVENT_S, early + 0.2) is None
    # ... but one the wait held on for (the barrier waiting for a late GTK timer on a loaded
    # machine) is the toolkit's delay, however long
    late = s.toolkit_delay_ms(APP, early, early + 0.01, time.monotonic())
    assert late is not None and late >= (FIRST_EVENT_S + 0.09) * 1000


def test_early_screenshots_back_off_for_a_window_that_keeps_changing() -> None:
    from types import SimpleNamespace

    from deskpilot.host.observer import EARLY_RETRY, Observer

    observer = Observer(cast(X11Desktop, None), None)
    gtk, chromium = SimpleNamespace(xid=1), SimpleNamespace(xid=2)
    assert observer.early_screenshot(cast(Any, gtk)) is True
    observer._early_result(1, kept=False)  # its pixels still moved after the app went quiet
    observer._early_result(2, kept=True)
    tries = []
    for _ in range(2 * EARLY_RETRY):
        tries.append(observer.early_screenshot(cast(Any, gtk)))
        if tries[-1]:
            observer._early_result(1, kept=False)  # and missed again
    assert tries.count(True) == 2 and tries[EARLY_RETRY - 1] is True
    assert all(observer.early_screenshot(cast(Any, chromium)) for _ in range(EARLY_RETRY))


# ------------------------------------------------------------------ the frame hint of a tree read


class FakeTreeClient:
    """still_silent(), frames() and snapshot() of AtspiClient; the last two take 20 ms each
    and record what was read."""

    def __init__(self, frames: list[Any]) -> None:
        self._frames = frames
        self.read: list[str] = []
        #: whether the frame lookup had answered when each snapshot started
        self.after_lookup: list[bool] = []
        self._looked_up = False

    async def still_silent(
        self, pid: int | None, bus_name: str | None, deadline_s: float, probe_s: float
    ) -> float | None:
        return None  # this app has no question left open: it answers

    def ask(self, pid: int | None, bus_name: str | None, since: float) -> None:
        raise AssertionError("an app that answers is never left a question")

    async def frames(self, pid: int | None = None) -> list[Any]:
        await asyncio.sleep(0.02)
        self._looked_up = True
        return self._frames

    async def snapshot(
        self,
        ref: Any,
        *,
        max_elements: int,
        text_budget: int,
        deadline: float | None = None,
        after_action: bool = False,
    ) -> Any:
        from types import SimpleNamespace

        self.after_lookup.append(self._looked_up)
        await asyncio.sleep(0.02)
        self.read.append(ref.path)
        # (text and elements: the window's id book reads them, atspi/element_ids.py)
        return SimpleNamespace(element_count=5, path=ref.path, partial=None, text="", elements={})


def _frame(path: str, title: str) -> Any:
    from deskpilot.host.atspi.model import FrameInfo, NodeRef
    from deskpilot.protocol.wire import Rect

    rect = Rect(x=0, y=0, width=100, height=100)
    return FrameInfo(NodeRef(":1.5", path), 7, "app", title, "window", "frame", rect, frozenset())


def _window(title: str) -> Any:
    from types import SimpleNamespace

    from deskpilot.protocol.wire import Rect

    return SimpleNamespace(
        xid=0x400001, pid=7, title=title, visible=True, bounds=Rect(x=0, y=0, width=100, height=100)
    )


async def test_a_frame_hint_overlaps_the_lookup_and_is_checked_against_it() -> None:
    main, other = _frame("/main", "Calculator"), _frame("/other", "Other")
    client = FakeTreeClient([main, other])
    acc = Accessibility(cast(Any, client))
    tree = await acc.tree_for(_window("Calculator"), max_elements=10, text_budget=10, hint=main)
    assert isinstance(tree, TreeResult) and tree.frame.ref == main.ref
    assert client.read == ["/main"]  # one snapshot, of the hinted frame
    assert client.after_lookup[0] is False  # it did not wait for the lookup
    # a hint the lookup disagrees with is dropped: the looked-up frame is what is read
    client = FakeTreeClient([main, other])
    acc = Accessibility(cast(Any, client))
    tree = await acc.tree_for(_window("Calculator"), max_elements=10, text_budget=10, hint=other)
    assert isinstance(tree, TreeResult) and tree.frame.ref == main.ref
    assert client.read == ["/other", "/main"]
    assert cast(Any, tree.snapshot).path == "/main"
