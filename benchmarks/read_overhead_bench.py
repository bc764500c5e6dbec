"""What the apps work added to every tree read, measured in one process, interleaved: the
render of this revision against the render of another one (``--base-render``: its
``render.py``, e.g. ``git show 872e0d6:src/deskpilot/host/atspi/render.py``; it is loaded
beside this one and uses this revision's ``collect`` and ``vocab``), and the search for
widgets that draw what they do not expose (atspi/opaque.py ``candidates``), on the synthetic
trees of benchmarks/observe_bench.py (100,001 nodes, and 1,801: the size of the Chromium
bench page) and on one of Thunar's shape (a side pane and a file list of renderer cells). No
desktop: these are pure functions, so the comparison is not at the mercy of the machine's
load, as two observe runs on a shared machine are.

Usage: ``.venv/bin/python benchmarks/read_overhead_bench.py --base-render FILE [--runs N]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from deskpilot.host.atspi import opaque
from deskpilot.host.atspi.collect import RawNode
from deskpilot.host.atspi.render import RenderOptions, render
from deskpilot.host.atspi.vocab import ROLE_NUMBER, State, bit
from observe_bench import synthetic

VISIBLE = bit(State.VISIBLE) | bit(State.SHOWING) | bit(State.SENSITIVE)


def renderer_cells(rows: int = 300) -> list[RawNode]:
    """A window with a table of ``rows`` rows, each a cell of an icon and a name renderer,
    and three plain cells (a detailed file list)."""
    nodes = [RawNode(":1.1", "/0", role=ROLE_NUMBER["frame"], name="files", states=VISIBLE)]
    table = RawNode(":1.1", "/1", parent=0, depth=1, role=ROLE_NUMBER["table"], states=VISIBLE)
    nodes.append(table)
    nodes[0].children.append(1)

    def add(parent: int, name: str) -> int:
        i = len(nodes)
        cell = RawNode(
            ":1.1", f"/{i}", parent=parent, role=ROLE_NUMBER["table cell"], states=VISIBLE
        )
        cell.name = name
        cell.actions = None if name else ("Expand or contract", "Edit", "Activate")
        nodes.append(cell)
        nodes[parent].children.append(i)
        return i

    for r in range(rows):
        row = add(1, "")
        add(row, "")
        add(row, f"file {r}.txt")
        for text in ("10 bytes", "plain text document", "Today"):
            add(1, text)
    return nodes


def load_render(path: str) -> Callable[..., Any]:
    spec = importlib.util.spec_from_file_location("base_render", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["base_render"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    base: Callable[..., Any] = module.render
    return base


def interleaved(
    runs: int, first: Callable[[], object], second: Callable[[], object]
) -> tuple[float, float]:
    a: list[float] = []
    b: list[float] = []
    for _ in range(runs):
        for fn, out in ((first, a), (second, b)):
            t = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t) * 1000)
    return statistics.median(a), statistics.median(b)


def bench(label: str, nodes: list[RawNode], runs: int, base: Callable[..., Any]) -> None:
    opts = RenderOptions()
    before, after = interleaved(runs, lambda: base(nodes, opts), lambda: render(nodes, opts))
    t = time.perf_counter()
    for _ in range(runs):
        opaque.candidates(nodes)
    search = (time.perf_counter() - t) * 1000 / runs
    lines = render(nodes, opts).element_count
    print(
        f"{label:<30} render: base {before:8.2f} ms  this {after:8.2f} ms "
        f"({(after - before) / before * 100:+5.1f} %, {lines} elements)  "
        f"| opaque search {search:6.3f} ms",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-render", required=True, help="render.py of the revision to compare")
    ap.add_argument("--runs", type=int, default=21)
    args = ap.parse_args()
    base = load_render(args.base_render)
    bench("synthetic 100,001 nodes", synthetic(), max(5, args.runs // 3), base)
    bench("synthetic 1,801 nodes", synthetic(n_groups=18), args.runs * 10, base)
    bench("file list, 300 rows", renderer_cells(), args.runs * 10, base)


if __name__ == "__main__":
    main()
