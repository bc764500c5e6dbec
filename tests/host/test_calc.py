"""LibreOffice Calc 7.4 (GTK 3 bridge) through the real host: its sheet says it has
2,147,483,647 cells and builds an object for each one it is asked for, so it is never asked
for its children; what is on screen of it is read (docs/host-tree.md, "Big and virtual
containers"), and its cells are acted on as a person does (host/sheet_cells.py).

One Calc for the module (tests/calc_kit.py: a fixture price list in A1:D6); each test works
on cells of its own.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from host_harness import HostProcess, line_id, observe_until

from calc_kit import SHOWN, Calc, calc, soffice, write_fixture
from deskpilot.desktop import DesktopState, apps
from deskpilot.host.atspi import AtspiClient, FrameInfo, TreeSnapshot, on_screen
from deskpilot.host.atspi.bus import Conn
from deskpilot.host.atspi.collect import read_walk
from deskpilot.host.atspi.render import render
from deskpilot.host.atspi.vocab import ROLE_NUMBER

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(soffice() is None, reason="LibreOffice is not installed"),
]

ASKING_CHILDREN = frozenset({"GetChildren", "GetChildAtIndex", "GetMatches", "GetTree"})


@pytest.fixture(scope="module")
def sheet(desktop: DesktopState, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Calc]:
    where = tmp_path_factory.mktemp("calc")
    with calc(write_fixture(where / "prices.ods"), where / "profile") as app:
        yield app


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, str]]]:
    """Every (object path, member) a client in this process calls from here on."""
    made: list[tuple[str, str]] = []
    call, batch = Conn.call, Conn.batch

    async def spy_call(self: Conn, dest: str, path: str, iface: str, member: str, *a: Any) -> Any:
        made.append((path, member))
        return await call(self, dest, path, iface, member, *a)

    def spy_batch(self: Conn, many: Sequence[Any]) -> Any:
        made.extend((c[1], c[3]) for c in many)
        return batch(self, many)

    monkeypatch.setattr(Conn, "call", spy_call)
    monkeypatch.setattr(Conn, "batch", spy_batch)
    yield made


async def _frame(client: AtspiClient, pid: int) -> FrameInfo:
    deadline = asyncio.get_running_loop().time() + 60
    while True:
        frames = [f for f in await client.frames(pid=pid) if f.title.startswith("prices.ods")]
        if frames:
            return frames[0]
        assert asyncio.get_running_loop().time() < deadline, "no Calc window"
        await asyncio.sleep(0.2)


async def _snapshot_with_cells(client: AtspiClient, frame: FrameInfo) -> TreeSnapshot:
    """The window's tree once Calc shows the sheet's cells (it lays its window out first)."""
    deadline = asyncio.get_running_loop().time() + 60
    while True:
        snap = await client.snapshot(frame.ref)
        if 'cell "A1" = "Item"' in snap.text:
            return snap
        assert asyncio.get_running_loop().time() < deadline, snap.text
        await asyncio.sleep(0.2)


def _rss_kb(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0])


async def test_the_sheet_is_read_by_what_is_on_screen_and_never_asked_for_its_cells(
    sheet: Calc, calls: list[tuple[str, str]]
) -> None:
    async with await AtspiClient.connect() as client:
        frame = await _frame(client, sheet.pid)
        before = _rss_kb(sheet.pid)
        snap = await _snapshot_with_cells(client, frame)
        for _ in range(4):
            snap = await client.snapshot(frame.ref)
        table = next(e for e in snap.elements.values() if e.role == "table")
        assert "manages_descendants" in table.states
        # the table was never asked for its children, in any read
        asked = {member for path, member in calls if path == table.path}
        assert not asked & ASKING_CHILDREN, asked
        # nor asked for it through an ancestor: GetMatches descends into every child
        assert not {m for _p, m in calls} & {"GetMatches", "GetTree"}, calls
        # and soffice built no object per cell: its memory stays where it was (asking for
        # the children took it to 4 GB within a minute)
        assert _rss_kb(sheet.pid) - before < 150_000, (before, _rss_kb(sheet.pid))
        # the rest of the window is there with it
        for line in ('menu "File"', 'toolbar "Standard"', 'button "Save"', 'toolbar "Formatting"'):
            assert f"- {line} [" in snap.text, snap.text
        for address, value in SHOWN.items():
            assert f'cell "{address}" = "{value}"' in snap.text, (address, snap.text)
        assert snap.partial is None and snap.strategy == "walk"
        cells = [e for e in snap.elements.values() if e.role == "cell"]
        assert len(cells) < 40, len(cells)
        # a cell of the sheet is named by its table and address (a new object each time)
        d2 = next(e for e in cells if e.name == "D2")
        assert d2.identity == (table.bus_name, table.path, "D2")


async def test_a_slow_sheet_never_costs_the_rest_of_the_window(sheet: Calc) -> None:
    """The sheet's cells are read after the rest of the window, under the read's deadline:
    one not read by then leaves the sheet marked unread, and the rest stands."""
    async with await AtspiClient.connect() as client:
        frame = await _frame(client, sheet.pid)
        await _snapshot_with_cells(client, frame)
        conn = await client._conn_for(frame.ref.bus_name)
        nodes = await read_walk(conn, frame.ref.bus_name, frame.ref.path, 16_000, 500)
        loop = asyncio.get_running_loop()
        nodes = await on_screen.read_on_screen(conn, nodes, deadline=loop.time())
        table = next(n for n in nodes if n.role == ROLE_NUMBER["table"])
        assert table.unread == 1 and not table.children
        assert table.screen == "what is on screen of it was not read by the deadline"
        text = render(nodes).text
        assert "- … [unread: 1 child — deadline]" in text, text
        assert 'menu "File"' in text and 'toolbar "Standard"' in text and 'button "Save"' in text


async def test_a_moved_cursor_is_read_as_a_patch_of_the_sheet(sheet: Calc) -> None:
    with HostProcess() as host:
        target = {"pid": sheet.pid}
        obs = observe_until(host, target, r'cell "A1" = "Item"', "move")
        cell = line_id(obs["tree"], r'cell "C6"')
        result = _act(host, obs, {"kind": "click", "elementId": cell}, "move")
        assert "current cell C6" in result["observation"]["tree"], result["observation"]["tree"]
        # the cursor moves by a key: Calc says so of the sheet, and the next read is a patch
        # of it that shows the new current cell (or a full read when more changed)
        moved = _act(host, result["observation"], {"kind": "press_key", "keys": ["Up"]}, "move")
        after = moved["observation"]
        assert "current cell C5" in after["tree"], after["tree"]
        again = host.call({"type": "observe", "target": target, "sessionId": "move"})
        assert again["treeRead"]["cache"] == "hit", again["treeRead"]
        assert again["tree"] == after["tree"]
        # a selection made with the keys is said with the current cell
        chosen = _act(host, again, {"kind": "press_key", "keys": ["shift+Down"]}, "move")
        summary = re.search(r"- … on screen: .*$", chosen["observation"]["tree"], re.M)
        assert summary is not None and "selected C5:C6 (2 cells on screen)" in summary.group(0)
        _act(host, chosen["observation"], {"kind": "press_key", "keys": ["Escape"]}, "move")


def _act(host: HostProcess, obs: dict[str, Any], action: dict[str, Any], session: str) -> Any:
    response = host.call(
        {
            "type": "execute_action",
            "sessionId": session,
            "frameId": obs["frameId"],
            "treeVersion": obs["treeVersion"],
            "action": action,
            "observeAfter": True,
        }
    )
    assert response["type"] == "action_result", response
    return response


#: the Name Box: the Formula Tool Bar's first text field (its text is the current cell's
#: address, or "Manage Names..." while Calc shows none)
_NAME_BOX = re.compile(r'- toolbar "Formula Tool Bar" \[\d+\]\n\s*- textField[^\n]*\[(\d+)\]')


def _cell_line(tree: str, address: str) -> str:
    found = re.search(rf'^\s*- cell "{address}".*$', tree, re.M)
    assert found is not None, (address, tree)
    return found.group(0)


async def test_typing_into_a_cell_is_read_back(sheet: Calc) -> None:
    with HostProcess() as host:
        target = {"pid": sheet.pid}
        obs = observe_until(host, target, r'cell "A1" = "Item"', "type")
        # a click by id makes the cell the current one
        result = _act(
            host, obs, {"kind": "click", "elementId": line_id(obs["tree"], 'cell "E2"')}, "type"
        )
        assert "current cell E2" in result["observation"]["tree"]
        # entered with Enter: confirmed, and the next state shows the value it computes
        typed = _act(host, result["observation"], {"kind": "type_text", "text": "=B2*2\n"}, "type")
        assert (typed.get("effect"), typed.get("effectNote")) == ("confirmed", None), typed
        tree = typed["observation"]["tree"]
        e2 = _cell_line(tree, "E2")
        assert '= "6"' in e2 and '[formula: "=B2*2"]' in e2, e2
        assert "current cell E3" in tree
        # not entered yet (no Enter): the text is in the cell's editor, not in the cell
        open_ = _act(host, typed["observation"], {"kind": "type_text", "text": "7"}, "type")
        assert open_.get("effect") == "unconfirmed", open_
        assert "editor of cell E3" in (open_.get("effectNote") or ""), open_
        entered = _act(
            host, open_["observation"], {"kind": "press_key", "keys": ["Return"]}, "type"
        )
        assert '= "7"' in _cell_line(entered["observation"]["tree"], "E3")
        # Calc completes an entry from the column (A holds Pear and Plum): what the cell shows
        # is not what was typed, and the result says so instead of confirming it
        click = line_id(entered["observation"]["tree"], 'cell "A7"')
        at_a7 = _act(host, entered["observation"], {"kind": "click", "elementId": click}, "type")
        completed = _act(host, at_a7["observation"], {"kind": "type_text", "text": "Pe\n"}, "type")
        assert completed.get("effect") == "unconfirmed", completed
        assert "shows something other than what was typed" in completed["effectNote"]
        assert "Pe" not in completed["effectNote"]  # never the typed text
        # set_value on a cell types the value over what it held and enters it
        e4 = line_id(completed["observation"]["tree"], 'cell "E4"')
        value = {"kind": "set_value", "elementId": e4, "value": 42}
        set_ = _act(host, completed["observation"], value, "type")
        assert set_.get("effect") == "confirmed", set_
        assert '= "42"' in _cell_line(set_["observation"]["tree"], "E4")


def test_the_name_box_takes_an_address_and_its_enter(sheet: Calc) -> None:
    """Text ending in Enter into the Name Box, started while another window has the
    keyboard: the address goes in, then Enter goes to the Name Box itself (the field is
    given the focus before the keys: a trial's Enter went to another window) and Calc moves
    there."""
    other = apps.launch(["xterm", "-geometry", "20x4+900+650"])
    try:
        with HostProcess() as host:
            term = observe_until(host, {"pid": other.pid}, r"^", "term")  # no tree: any
            _act(host, term, {"kind": "focus_window"}, "term")
            obs = observe_until(host, {"pid": sheet.pid}, r'cell "A1" = "Item"', "name")
            box = int(_NAME_BOX.findall(obs["tree"])[0])
            empty = _act(host, obs, {"kind": "set_value", "elementId": box, "value": ""}, "name")
            typed = {"kind": "type_text", "elementId": box, "text": "F9\n"}
            went = _act(host, empty["observation"], typed, "name")
            assert "current cell F9" in went["observation"]["tree"], went["observation"]["tree"]
    finally:
        other.stop()


def test_a_click_on_a_covered_cell_brings_calc_up_and_makes_it_current(
    sheet: Calc, tmp_path: Path
) -> None:
    """Another window over the sheet, and in front: a person brings Calc's window up and
    clicks the cell; the result then shows the cell current and alone, never only "call
    returned". Row 1 too: a click aimed by where Calc said the cell was, right after it was
    raised, hit the column's header and selected the whole column (a trial)."""
    cover = apps.launch(["xterm", "-geometry", "100x40+0+0"])
    try:
        with HostProcess() as host:
            for address in ("B3", "D1"):
                term = observe_until(host, {"pid": cover.pid}, r"^", "term")  # no tree
                _act(host, term, {"kind": "focus_window"}, "term")  # raised over Calc
                deadline = time.monotonic() + 20
                while True:  # until the xterm lies over the sheet
                    obs = observe_until(host, {"pid": sheet.pid}, r'cell "A1" = "Item"', "cover")
                    if obs.get("coveredRegions"):
                        break
                    assert time.monotonic() < deadline, "the xterm never covered Calc"
                    time.sleep(0.1)
                cell = line_id(obs["tree"], f'cell "{address}"')
                result = _act(host, obs, {"kind": "click", "elementId": cell}, "cover")
                summary = next(
                    line
                    for line in result["observation"]["tree"].splitlines()
                    if "on screen:" in line
                )
                assert f"current cell {address}" in summary, (result["detail"], summary)
                assert "selected" not in summary, (result["detail"], summary)
                # a person's click after bringing the window up (not a focus request Calc may
                # ignore while another window is active)
                assert result["detail"].startswith("xtest left x1 at the cell"), result["detail"]
    finally:
        cover.stop()


async def test_a_cell_element_is_found_again_by_its_address(sheet: Calc) -> None:
    """Calc drops a cell's object 15 s after it gave it out: an element from an older state
    is found again by its table and address."""
    async with await AtspiClient.connect() as client:
        frame = await _frame(client, sheet.pid)
        snap = await _snapshot_with_cells(client, frame)
        b3 = next(e for e in snap.elements.values() if e.role == "cell" and e.name == "B3")
        gone = dataclasses.replace(
            b3, ref=dataclasses.replace(b3.ref, path="/org/a11y/atspi/accessible/9999999")
        )
        assert not await client.still_valid(gone)
        found = await client.live(gone)
        assert found is not None and found.path != gone.path and found.identity == b3.identity
        now = await client.cell(found)
        assert now is not None and (now.address, now.text) == ("B3", "2")


def test_a_save_by_the_toolbar_is_confirmed_by_the_file(sheet: Calc) -> None:
    doc = Path(str(sheet.app.proc.args[-1]))
    with HostProcess() as host:
        target = {"pid": sheet.pid}
        obs = observe_until(host, target, r'cell "A1" = "Item"', "save")
        at = _act(
            host, obs, {"kind": "click", "elementId": line_id(obs["tree"], 'cell "E5"')}, "save"
        )
        typed = _act(host, at["observation"], {"kind": "type_text", "text": "kept\n"}, "save")
        assert typed.get("effect") == "confirmed", typed
        before = doc.stat().st_mtime_ns
        save = line_id(typed["observation"]["tree"], r'- button "Save" \[')
        saved = _act(host, typed["observation"], {"kind": "click", "elementId": save}, "save")
        assert (saved.get("effect"), saved.get("effectNote")) == ("confirmed", None), saved
        assert doc.stat().st_mtime_ns != before


def test_a_number_deleted_in_place_and_a_renamed_sheet_are_shown_as_they_are(sheet: Calc) -> None:
    """Two things Calc 7.4 leaves stale in its tree, shown as a person sees them.

    * Delete on the current cell (the cursor stays): Calc's object for that cell keeps its
      old text and sends no event; the state must not show the old number as the cell's
      content, but the number it holds now (atspi/stale_cells.py).
    * A sheet renamed by Sheet ▸ Rename Sheet: the sheet's table keeps its first name; the
      state names it after its tab (atspi/sheet_names.py).

    Last in the module: it changes the sheet's name and C5 (and so D5 and D6)."""
    with HostProcess() as host:
        target = {"pid": sheet.pid}
        obs = observe_until(host, target, r'cell "C5" = "1.25"', "stale")
        c5 = line_id(obs["tree"], 'cell "C5"')
        at = _act(host, obs, {"kind": "click", "elementId": c5}, "stale")
        assert "current cell C5" in at["observation"]["tree"]
        gone = _act(host, at["observation"], {"kind": "press_key", "keys": ["Delete"]}, "stale")
        tree = gone["observation"]["tree"]
        assert '= "0"' in _cell_line(tree, "D5"), tree  # the formula beside it: computed anew
        line = _cell_line(tree, "C5")
        assert "1.25" not in line and "[focused]" in line, line
        assert (
            "[text out of date (the app did not update it): the cell is now empty, 0 or a text"
            in line
        ), line
        # rename the sheet through its menu and dialog, as a person does
        tree = gone["observation"]["tree"]
        assert re.search(r'- table "Sheet Prices" ', tree), tree
        menu = _act(
            host,
            gone["observation"],
            {"kind": "click", "elementId": line_id(tree, r'- menu "Sheet" \[')},
            "stale",
        )
        item = line_id(menu["observation"]["tree"], r'menuItem "Rename Sheet\.\.\."')
        _act(host, menu["observation"], {"kind": "click", "elementId": item}, "stale")
        dialog = observe_until(host, target, r'- textField .*= "Prices"', "stale")
        field = line_id(dialog["tree"], r'- textField .*= "Prices"')
        named = _act(
            host,
            dialog,
            {"kind": "set_value", "elementId": field, "value": "Q1"},
            "stale",
        )
        _act(host, named["observation"], {"kind": "press_key", "keys": ["Return"]}, "stale")
        after = observe_until(host, target, r'- tab "Q1" \[selected\]', "stale")["tree"]
        assert re.search(r'- table "Sheet Q1" ', after), after
        assert "Prices" not in after.split("- tabList")[0].split("- document")[1], after
