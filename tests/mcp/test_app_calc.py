"""The app matrix row for LibreOffice Calc 7.4 (Debian's libreoffice-calc with the GTK 3
bridge), through the official TypeScript MCP SDK (what Claude Code and pi are built on).

The sheet's table says it has 2,147,483,647 cells and makes an object for each one it is
asked for, so its children are never asked for (host/atspi/collect.py ``virtual``): what is
on screen of it is read (host/atspi/on_screen.py). The fixture (tests/calc_kit.py) is a small
price list in A1:D6 with formulas in column D and row 6.

* read: the state shows the window's menu bar and toolbars, and the sheet's visible cells
  with their addresses and values (formulas too), the current cell, a summary of what is on
  screen and how much empty space was left out — not hundreds of empty cells;
* act: a click on cell D7 by element id makes it the current cell, typing a formula into
  it with Enter enters it (the result says the host read it back: effect confirmed; the
  next state shows its value, computed), and the toolbar's Save button saves the file (the
  result confirms it from the file; its content.xml has the formula and its value);
* ``diagnose_native_host`` names Calc when its tree does not come within the deadline.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from real_clients import TS_CALLS, run_ts_script, stdio_config

from calc_kit import SHOWN, Calc, calc, cell_formula, soffice, write_fixture

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(soffice() is None, reason="LibreOffice is not installed"),
]


@pytest.fixture(scope="module")
def sheet(dp_desktop: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Calc]:
    """Calc on a fresh copy of the fixture, once for the module."""
    where = tmp_path_factory.mktemp("calc")
    with calc(write_fixture(where / "prices.ods"), where / "profile") as app:
        yield app


def _ok(result: dict[str, Any]) -> str:
    assert not result["isError"], result["text"][:2000]
    text: str = result["text"]
    return text


def _cells(text: str) -> dict[str, str]:
    """Each cell line of a state: address → its line (from ``- cell "B3"``)."""
    return {m.group(1): m.group(0) for m in re.finditer(r'- cell "([A-Z]+\d+)".*$', text, re.M)}


async def test_calc_reads_the_sheet_types_a_formula_and_saves(sheet: Calc) -> None:
    doc = Path(str(sheet.app.proc.args[-1]))
    calls = [
        {"name": "get_app_state", "arguments": {"app": sheet.pid}},
        {"name": "click", "arguments": {"state_id": "$state", "element_id": '$element:cell "B1"'}},
        {"name": "click", "arguments": {"state_id": "$state", "element_id": '$element:cell "D7"'}},
        {"name": "type_text", "arguments": {"state_id": "$state", "text": "=SUM(D2:D5)\n"}},
        {
            "name": "click",
            "arguments": {"state_id": "$state", "element_id": '$element:button "Save"'},
        },
    ]
    report = await run_ts_script(TS_CALLS, stdio_config(), json.dumps(calls))
    first, top_row, clicked, typed, saved = report["results"]
    state = _ok(first)
    # the rest of the window is there: menu bar, toolbars, the Name Box with the address
    for line in ('menu "File"', 'toolbar "Standard"', 'toolbar "Formula Tool Bar"'):
        assert f"- {line} [" in state, state
    assert re.search(r'- textField = "A1" \[\d+\]', state), state  # the Name Box
    # the sheet: every filled cell of A1:D6 with its address and value, formulas said
    cells = _cells(state)
    for address, value in SHOWN.items():
        assert f'cell "{address}" = "{value}"' in cells.get(address, ""), (address, state)
    assert '[formula: "=B2*C2"]' in cells["D2"], cells["D2"]
    assert '[formula: "=SUM(D2…"]' in cells["D6"], cells["D6"]  # the bridge cuts at ':'
    summary = re.search(r"^\s*- … on screen: (A1:[A-Z]+\d+) \(rows 1–.*$", state, re.M)
    assert summary is not None, state
    assert "of 1,048,576" in summary.group(0) and "current cell A1" in summary.group(0)
    assert "empty cells not listed" in summary.group(0)
    # empty cells are left out but for the current one and those next to filled ones
    assert "[focused]" in cells["A1"], cells["A1"]
    assert {"E1", "A7", "D7", "C6"} <= set(cells), sorted(cells)
    assert "H20" not in cells and len(cells) < 40, sorted(cells)
    # a click on a cell of the top row is a click on that cell, not on its column's header
    # above it (LibreOffice's VCL area may say it lies 25 px higher than it is drawn, under
    # the GTK menu bar: host/atspi/vcl_shift.py) — which selected the whole column B
    on_b1 = _ok(top_row)
    assert re.search(r'- textField = "B1" \[\d+\]', on_b1), on_b1  # the Name Box
    assert "current cell B1" in on_b1 and "1048576" not in on_b1, on_b1
    # a click on D7 by id makes it the current cell
    after_click = _ok(clicked)
    assert "current cell D7" in after_click, after_click
    assert "[focused]" in _cells(after_click)["D7"], after_click
    # the formula typed into it is entered; the next state shows its computed value
    after_typing = _ok(typed)
    # the host read the cell back: the typing is confirmed, never "nothing changed"
    assert typed["diagnostic"].get("effect") == "confirmed", typed["diagnostic"]
    assert "effect confirmed" in after_typing and "action_noop" not in after_typing
    d7 = _cells(after_typing)["D7"]
    assert 'cell "D7" = "10"' in d7 and '[formula: "=SUM(D2…"]' in d7, d7
    assert "current cell D8" in after_typing, after_typing
    _ok(saved)
    # the save is confirmed by the document's file (its modification time)
    assert saved["diagnostic"].get("effect") == "confirmed", saved["diagnostic"]
    # saved by the toolbar's Save: the file has the formula and its value
    deadline = time.monotonic() + 15
    while cell_formula(doc, "D7") != ("of:=SUM([.D2:.D5])", "10"):
        assert time.monotonic() < deadline, cell_formula(doc, "D7")
        await asyncio.sleep(0.2)


async def test_diagnose_names_calc_when_its_tree_does_not_come_in_time(sheet: Calc) -> None:
    """A deadline too short for Calc's window (60 ms: its full read takes a few hundred):
    the state is partial (or has no tree at all), and diagnose_native_host names the app and
    what to do."""
    config = stdio_config()
    config["env"] = {**config["env"], "DESKPILOT_TREE_DEADLINE_MS": "60"}
    calls = [
        {"name": "get_app_state", "arguments": {"app": sheet.pid}},
        {"name": "diagnose_native_host", "arguments": {}},
    ]
    report = await run_ts_script(TS_CALLS, config, json.dumps(calls))
    state, diagnosis = report["results"]
    looked = _ok(state)
    assert "partial=deadline" in looked or "tree=unavailable" in looked, looked
    data, _ = json.JSONDecoder().raw_decode(_ok(diagnosis))  # the diagnostic follows it
    check = next(c for c in data["checks"] if c["check"] == "apps_answer_in_time")
    assert not check["ok"], check
    slow = next(a for a in check["apps"] if a["pid"] == sheet.pid)
    # missed its deadline (it answers too slowly for its whole tree), or silent past it
    assert slow["app"].startswith("soffice"), slow
    assert {"treeDeadlineMissedMs", "unresponsiveMs"} & set(slow), slow
    advice = " ".join(data["advice"])
    assert f"{slow['app']} (pid {sheet.pid})" in advice, advice
    assert "get_app_state again" in advice, advice
