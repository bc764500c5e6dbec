"""The AT-SPI client against real GTK apps on the private desktop (calculator, zenity)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest

from deskpilot.desktop import DesktopState
from deskpilot.desktop import apps as dapps
from deskpilot.host.atspi import (
    AtspiClient,
    ElementRef,
    FrameInfo,
    OpKind,
    SemanticOp,
    TreeSnapshot,
    collect,
    render,
)
from deskpilot.host.atspi.bus import I_ACCESSIBLE, AtspiCallError
from deskpilot.host.atspi.vocab import State, bit, state_mask
from deskpilot.protocol.errors import DeskpilotError, ErrorCode

pytestmark = pytest.mark.desktop


async def frame_of(client: AtspiClient, pid: int, timeout: float = 20.0) -> FrameInfo:
    deadline = time.monotonic() + timeout
    while True:
        frames = [f for f in await client.frames(pid=pid) if {"visible", "showing"} & f.states]
        if frames:
            return frames[0]
        if time.monotonic() > deadline:
            raise AssertionError(f"no frame for pid {pid}")
        await asyncio.sleep(0.1)


def find(snap: TreeSnapshot, role: str | None = None, name: str | None = None) -> ElementRef:
    hits = [
        e
        for e in snap.elements.values()
        if (role is None or e.role == role) and (name is None or e.name == name)
    ]
    assert hits, f"no {role} {name!r} in:\n{snap.text}"
    return hits[0]


def line_of(snap: TreeSnapshot, element: ElementRef) -> str:
    return snap.text.splitlines()[element.id - 1]


@pytest.fixture(scope="module")
def calculator(desktop: DesktopState) -> Iterator[dapps.App]:
    # a gnome-calculator start occasionally stalls on a loaded machine: one fresh retry
    for attempt in range(2):
        app = dapps.launch(["gnome-calculator"])
        try:
            dapps.wait_accessible(pid=app.pid, timeout=40)
            break
        except TimeoutError:
            app.stop()
            if attempt:
                raise
    yield app
    app.stop()


async def _zenity(*args: str) -> dapps.App:
    app = dapps.launch(["zenity", *args], capture_stdout=True)
    # wait_accessible runs its own event loop: keep it off this one
    await asyncio.to_thread(dapps.wait_accessible, pid=app.pid, timeout=60)
    return app


async def test_calculator_tree_has_digits_and_display(calculator: dapps.App) -> None:
    async with await AtspiClient.connect() as client:
        apps = {a.pid: a for a in await client.applications()}
        assert apps[calculator.pid].name == "gnome-calculator"
        frame = await frame_of(client, calculator.pid)
        assert frame.role == "window" and frame.title == "Calculator"
        snap = await client.snapshot(frame.ref)
        assert snap.text.splitlines()[0] == '- window "Calculator" [1]'
        for digit in "0123456789":
            button = find(snap, "button", f"{digit} {digit}")
            assert "Click" in button.actions and "Action" in button.interfaces
            assert line_of(snap, button).endswith(f"[{button.id}]")
        fields = [e for e in snap.elements.values() if e.role == "textField"]
        assert fields, snap.text
        assert snap.pid == calculator.pid and snap.element_count == len(snap.elements)
        assert snap.strategy in ("cache", "collection", "walk")


async def test_calculator_twelve_times_seven_reads_84(calculator: dapps.App) -> None:
    async with await AtspiClient.connect() as client:
        frame = await frame_of(client, calculator.pid)
        snap = await client.snapshot(frame.ref)
        await client.perform(find(snap, "button", "Clear Display [Escape]"), SemanticOp.invoke())
        for label in ("1 1", "2 2", "× ×", "7 7", "= ="):
            result = await client.perform(find(snap, "button", label), SemanticOp.invoke())
            assert result.detail == "action 'Click'"
            assert result.settled is True
        after = await client.snapshot(frame.ref)
        values = [
            line for line in after.text.splitlines() if "textField" in line and '= "84"' in line
        ]
        assert values, after.text


async def test_tree_version_stable_until_the_ui_changes(calculator: dapps.App) -> None:
    async with await AtspiClient.connect() as client:
        frame = await frame_of(client, calculator.pid)
        first = await client.snapshot(frame.ref)
        second = await client.snapshot(frame.ref)
        assert first.tree_version == second.tree_version
        assert first.text == second.text
        await client.perform(find(second, "button", "Clear Display [Escape]"), SemanticOp.invoke())
        await client.perform(find(second, "button", "5 5"), SemanticOp.invoke())
        third = await client.snapshot(frame.ref)
        assert '= "5"' in third.text
        assert third.tree_version != second.tree_version


async def test_small_budget_and_cap_truncate_with_a_marker(calculator: dapps.App) -> None:
    async with await AtspiClient.connect() as client:
        frame = await frame_of(client, calculator.pid)
        full = await client.snapshot(frame.ref)
        small = await client.snapshot(frame.ref, text_budget=400)
        assert small.truncation.text_budget_hit and small.truncation.omitted_elements > 0
        assert small.text.splitlines()[-1] == (
            f"[truncated: {small.truncation.omitted_elements:,} elements omitted]"
        )
        assert len(small.text) <= 400
        assert small.element_count + small.truncation.omitted_elements == full.element_count
        capped = await client.snapshot(frame.ref, max_elements=5)
        assert capped.element_count == 5 and capped.truncation.element_cap_hit
        assert sorted(capped.elements) == [1, 2, 3, 4, 5]
        assert capped.text.endswith(f"[truncated: {full.element_count - 5:,} elements omitted]")


async def test_zenity_entry_set_text_and_ok(desktop: DesktopState) -> None:
    app = await _zenity("--entry", "--text", "Your name")
    try:
        async with await AtspiClient.connect() as client:
            frame = await frame_of(client, app.pid)
            snap = await client.snapshot(frame.ref)
            assert frame.role == "dialog"
            entry = find(snap, "textField")
            assert "EditableText" in entry.interfaces
            r = await client.perform(entry, SemanticOp(OpKind.SET_TEXT, text="Lovelace"))
            assert r.detail == "EditableText.SetTextContents"
            # inserted text lands where typing would: the caret of a focused field, else the end
            conn = await client._conn_for(entry.bus_name)
            caret = await conn.get_property(
                entry.bus_name, entry.path, "org.a11y.atspi.Text", "CaretOffset"
            )
            r = await client.perform(entry, SemanticOp(OpKind.INSERT_TEXT, text="Ada "))
            assert r.detail == "EditableText.InsertText"
            state = await conn.call(entry.bus_name, entry.path, I_ACCESSIBLE, "GetState")
            focused = bool(state_mask(state[0]) & bit(State.FOCUSED))
            # focus follows the pointer without a window manager: it may or may not be here
            at = caret if focused else len("Lovelace")
            expected = "Lovelace"[:at] + "Ada " + "Lovelace"[at:]
            r = await client.perform(entry, SemanticOp(OpKind.SELECT_TEXT, start=0, end=3))
            assert r.detail == "Text selection"
            sel = await conn.call(
                entry.bus_name, entry.path, "org.a11y.atspi.Text", "GetSelection", "i", (0,)
            )
            assert sel == [0, 3]
            again = await client.snapshot(frame.ref)
            assert f'= "{expected}"' in again.text
            await client.perform(find(again, "button", "OK"), SemanticOp.invoke())
        out, _ = app.proc.communicate(timeout=10)
        assert out.decode().rstrip("\n") == expected
    finally:
        app.stop()


async def test_password_value_blanked_and_region_reported(desktop: DesktopState) -> None:
    app = await _zenity("--password")
    try:
        async with await AtspiClient.connect() as client:
            frame = await frame_of(client, app.pid)
            snap = await client.snapshot(frame.ref, origin=(0, 0))
            field = find(snap, "passwordField")
            await client.perform(field, SemanticOp(OpKind.SET_TEXT, text="s3cret-pw"))
            snap = await client.snapshot(
                frame.ref, origin=(frame.extents.x, frame.extents.y) if frame.extents else None
            )
            field = find(snap, "passwordField")
            assert field.secure
            assert "s3cret-pw" not in snap.text
            assert "[secure]" in line_of(snap, field)
            assert "=" not in line_of(snap, field)
            assert len(snap.sensitive_regions) == 1
            region = snap.sensitive_regions[0]
            assert region.width > 0 and region.height > 0
            bounds = await client.extents(field)
            assert bounds is not None and frame.extents is not None
            assert (region.x, region.y) == (bounds.x - frame.extents.x, bounds.y - frame.extents.y)
            with pytest.raises(DeskpilotError) as err:
                await client.perform(field, SemanticOp(OpKind.SET_VALUE, value="x"))
            assert err.value.code is ErrorCode.UNSUPPORTED_ACTION
    finally:
        app.stop()


async def test_list_row_selected_through_the_table(desktop: DesktopState) -> None:
    app = await _zenity(
        "--list", "--column", "Name", "--column", "Size", "a", "1", "b", "2", "c", "3"
    )
    try:
        async with await AtspiClient.connect() as client:
            frame = await frame_of(client, app.pid)
            snap = await client.snapshot(frame.ref)
            assert find(snap, "table") is not None
            cell = find(snap, "cell", "b")
            r = await client.perform(cell, SemanticOp(OpKind.SELECT_CHILD))
            assert r.detail in ("Table.AddRowSelection", "Selection.SelectChild")
            after = await client.snapshot(frame.ref)
            assert "[selected]" in line_of(after, find(after, "cell", "b"))
            await client.perform(find(after, "button", "OK"), SemanticOp.invoke())
        out, _ = app.proc.communicate(timeout=10)
        assert out.decode().strip() == "b"
    finally:
        app.stop()


async def test_unsupported_ops_raise_typed_errors(desktop: DesktopState) -> None:
    app = await _zenity("--question", "--text", "Proceed?")
    try:
        async with await AtspiClient.connect() as client:
            frame = await frame_of(client, app.pid)
            snap = await client.snapshot(frame.ref)
            button = find(snap, "button")
            for op in (
                SemanticOp(OpKind.SET_TEXT, text="x"),
                SemanticOp.invoke("no such action"),
                SemanticOp(OpKind.SECONDARY),
            ):
                with pytest.raises(DeskpilotError) as err:
                    await client.perform(button, op, settle=False)
                assert err.value.code is ErrorCode.UNSUPPORTED_ACTION
                assert "x" not in err.value.details.get("reason", "")[:0]  # never the text
    finally:
        app.stop()


async def test_stale_after_the_app_exits(desktop: DesktopState) -> None:
    app = await _zenity("--info", "--text", "Bye")
    try:
        async with await AtspiClient.connect() as client:
            frame = await frame_of(client, app.pid)
            snap = await client.snapshot(frame.ref)
            button = find(snap, "button")
            assert await client.still_valid(button)
            app.proc.send_signal(signal.SIGTERM)
            app.proc.wait(timeout=10)
            assert not await client.still_valid(button)
            with pytest.raises(DeskpilotError) as err:
                await client.perform(button, SemanticOp.invoke(), settle=False)
            assert err.value.code is ErrorCode.STALE_TREE
            with pytest.raises(DeskpilotError) as err2:
                await client.snapshot(frame.ref)
            assert err2.value.code is ErrorCode.TARGET_NOT_FOUND
    finally:
        app.stop()
        _ = subprocess  # the app is a real subprocess; stop() is idempotent


async def test_cache_collection_and_walk_render_the_same(desktop: DesktopState) -> None:
    app = await _zenity(
        "--forms",
        "--text",
        "Profile",
        "--add-entry",
        "Name",
        "--add-password",
        "PIN",
        "--add-combo",
        "Color",
        "--combo-values",
        "red|green",
    )
    try:
        async with await AtspiClient.connect() as client:
            frame = await frame_of(client, app.pid)
            await client.snapshot(frame.ref)
            conn = await client._conn_for(frame.ref.bus_name)
            bus, path = frame.ref.bus_name, frame.ref.path
            items = await collect.read_cache(conn, bus)
            assert items is not None
            cached, incomplete = collect.from_cache(items, path, 10_000)
            ways = {
                "cache": cached if not incomplete else [],
                "collection": await collect.read_collection(conn, bus, path, 10_000),
                "walk": await collect.read_walk(conn, bus, path, 10_000, 500),
            }
            texts = {}
            for how, nodes in ways.items():
                assert nodes, how
                todo = list(range(1, len(nodes)))
                await collect.enrich(conn, nodes, todo, blank_names=False)
                texts[how] = render(nodes).text
            assert texts["collection"] == texts["walk"]
            if ways["cache"]:
                assert texts["cache"] == texts["walk"]
            assert '"Name"' in texts["walk"] and "passwordField" in texts["walk"]
    finally:
        app.stop()


async def test_calls_on_a_closed_connection_fail_typed_without_recursion(
    desktop: DesktopState,
) -> None:
    client = await AtspiClient.connect()
    conn = client._a11y
    conn.bus.disconnect()
    await asyncio.sleep(0.05)
    calls = [(":1.1", "/x", "org.a11y.atspi.Accessible", "GetRole", "", ())] * 5000
    results = await conn.batch(calls)
    assert len(results) == 5000
    assert all(isinstance(r, AtspiCallError) and r.gone for r in results)
    await client.close()
