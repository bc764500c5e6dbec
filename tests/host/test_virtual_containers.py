"""Big and virtual containers (docs/host-tree.md, "Big and virtual containers"): a node that
manages its descendants or reports more than ``MAX_CHILDREN_ASKED`` children is never asked
for them in any read; what is on screen of it is read instead.

The rules on synthetic nodes first (which node is virtual, the cache and Collection reads
that leave its children out, the render's summary line, the cells listed, the tree cache
reading such a container as a whole), then a real GTK 3 tree view (``zenity --list``, which
manages its descendants) with a few rows and with thousands: every D-Bus call the client
makes is recorded, and none asks the tree view for its children.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from gtk_kit import SYSTEM_PYTHON, needs_gtk3
from test_atspi_gtk import _zenity, frame_of

from deskpilot.desktop import DesktopState
from deskpilot.desktop import apps as dapps
from deskpilot.host.atspi import AtspiClient, collect, on_screen
from deskpilot.host.atspi.bus import Conn
from deskpilot.host.atspi.collect import RawNode
from deskpilot.host.atspi.render import render
from deskpilot.host.atspi.tree_cache import Dirt, lift_virtual
from deskpilot.host.atspi.vocab import ROLE_NUMBER, State, bit

R_TABLE, R_CELL, R_PANEL = ROLE_NUMBER["table"], ROLE_NUMBER["table cell"], ROLE_NUMBER["panel"]
SHOWN = bit(State.VISIBLE) | bit(State.SHOWING)
MANAGES = bit(State.MANAGES_DESCENDANTS)
#: the calls that ask a node for its children (or walk below it)
ASKING_CHILDREN = frozenset({"GetChildren", "GetChildAtIndex", "GetMatches", "GetTree"})
ICON_LIST_APP = Path(__file__).with_name("icon_list_gtk_app.py")


def _tree(*specs: tuple[int, int, int, int]) -> list[RawNode]:
    """Preorder nodes from (parent, role, states, child count)."""
    nodes: list[RawNode] = []
    for i, (parent, role, states, count) in enumerate(specs):
        n = RawNode("b", f"/{i}", parent=parent, role=role, states=states, child_count=count)
        n.depth = 0 if parent < 0 else nodes[parent].depth + 1
        nodes.append(n)
        if parent >= 0:
            nodes[parent].children.append(i)
    return nodes


# ---------------------------------------------------------------------------- the rules


def test_which_containers_are_virtual() -> None:
    def node(states: int, count: int) -> RawNode:
        return RawNode("b", "/", states=states, child_count=count)

    assert collect.virtual(node(SHOWN | MANAGES, 3))  # a tree view, even with three rows
    assert collect.virtual(node(SHOWN, 2_147_483_647))  # Calc's sheet
    assert collect.virtual(node(SHOWN, collect.MAX_CHILDREN_ASKED + 1))
    assert not collect.virtual(node(SHOWN, -1))  # atk-bridge's cache: children not cached
    assert not collect.virtual(node(SHOWN, collect.MAX_CHILDREN_ASKED))
    assert not collect.virtual(node(SHOWN, 0))


def _item(path: str, parent: str, index: int, count: int, states: int) -> list[Any]:
    # (ref, app, parent, index, child count, interfaces, name, role, description, states)
    words = [states & 0xFFFFFFFF, states >> 32]
    return [("b", path), ("b", "/app"), ("b", parent), index, count, [], "", R_PANEL, "", words]


def test_the_cache_takes_a_virtual_container_without_children_and_not_as_a_miss() -> None:
    items = [
        _item("/w", "/app", 0, 2, SHOWN),
        _item("/t", "/w", 0, 2_147_483_647, SHOWN | MANAGES),
        _item("/c", "/t", 0, 0, SHOWN),  # a cell the cache happens to hold
        _item("/p", "/w", 1, 0, SHOWN),
    ]
    nodes, incomplete = collect.from_cache(items, "/w", 100)
    assert [n.path for n in nodes] == ["/w", "/t", "/p"]
    assert incomplete == []


def test_a_collection_read_keeps_nothing_below_a_virtual_container() -> None:
    nodes = _tree(
        (-1, R_PANEL, SHOWN, 2), (0, R_TABLE, SHOWN | MANAGES, 9), (1, R_CELL, SHOWN, 0),
        (0, R_PANEL, SHOWN, 0),
    )  # fmt: skip
    out = collect.without_virtual_children(nodes)
    assert [n.path for n in out] == ["/0", "/1", "/3"]
    assert [n.children for n in out] == [[1, 2], [], []]


def test_the_summary_line_stands_first_under_its_container_and_is_no_element() -> None:
    nodes = _tree((-1, R_PANEL, SHOWN, 1), (0, R_TABLE, SHOWN | MANAGES, 9), (1, R_CELL, SHOWN, 0))
    nodes[0].name, nodes[1].name = "Sheet window", "Sheet1"
    nodes[1].screen = "on screen: A1:B2 (rows 1–2 of 9, columns A–B of 9); 3 empty cells not listed"
    cell = nodes[2]
    cell.name, cell.value, cell.formula = "B2", "1.5", "=B1*2"
    cell.states |= bit(State.ENABLED) | bit(State.SENSITIVE)
    out = render(nodes)
    assert out.text.splitlines()[1:] == [
        '  - table "Sheet1" [2]',
        "    - … on screen: A1:B2 (rows 1–2 of 9, columns A–B of 9); 3 empty cells not listed",
        '    - cell "B2" = "1.5" [formula: "=B1*2"] [4]',
    ]
    assert sorted(out.elements) == [1, 2, 4]  # the summary takes a line but is no element


def test_a_virtual_container_with_nothing_on_screen_is_no_line_of_its_own() -> None:
    """Nothing of it is on screen (a Qt 5 combo box's closed list, which says it is showing):
    an unnamed one is not shown, a named one is a line with nothing under it."""
    nodes = _tree((-1, R_PANEL, SHOWN, 1), (0, R_TABLE, SHOWN | MANAGES, 9))
    assert render(nodes).text.splitlines() == ["- window [1]"]
    nodes[1].name = "Sheet1"
    assert render(nodes).text.splitlines()[1:] == ['  - table "Sheet1" [2]']


def test_addresses() -> None:
    assert [on_screen.column_name(c) for c in (0, 25, 26, 701, 702, 16383)] == [
        "A", "Z", "AA", "ZZ", "AAA", "XFD",
    ]  # fmt: skip
    assert on_screen.a1(2, 1) == "B3"
    assert on_screen.parse_a1("B3") == (2, 1)
    assert on_screen.parse_a1("XFD1048576") == (1_048_575, 16_383)
    assert on_screen.parse_a1("b3") is None and on_screen.parse_a1("B0") is None


def test_a_formula_cut_by_the_bridge_is_shown_cut() -> None:
    assert on_screen._formula({"Formula": "B2*C2"}) == "=B2*C2"
    # LibreOffice escapes ':' and the bridge cuts the value there: never shown as whole
    assert on_screen._formula({"Formula": "SUM(B2\\"}) == "=SUM(B2…"
    assert on_screen._formula({"Formula": ""}) is None
    assert on_screen._formula({}) is None


def _sheet(filled: set[str], focused: str | None, rows: int, cols: int) -> list[RawNode]:
    cells = []
    for r in range(rows):
        for c in range(cols):
            address = on_screen.a1(r, c)
            cell = RawNode("b", f"/{address}", role=R_CELL, states=SHOWN)
            cell.name = cell.address = address
            if address in filled:
                cell.value = "x"
            if address == focused:
                cell.states |= bit(State.FOCUSED)
            cells.append(cell)
    return cells


def test_empty_cells_are_listed_only_next_to_filled_ones_and_as_the_current_cell() -> None:
    rows, cols = on_screen.Span(0, 4, 100), on_screen.Span(0, 3, 50)
    cells = _sheet({"A1", "B1", "A2"}, focused="D5", rows=5, cols=4)
    listed = {cells[k].address for k in on_screen._listed(cells, rows, cols)}
    assert listed == {"A1", "B1", "A2", "C1", "B2", "A3", "D5"}
    summary = on_screen._summary(cells, on_screen._listed(cells, rows, cols), rows, cols, rows)
    assert summary.startswith("on screen: A1:D5 (rows 1–5 of 100, columns A–D of 50)")
    assert "current cell D5" in summary and "13 empty cells not listed" in summary


def test_the_tree_cache_reads_a_virtual_container_as_a_whole() -> None:
    nodes = _tree(
        (-1, R_PANEL, SHOWN, 2), (0, R_TABLE, SHOWN | MANAGES, 9), (1, R_CELL, SHOWN, 0),
        (0, R_PANEL, SHOWN, 0),
    )  # fmt: skip
    # a cell's own change, or the sheet's (Calc: visible-data-changed), is the sheet's subtree
    assert lift_virtual(Dirt(nodes=(2, 3)), nodes) == Dirt(nodes=(3,), subtrees=(1,))
    assert lift_virtual(Dirt(nodes=(1,)), nodes) == Dirt(subtrees=(1,))
    assert lift_virtual(Dirt(nodes=(3,)), nodes) == Dirt(nodes=(3,))


# ---------------------------------------------------------------------------- a GTK 3 tree view


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, str]]]:
    """Every (object path, member) a client calls from here on, in order."""
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


@pytest.mark.desktop
async def test_a_tree_view_is_read_by_what_is_on_screen_never_by_its_children(
    desktop: DesktopState, calls: list[tuple[str, str]]
) -> None:
    app = await _zenity(
        "--list", "--column", "Name", "--column", "Size", "a", "1", "b", "2", "c", "3"
    )
    try:
        async with await AtspiClient.connect() as client:
            frame = await frame_of(client, app.pid)
            snap = await client.snapshot(frame.ref)
            table = next(e for e in snap.elements.values() if e.role == "table")
            assert "manages_descendants" in table.states
            lines = snap.text.splitlines()
            at = lines.index(next(ln for ln in lines if ln.endswith(f"[{table.id}]")))
            assert lines[at + 1].strip() == "- … on screen: rows 1–3 of 3, columns 1–2 of 2"
            for want in ('columnHeader "Name"', 'columnHeader "Size"', 'cell "a"', 'cell "3"'):
                assert any(want in ln for ln in lines[at + 2 : at + 10]), snap.text
            asked = {member for path, member in calls if path == table.path}
            assert not asked & ASKING_CHILDREN, asked
            # nor through an ancestor: GetMatches descends into every child
            assert not {m for _p, m in calls} & {"GetMatches", "GetTree"}, calls
    finally:
        app.stop()


@pytest.mark.desktop
async def test_thousands_of_rows_show_what_is_on_screen_and_how_many_there_are(
    desktop: DesktopState, calls: list[tuple[str, str]]
) -> None:
    rows = [v for k in range(3000) for v in (f"row {k}", str(k))]
    app = await _zenity("--list", "--column", "Name", "--column", "Size", *rows)
    try:
        async with await AtspiClient.connect() as client:
            frame = await frame_of(client, app.pid)
            snap = await client.snapshot(frame.ref)
            deadline = asyncio.get_running_loop().time() + 20
            while "of 3,000" not in snap.text:  # zenity fills its list as it reads it
                assert asyncio.get_running_loop().time() < deadline, snap.text
                await asyncio.sleep(0.2)
                snap = await client.snapshot(frame.ref)
            table = next(e for e in snap.elements.values() if e.role == "table")
            summary = re.search(
                r"- … on screen: rows 1–(\d+) of 3,000, columns 1–2 of 2", snap.text
            )
            assert summary is not None, snap.text
            shown = int(summary.group(1))
            assert 1 <= shown < 100, snap.text
            assert 'cell "row 0"' in snap.text and f'cell "row {shown - 1}"' in snap.text
            assert f'cell "row {shown + 5}"' not in snap.text
            asked = {member for path, member in calls if path == table.path}
            assert not asked & ASKING_CHILDREN, asked
            # nor through an ancestor: GetMatches descends into every child
            assert not {m for _p, m in calls} & {"GetMatches", "GetTree"}, calls
    finally:
        app.stop()


@pytest.mark.desktop
@needs_gtk3
async def test_a_cell_of_an_icon_and_a_text_is_named_by_its_text(
    desktop: DesktopState, calls: list[tuple[str, str]]
) -> None:
    """A file manager's name column: one cell holding an icon and a text, with no name of
    its own; it is named by its parts (it was left out as empty)."""
    app = dapps.launch([SYSTEM_PYTHON, str(ICON_LIST_APP), "2000"])
    try:
        await asyncio.to_thread(dapps.wait_accessible, pid=app.pid, timeout=60)
        async with await AtspiClient.connect() as client:
            frame = await frame_of(client, app.pid)
            snap = await client.snapshot(frame.ref)
            lines = snap.text.splitlines()
            assert any(
                re.search(r"- … on screen: rows 1–\d+ of 2,000, columns 1–2", ln) for ln in lines
            )
            assert '- cell "file0.txt" [' in snap.text and '- cell "0 bytes" [' in snap.text
            assert '- cell "file1.txt" [' in snap.text, snap.text
            table = next(e for e in snap.elements.values() if e.role == "table")
            asked = {member for path, member in calls if path == table.path}
            assert not asked & ASKING_CHILDREN, asked
            # nor through an ancestor: GetMatches descends into every child
            assert not {m for _p, m in calls} & {"GetMatches", "GetTree"}, calls
    finally:
        app.stop()


def test_a_summary_line_is_no_element_when_ids_are_not_line_numbers() -> None:
    """The policy's and the runtime's parser (protocol/tree.py) skips marker lines: with ids
    that stay put, a summary on line 3 must not shadow the element whose id is 3."""
    from deskpilot.protocol.tree import parse_tree

    text = "\n".join(
        [
            '- window "Sheet" [1]',
            '  - table "Sheet1" [2]',
            "    - … on screen: A1:B2 (rows 1–2 of 9, columns A–B of 9)",
            '    - cell "A1" = "x" [editable] [5]',
            '    - cell "B2" [focused] [editable] [3]',
            "    - … [unread: 1 child — deadline]",
        ]
    )
    parsed = parse_tree(text)
    # the marker lines are kept (verification counts them: the tree is not all there is)
    # under ids no element has
    assert sorted(parsed.elements) == [-6, -3, 1, 2, 3, 5]
    assert parsed.elements[3].name == "B2" and "editable" in parsed.elements[3].states
    assert parsed.elements[-3].role == "…"
