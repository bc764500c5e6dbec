"""LibreOffice Calc through MCP: observe, click a cell, type a formula — this tree and a
baseline tree side by side, in one run.

Starts its own private desktop (unless DISPLAY is set) and, per variant, a fresh Calc
(GTK 3) on the test fixture (tests/calc_kit.py: a price list in A1:D6) and a ``deskpilot
serve`` over stdio driven by the official Python MCP client. The baseline variant runs the
server with another Python (``--baseline-python``: a venv whose site-packages put the
baseline's ``src`` first, e.g. a worktree of main), whose host (``python -I -m
deskpilot.host``, isolated: PYTHONPATH does not reach it) is then the baseline's too.
Measured from the client's side (wall time around ``call_tool``):

* ``observe cold``  — the first ``get_app_state`` of a new server (a full read);
* ``observe``       — ``get_app_state`` again, the window unchanged (the tree cache's hit);
* ``key Down``      — ``press_key Down`` → the result with the state after it (the cursor
  moved: the sheet's cells read again, a patch of the kept tree);
* ``full read``     — this tree only, in process: ``AtspiClient.snapshot`` of the window with
  the tree cache off (the walk of the window and the sheet's visible cells, every time);
* ``click``         — ``click`` on a cell by element id → the result with its new state
  (alternating between two cells); ``reusable`` says how many results carried a state_id;
* ``type``          — ``type_text "=SUM(D2:D5)\\n"`` into the current cell → the result.

Targets (issue #32): observe with the visible cells ≤ 200 ms, a click on a cell → a result
with a reusable state ≤ 400 ms, typing a formula ≤ 600 ms.

Usage: ``.venv/bin/python benchmarks/calc_bench.py [--n 15] [--baseline-python PY]``, with
e.g. ``git worktree add /tmp/main main``, ``python3.11 -m venv /tmp/mainvenv`` and two
``.pth`` files in its site-packages: ``/tmp/main/src``, then this venv's site-packages.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
DESKPILOT = str(ROOT / ".venv" / "bin" / "deskpilot")
sys.path.insert(0, str(ROOT / "tests"))

import calc_kit  # noqa: E402  (the tests' fixture and Calc launcher: one source of truth)

FORMULA = "=SUM(D2:D5)\n"


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


def _state(result: Any) -> str | None:
    m = re.search(r"^state_id=(\S+)$", _text(result), re.M)
    return m.group(1) if m else None


def _element(result: Any, needle: str) -> int | None:
    for line in _text(result).splitlines():
        if needle in line and (m := re.search(r"\[(\d+)\]\s*$", line)):
            return int(m.group(1))
    return None


async def _timed(client: Client, tool: str, args: dict[str, Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    result = await client.call_tool(tool, args)
    return (time.perf_counter() - t0) * 1000, result


async def measure(pid: int, n: int, python: str | None) -> dict[str, Any]:
    if python is None:
        params = StdioServerParameters(command=DESKPILOT, args=["serve"], env=dict(os.environ))
    else:
        serve = ["-c", "from deskpilot.cli.main import app; app()", "serve"]
        params = StdioServerParameters(command=python, args=serve, env=dict(os.environ))
    out: dict[str, Any] = {"cold": [], "observe": [], "key": [], "click": [], "type": []}
    reusable = {"click": 0, "type": 0}
    trees = 0
    app = {"app": pid}
    async with Client(params) as client:
        ms, state = await _timed(client, "get_app_state", app)
        out["cold"].append(ms)
        for _ in range(n):
            ms, state = await _timed(client, "get_app_state", app)
            out["observe"].append(ms)
            trees += 'cell "A1"' in _text(state)
        for _ in range(n):
            if _state(state) is None:
                state = await client.call_tool("get_app_state", app)
            ms, moved = await _timed(
                client, "press_key", {"state_id": _state(state), "keys": ["Down"]}
            )
            out["key"].append(ms)
            state = moved if _state(moved) else await client.call_tool("get_app_state", app)
        for i in range(n):
            cell = _element(state, 'cell "D7"' if i % 2 == 0 else 'cell "E2"')
            if cell is None or _state(state) is None:
                state = await client.call_tool("get_app_state", app)
                continue
            ms, clicked = await _timed(
                client, "click", {"state_id": _state(state), "element_id": cell}
            )
            out["click"].append(ms)
            reusable["click"] += _state(clicked) is not None
            state = clicked if _state(clicked) else await client.call_tool("get_app_state", app)
            if i % 2 == 0:  # at D7: type the formula there
                ms, typed = await _timed(
                    client, "type_text", {"state_id": _state(state), "text": FORMULA}
                )
                out["type"].append(ms)
                reusable["type"] += _state(typed) is not None
                state = typed if _state(typed) else await client.call_tool("get_app_state", app)
    out["reusable"] = reusable
    out["trees"] = trees
    out["full"] = await full_reads(pid, n) if python is None else []
    return out


async def full_reads(pid: int, n: int) -> list[float]:
    """This tree's full read of the window (the tree cache off), in process."""
    from deskpilot.host.atspi import AtspiClient

    client = await AtspiClient.connect()
    try:
        client.tree_cache.enabled = False
        frame = next(f for f in await client.frames(pid=pid) if f.title.startswith("prices"))
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            await client.snapshot(frame.ref)
            times.append((time.perf_counter() - t0) * 1000)
        return times
    finally:
        await client.close()


def run_variant(label: str, python: str | None, n: int, work: Path) -> dict[str, Any]:
    where = work / label
    where.mkdir()
    doc = calc_kit.write_fixture(where / "prices.ods")
    with calc_kit.calc(doc, where / "profile") as app:
        time.sleep(3.0)  # Calc lays its window out after it registers
        return asyncio.run(measure(app.pid, n, python))


def _median(xs: list[float]) -> str:
    return f"{statistics.median(xs):.0f} ms" if xs else "—"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=15)
    parser.add_argument("--baseline-python", help="a Python that imports the baseline")
    ns = parser.parse_args()
    os.environ.setdefault("DESKPILOT_HOST_LOCAL_TRUST", "1")
    from deskpilot import desktop as vdesk

    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    state = None
    if not os.environ.get("DISPLAY"):
        state = vdesk.up(1280, 800)
        os.environ.update(state.env)
    work = Path(tempfile.mkdtemp(prefix="deskpilot-calc-bench-"))
    results: dict[str, dict[str, Any]] = {}
    try:
        if ns.baseline_python is not None:
            results["baseline"] = run_variant("baseline", ns.baseline_python, ns.n, work)
        results["this tree"] = run_variant("this", None, ns.n, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if state is not None:
            vdesk.down(state)
    print("command:", " ".join([os.path.relpath(sys.executable), *sys.argv]))
    with contextlib.suppress(OSError):
        after = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"cpus: {os.cpu_count()}; load average before: {load_before}; after: {after}")
    print()
    print(
        "| variant | observe cold | observe | full read | key Down | click a cell (reusable) "
        "| type a formula (reusable) | states with cells |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for label, r in results.items():
        print(
            f"| {label} | {_median(r['cold'])} | {_median(r['observe'])} | "
            f"{_median(r['full'])} | {_median(r['key'])} | {_median(r['click'])} "
            f"({r['reusable']['click']}/{len(r['click'])}) | {_median(r['type'])} "
            f"({r['reusable']['type']}/{len(r['type'])}) | {r['trees']}/{len(r['observe'])} |"
        )


if __name__ == "__main__":
    main()
