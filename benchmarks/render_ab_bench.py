"""The renderer of another tree against this one, interleaved in one process, on the nodes of
real windows: what a change to ``host/atspi/render.py`` costs an observation, measured
where the machine's load cannot hide it (the whole-observe A/B of ab_compare.py swings more
than that on a shared 2-CPU machine).

Starts its own private desktop (unless DISPLAY is set) with gnome-calculator and Chromium on
observe_bench.py's 300-item page (~1,730 nodes), reads each window's nodes once (read and
details, as a snapshot does), then renders them with the other tree's ``render`` and with
this tree's, alternating, ``--runs`` times each, and prints medians and after ÷ before.

Run: ``.venv/bin/python benchmarks/render_ab_bench.py --before /path/to/other/src [--runs 201]``
(for example a ``git archive`` of main's ``src`` unpacked somewhere).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from deskpilot import desktop as vdesk
from deskpilot.desktop import apps as dapps
from deskpilot.host.atspi import AtspiClient, render
from deskpilot.host.atspi.collect import RawNode
from deskpilot.host.atspi.snapshot import _read_details
from observe_bench import find_frame, page_html, serve, wait_content


def other_render(src: Path) -> Callable[..., Any]:
    """``render`` of the other tree's render.py (its imports resolve to this tree's
    modules, which only added names)."""
    path = src / "deskpilot" / "host" / "atspi" / "render.py"
    spec = importlib.util.spec_from_file_location("before_render", path)
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    fn: Callable[..., Any] = module.render
    return fn


async def nodes_of(pid: int, title: str, needle: str) -> list[RawNode]:
    frame = await find_frame(pid, title)
    await wait_content(frame, needle)
    async with await AtspiClient.connect() as client:
        info = await client.application(frame.ref.bus_name)
        conn = await client._conn_for(frame.ref.bus_name)
        reader = client._snapshots._reader
        nodes, _ = await reader.read(conn, frame.ref, 20_000, 500)
        await _read_details(conn, nodes, info, 2000)
        return nodes


def interleaved(before: Callable[..., Any], nodes: list[RawNode], runs: int) -> tuple[float, float]:
    a: list[float] = []
    b: list[float] = []
    for _ in range(runs):
        for fn, out in ((before, a), (render, b)):
            t = time.perf_counter()
            fn(nodes)
            out.append((time.perf_counter() - t) * 1000)
    return statistics.median(a), statistics.median(b)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", type=Path, required=True, help="the other tree's src/")
    parser.add_argument("--runs", type=int, default=201)
    args = parser.parse_args()
    before = other_render(args.before)
    state = None
    if not os.environ.get("DISPLAY"):
        state = vdesk.up(1280, 800)
        os.environ.update(state.env)
    root = Path(tempfile.mkdtemp(prefix="render-ab-"))
    (root / "index.html").write_text(page_html())
    server, url = serve(root)
    started: list[dapps.App] = []
    try:
        calc = dapps.launch(["gnome-calculator"])
        started.append(calc)
        chromium = dapps.launch_chromium(url)
        started.append(chromium)
        for app in started:
            dapps.wait_accessible(pid=app.pid, timeout=60)
        windows = [
            ("gnome-calculator", calc.pid, "Calculator", "="),
            ("chromium 300 items", chromium.pid, "Bench page", "Item 299"),
        ]
        for label, pid, title, needle in windows:
            nodes = asyncio.run(nodes_of(pid, title, needle))
            old, new = interleaved(before, nodes, args.runs)
            same = before(nodes).text == render(nodes).text
            print(
                f"{label:20} nodes={len(nodes):5}  render before {old:7.3f} ms  "
                f"after {new:7.3f} ms  after/before {new / old:5.3f}  same text: {same}"
            )
        print(f"command: .venv/bin/python benchmarks/render_ab_bench.py --runs {args.runs}")
    finally:
        for app in started:
            app.stop()
        server.shutdown()
        if state is not None:
            vdesk.down(state)


if __name__ == "__main__":
    main()
