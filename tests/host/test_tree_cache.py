"""The tree cache (host/atspi/tree_cache.py): when it serves, patches, reads in full, or is off.

The rules are checked on the event classification itself, then against real apps on the
private desktop: a GTK 3 window (tests/host/mutating_gtk_app.py) whose label changes on a
line on its stdin, gnome-calculator (GTK 4's own bridge) whose display changes with each
digit, and the host's observer, whose observations say how their tree was read.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
from dbus_fast import Message, MessageType
from dbus_fast.aio import MessageBus
from gtk_kit import frame_titled, needs_gtk3, start_gtk, stop

from deskpilot.desktop import DesktopState
from deskpilot.desktop import apps as dapps
from deskpilot.host.atspi import AtspiClient, SemanticOp
from deskpilot.host.atspi.events import CHANGE_LOG, Change, EventWatcher
from deskpilot.host.atspi.tree_cache import (
    NOTE_NO_EVENTS,
    NOTE_OVERFLOW,
    NOTE_SILENT_CHANGE,
    NOTE_SWITCHED_OFF,
    Dirt,
    classify,
)

INDEX = {"/a": 0, "/b": 1, "/c": 2}


# ------------------------------------------------------------------ the rules, on their own


def test_own_changes_of_kept_nodes_are_node_patches() -> None:
    changes = [
        Change(1, "/c", "PropertyChange:accessible-name"),
        Change(2, "/a", "StateChanged:checked"),
        Change(3, "/c", "TextChanged:insert"),
    ]
    assert classify(changes, INDEX) == Dirt(nodes=(0, 2))


def test_shape_changes_are_subtrees_read_again_and_moves_must_lie_in_them() -> None:
    changes = [
        Change(1, "/b", "ChildrenChanged:add"),
        Change(2, "/c", "StateChanged:showing"),  # what is read and shown changes
        Change(3, "/a", "SelectionChanged:"),  # a table's cells change state silently
        Change(3, "/b", "BoundsChanged:"),  # GTK 4: a list and its rows appear with only this
        Change(4, "/new", "PropertyChange:accessible-name"),  # a node not kept yet
        Change(5, "/c", "StateChanged:defunct"),  # removed
        Change(6, "/a", "PropertyChange:accessible-parent"),  # moved
    ]
    assert classify(changes, INDEX) == Dirt(
        subtrees=(0, 1, 2), loose=frozenset({"/new", "/c", "/a"})
    )


@pytest.mark.parametrize(
    "change",
    [
        Change(1, "/a", "PropertyChange:accessible-role"),
        Change(1, "/a", "Activate:"),  # a window event: focus states change without events
        Change(1, "/a", "LoadComplete:"),  # an event class the cache does not know
    ],
)
def test_changes_the_cache_cannot_place_mean_a_full_read(change: Change) -> None:
    assert classify([Change(0, "/b", "StateChanged:focused"), change], INDEX) is None


def _signal(sender: str, path: str, member: str, detail: str) -> Message:
    return Message(
        message_type=MessageType.SIGNAL,
        sender=sender,
        path=path,
        interface="org.a11y.atspi.Event.Object",
        member=member,
        signature="siiva{sv}",
        body=[detail, 0, 0, ("i", 0), {}],
    )


async def test_the_watcher_numbers_changes_per_sender_and_says_when_it_lost_some() -> None:
    # a real bus object, never connected: only the watcher's bookkeeping is under test
    watcher = EventWatcher(MessageBus(bus_address="unix:path=/nonexistent"))
    on_message = watcher._on_message
    on_message(_signal(":1.5", "/a", "PropertyChange", "accessible-name"))
    on_message(_signal(":1.6", "/x", "StateChanged", "focused"))
    on_message(_signal(":1.5", "/b", "ChildrenChanged", "add"))
    assert watcher.seq(":1.5") == 2 and watcher.seq(":1.6") == 1
    assert watcher.changes_since(":1.5", 0) == [
        Change(1, "/a", "PropertyChange:accessible-name"),
        Change(2, "/b", "ChildrenChanged:add"),
    ]
    assert watcher.changes_since(":1.5", 2) == []
    for _ in range(CHANGE_LOG):
        on_message(_signal(":1.5", "/a", "TextChanged", "insert"))
    assert watcher.changes_since(":1.5", 1) is None  # change 2 is no longer kept
    assert len(watcher.changes_since(":1.5", 2) or []) == CHANGE_LOG


async def test_an_app_that_leaves_the_bus_leaves_nothing_behind() -> None:
    """A long-lived host sees many apps come and go: their event records go with them."""
    watcher = EventWatcher(MessageBus(bus_address="unix:path=/nonexistent"))
    watcher._on_message(_signal(":1.5", "/a", "PropertyChange", "accessible-name"))
    watcher._on_message(_signal(":1.6", "/x", "StateChanged", "focused"))
    assert watcher.senders == 2

    def owner_changed(name: str, old: str, new: str) -> Message:
        return Message(
            message_type=MessageType.SIGNAL,
            sender="org.freedesktop.DBus",
            path="/org/freedesktop/DBus",
            interface="org.freedesktop.DBus",
            member="NameOwnerChanged",
            signature="sss",
            body=[name, old, new],
        )

    watcher._on_message(owner_changed("org.a11y.atspi.Registry", "", ":1.2"))  # a name comes
    watcher._on_message(owner_changed(":1.5", ":1.5", ""))
    assert watcher.senders == 1
    assert watcher.seq(":1.5") == 0 and watcher.changes_since(":1.5", 0) == []
    assert watcher.seq(":1.6") == 1


async def test_records_of_a_real_app_go_when_it_quits(desktop: DesktopState) -> None:
    async with await AtspiClient.connect() as client:
        await client.events_ready()
        watcher = client._events._watcher
        before = watcher.senders
        app = dapps.launch(["zenity", "--entry", "--title=Leaving soon", "--text=x"])
        try:
            frame = await frame_titled(client, app.pid, "Leaving soon")
            await client.snapshot(frame.ref)
            deadline = time.monotonic() + 10
            while watcher.seq(frame.ref.bus_name) == 0:  # its first events (focus, showing)
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)
            assert watcher.senders > before
        finally:
            app.stop()
        deadline = time.monotonic() + 10
        while watcher.seq(frame.ref.bus_name):
            assert time.monotonic() < deadline, "the app's records stayed"
            await asyncio.sleep(0.05)


# ------------------------------------------------------------------ a GTK 3 window


@pytest.fixture
async def clients(desktop: DesktopState) -> AsyncIterator[tuple[AtspiClient, AtspiClient]]:
    """A client with the cache (as the host has it) and one without (full reads)."""
    cached = await AtspiClient.connect()
    full = await AtspiClient.connect()
    full.tree_cache.enabled = False
    await cached.events_ready()
    yield cached, full
    await cached.close()
    await full.close()


@needs_gtk3
async def test_unchanged_window_is_a_hit_and_a_changed_label_a_patch(
    clients: tuple[AtspiClient, AtspiClient],
) -> None:
    cached, full = clients
    window = await start_gtk()  # started after the client registered: its events are heard
    try:
        frame = await frame_titled(full, window.proc.pid, "Mutating GTK")
        first = await cached.snapshot(frame.ref)
        assert first.cache_state == "full" and first.cache_note is None
        again = await cached.snapshot(frame.ref)
        assert again.cache_state == "hit"
        assert (again.text, again.tree_version) == (first.text, first.tree_version)
        assert again.elements.keys() == first.elements.keys()
        # served from the cache: the tree was not read again (how much faster that is, is
        # measured in benchmarks/, not asserted on a loaded machine)
        assert "read" in first.timings_ms and "read" not in again.timings_ms

        await window.send("label Changed text")
        await cached.settle(frame.ref.bus_name, first_ms=300)
        patched = await cached.snapshot(frame.ref)
        fresh = await full.snapshot(frame.ref)
        assert patched.cache_state == "patched", cached.tree_cache.last_full
        assert '- label "Changed text"' in patched.text
        assert (patched.text, patched.tree_version) == (fresh.text, fresh.tree_version)
        assert fresh.cache_state == "off" and fresh.cache_note is None  # the cache is off there
        assert (await cached.snapshot(frame.ref)).cache_state == "hit"

        await window.send("step 3")  # widgets added, removed, moved…: a full read
        await cached.settle(frame.ref.bus_name, first_ms=300)
        after = await cached.snapshot(frame.ref)
        assert after.text == (await full.snapshot(frame.ref)).text
        assert after.cache_state in ("patched", "full")
    finally:
        await stop(window)


@needs_gtk3
async def test_the_read_after_an_action_is_never_served_on_events_alone(
    clients: tuple[AtspiClient, AtspiClient],
) -> None:
    """GTK 3 packs a child into a box with no event at all: a hit served after an action
    that added one showed the action as having done nothing (a second "Show message" click,
    tests/mcp/test_mcp_stable_ids.py). The read that shows an action's effect is a full one,
    checked against the kept tree, and an app caught changing silently is distrusted."""
    cached, full = clients
    window = await start_gtk()
    try:
        frame = await frame_titled(full, window.proc.pid, "Mutating GTK")
        await cached.snapshot(frame.ref)
        assert (await cached.snapshot(frame.ref)).cache_state == "hit"
        for n in (1, 2):
            await window.send(f"add Silent {n}")
            after = await cached.snapshot(frame.ref, after_action=True)
            assert f'- label "Silent {n}"' in after.text, after.text
            assert after.cache_state in ("full", "off"), after.cache_state
        # the silent change was caught: the app's later reads are full ones, said as such
        later = await cached.snapshot(frame.ref)
        assert later.text == (await full.snapshot(frame.ref)).text
    finally:
        await stop(window)


@needs_gtk3
async def test_an_app_not_heard_since_registering_is_read_in_full_and_says_so(
    desktop: DesktopState,
) -> None:
    window = await start_gtk()
    try:
        async with await AtspiClient.connect() as probe:
            frame = await frame_titled(probe, window.proc.pid, "Mutating GTK")
        await asyncio.sleep(0.5)  # the app is idle now
        async with await AtspiClient.connect() as late:  # registered after the app went quiet
            await late.events_ready()
            await asyncio.sleep(0.3)
            for _ in range(2):
                snap = await late.snapshot(frame.ref)
                assert snap.cache_state == "off" and snap.cache_note == NOTE_NO_EVENTS
            await window.send("label Now heard")  # its first event since we registered
            await late.settle(frame.ref.bus_name, first_ms=300)
            heard = await late.snapshot(frame.ref)
            # nothing read while the cache was off was kept: the first trusted read is full
            assert heard.cache_state == "full" and heard.cache_note is None
            assert '- label "Now heard"' in heard.text
            assert (await late.snapshot(frame.ref)).cache_state == "hit"
    finally:
        await stop(window)


@needs_gtk3
async def test_changes_the_cache_did_not_hear_are_found_and_the_app_distrusted(
    clients: tuple[AtspiClient, AtspiClient],
) -> None:
    cached, full = clients
    cached.tree_cache.verify_every = 3  # every third cached read is a full one, compared
    window = await start_gtk()
    try:
        frame = await frame_titled(full, window.proc.pid, "Mutating GTK")
        assert (await cached.snapshot(frame.ref)).cache_state == "full"
        assert (await cached.snapshot(frame.ref)).cache_state == "hit"
        assert (await cached.snapshot(frame.ref)).cache_state == "hit"
        # the app's events stop reaching the cache (as with an app that sends none)
        watcher = cached._events._watcher
        watcher._bus.remove_message_handler(watcher._on_message)
        await window.send("label Silently changed")
        await asyncio.sleep(0.3)
        found = await cached.snapshot(frame.ref)  # the verifying full read
        assert found.cache_state == "off" and found.cache_note == NOTE_SILENT_CHANGE
        assert '- label "Silently changed"' in found.text
        later = await cached.snapshot(frame.ref)
        assert later.cache_state == "off" and later.cache_note == NOTE_SILENT_CHANGE
    finally:
        await stop(window)


@needs_gtk3
async def test_more_events_than_kept_mean_a_full_read_that_says_so(
    clients: tuple[AtspiClient, AtspiClient],
) -> None:
    cached, full = clients
    window = await start_gtk(seed=11)
    try:
        frame = await frame_titled(full, window.proc.pid, "Mutating GTK")
        await cached.snapshot(frame.ref)
        before = cached._events.seq(frame.ref.bus_name)
        for i in range(CHANGE_LOG // 2 + 1):
            await window.send(f"label burst {i}")  # two events or more each
        await cached.settle(frame.ref.bus_name, first_ms=300)
        assert cached._events.seq(frame.ref.bus_name) - before > CHANGE_LOG
        snap = await cached.snapshot(frame.ref)
        assert snap.cache_state == "full" and snap.cache_note == NOTE_OVERFLOW
        assert snap.text == (await full.snapshot(frame.ref)).text
        assert (await cached.snapshot(frame.ref)).cache_state == "hit"
    finally:
        await stop(window)


# ------------------------------------------------------------------ gnome-calculator (GTK 4)


async def test_calculator_digits_cached_reads_equal_full_ones(
    clients: tuple[AtspiClient, AtspiClient],
) -> None:
    cached, full = clients
    app = dapps.launch(["gnome-calculator"])
    try:
        frame = await frame_titled(full, app.pid, "Calculator")
        deadline = time.monotonic() + 20
        while '- button "7 7"' not in (snap := await full.snapshot(frame.ref)).text:
            assert time.monotonic() < deadline, snap.text
            await asyncio.sleep(0.2)
        digits = {
            e.name: e for e in snap.elements.values() if e.role == "button" and len(e.name) == 3
        }
        kinds: list[str] = []
        # digits change the display's text; "=" also shows the history list, of which GTK 4
        # says only BoundsChanged
        for key in ("1 1", "2 2", "3 3", "4 4", "× ×", "2 2", "= ="):
            await full.perform(digits[key], SemanticOp.invoke(), settle=True)
            read = await cached.snapshot(frame.ref)
            fresh = await full.snapshot(frame.ref)
            if read.text != fresh.text:  # an event on its way: quiet, then they must agree
                await cached.settle(frame.ref.bus_name, first_ms=300, quiet_ms=150)
                read, fresh = await cached.snapshot(frame.ref), await full.snapshot(frame.ref)
            assert read.text == fresh.text
            kinds.append(read.cache_state)
            unchanged = await cached.snapshot(frame.ref)
            assert unchanged.cache_state == "hit" and unchanged.text == fresh.text
        assert '- label "2468"' in fresh.text.replace(",", "").replace("\u2009", "")
        # a change of a GTK 4 window is read in full, never patched: GTK 4.8 adds widgets
        # with no event for them (tree_cache.py); an unchanged one is a hit (above)
        assert set(kinds) == {"full"}, kinds
    finally:
        app.stop()


# ------------------------------------------------------------------ the observation says it


@needs_gtk3
async def test_the_observation_says_how_the_cache_read_its_tree(dp_desktop: DesktopState) -> None:
    from deskpilot.host.accessibility import Accessibility
    from deskpilot.host.observer import Observer
    from deskpilot.host.x11.desktop import X11Desktop
    from deskpilot.protocol.wire import Observe, TargetSpec

    desktop = X11Desktop()
    acc = await Accessibility.connect()
    assert acc is not None
    window = await start_gtk()
    try:
        await frame_titled(acc.client, window.proc.pid, "Mutating GTK")
        observer = Observer(desktop, acc)
        request = Observe(id=1, target=TargetSpec(pid=window.proc.pid), include_screenshot=False)
        first, _ = await observer.observe(request)
        second, _ = await observer.observe(request)
        assert first.tree_read.cache == "full"
        assert second.tree_read.cache == "hit" and second.tree_read.cache_note is None
        assert second.tree_version == first.tree_version and second.tree == first.tree
    finally:
        await stop(window)
        await acc.close()
        desktop.close()


@needs_gtk3
async def test_a_cache_turned_off_by_the_setting_says_so_on_every_read(
    desktop: DesktopState, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With DESKPILOT_TREE_CACHE=0 every read is a full one and says why (the header's
    cache= line); a client whose cache a test switched off says nothing."""
    monkeypatch.setenv("DESKPILOT_TREE_CACHE", "0")
    window = await start_gtk()
    try:
        async with await AtspiClient.connect() as client:
            frame = await frame_titled(client, window.proc.pid, "Mutating GTK")
            await client.events_ready()
            for _ in range(2):
                snap = await client.snapshot(frame.ref)
                assert (snap.cache_state, snap.cache_note) == ("off", NOTE_SWITCHED_OFF)
        monkeypatch.setenv("DESKPILOT_TREE_CACHE", "on")
        async with await AtspiClient.connect() as client:
            assert client.tree_cache.enabled and client.tree_cache.disabled_note is None
    finally:
        await stop(window)
