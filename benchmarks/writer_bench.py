"""LibreOffice Writer observe: how long a look at a Writer window takes, this tree beside another.

Starts its own private desktop (Xvfb 1280x800 + D-Bus + AT-SPI) and LibreOffice Writer (GTK 3
plugin, a fresh profile) on a document of 60 known paragraphs, then measures, interleaved
round by round, each source tree given (``--tree LABEL=SRC``, the first is the baseline) in a
subprocess of its own interpreter (benchmarks/ab_compare.py ``prepare``: a worktree without
``.venv`` gets a path-only overlay), against the same window:

* ``snapshot`` — ``AtspiClient.snapshot`` of the Writer frame with the tree cache off: every
  read a full one (what an observe costs when the app changed);
* ``observe`` — the host's in-process observer (window lookup, frame match, tree, capture,
  PNG) with the tree cache on, the window unchanged between looks;
* whether the text shows the document's paragraphs (``paragraphs shown``).

Usage: ``.venv/bin/python benchmarks/writer_bench.py --tree main=/work/main/src --tree
docs=src --rounds 3 --runs 11``; prints each round's medians and the medians over rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

PARAGRAPHS = ["Quarterly report"] + [
    f"Paragraph {i}: the quick brown fox jumps over the lazy dog, and the dog sleeps on."
    for i in range(1, 61)
]


async def measure(runs: int) -> dict[str, Any]:
    """One tree's figures against the Writer window on this desktop (``--measure``)."""
    from deskpilot.host.accessibility import Accessibility
    from deskpilot.host.atspi import AtspiClient
    from deskpilot.host.observer import Observer
    from deskpilot.host.x11.desktop import X11Desktop
    from deskpilot.protocol.wire import Observe, TargetSpec

    client = await AtspiClient.connect()
    frame = next(f for f in await client.frames() if "LibreOffice Writer" in f.title)
    client.tree_cache.enabled = False
    await client.snapshot(frame.ref)
    samples: list[float] = []
    snap: Any = None
    for _ in range(runs):
        t = time.perf_counter()
        snap = await client.snapshot(frame.ref)
        samples.append((time.perf_counter() - t) * 1000)
    await client.close()
    desktop = X11Desktop()
    acc = await Accessibility.connect()
    observer = Observer(desktop, acc)
    request = Observe(id=1, target=TargetSpec(pid=frame.pid))
    await observer.observe(request)
    looks: list[float] = []
    for _ in range(runs):
        t = time.perf_counter()
        await observer.observe(request)
        looks.append((time.perf_counter() - t) * 1000)
    if acc is not None:
        await acc.close()
    desktop.close()
    shown = sum(p in snap.text for p in PARAGRAPHS[:10])
    return {
        "snapshot_ms": statistics.median(samples),
        "observe_ms": statistics.median(looks),
        "nodes": snap.node_count,
        "elements": snap.element_count,
        "paragraphs_shown": shown,
    }


def start(folder: Path) -> tuple[Any, Any]:
    """The desktop and LibreOffice Writer on the bench document, its window on the bus."""
    from deskpilot import desktop as vdesk
    from deskpilot.desktop import apps as dapps

    state = vdesk.up(1280, 800)
    os.environ.update(state.env)
    tests = Path(__file__).resolve().parent.parent / "tests"
    sys.path.insert(0, str(tests))
    from libreoffice_kit import _window, make_document

    doc = make_document(folder, "bench", PARAGRAPHS)
    env = {**os.environ, "SAL_USE_VCLPLUGIN": "gtk3"}
    profile = (folder / "profile").as_uri()
    app = dapps.launch(
        ["soffice", f"-env:UserInstallation={profile}", "--norestore", "--nologo", str(doc)], env
    )
    asyncio.run(_window(doc.name))
    return state, app


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", action="append", default=[], help="LABEL=SRC (first: baseline)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    ns = ap.parse_args()
    if ns.measure:
        print(json.dumps(asyncio.run(measure(ns.runs))))
        return
    from ab_compare import prepare
    from deskpilot import desktop as vdesk

    specs = [spec.split("=", 1) for spec in ns.tree or [f"this={Path('src').resolve()}"]]
    trees = [prepare(label, Path(src).resolve()) for label, src in specs]
    folder = Path(tempfile.mkdtemp(prefix="deskpilot-writer-bench-"))
    state, app = start(folder)
    results: dict[str, list[dict[str, Any]]] = {t.label: [] for t in trees}
    try:
        print(f"# Xvfb {state.width}x{state.height}, {os.cpu_count()} CPUs, runs={ns.runs}")
        for rnd in range(1, ns.rounds + 1):
            for tree in trees:
                env = {**os.environ, "PYTHONPATH": str(tree.src), "DESKPILOT_HOST_LOCAL_TRUST": "1"}
                argv = [str(tree.python), __file__, "--measure", "--runs", str(ns.runs)]
                load = os.getloadavg()[0]
                out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
                line = (re.findall(r"^\{.*\}$", out.stdout, re.M) or [None])[-1]
                if line is None:
                    print(f"round {rnd} {tree.label}: failed\n{out.stderr[-2000:]}", flush=True)
                    continue
                got = json.loads(line)
                results[tree.label].append(got)
                print(f"round {rnd} {tree.label:<6} load {load:.2f}  {got}", flush=True)
        print("\n| measure (ms) | " + " | ".join(t.label for t in trees) + " |")
        print("|---|" + "---|" * len(trees))
        for key in ("snapshot_ms", "observe_ms"):
            cells = []
            for t in trees:
                vals = [r[key] for r in results[t.label]]
                cells.append(
                    f"{statistics.median(vals):.1f} [{min(vals):.1f}–{max(vals):.1f}]"
                    if vals
                    else "—"
                )
            print(f"| Writer {key.removesuffix('_ms')} | " + " | ".join(cells) + " |")
        for t in trees:
            if results[t.label]:
                r = results[t.label][-1]
                print(
                    f"# {t.label}: nodes read {r['nodes']}, elements {r['elements']}, "
                    f"paragraphs shown {r['paragraphs_shown']}/10"
                )
    finally:
        app.stop()
        vdesk.down(state)


if __name__ == "__main__":
    main()
