"""The apps of the app matrix's GTK 2 and file manager rows: how long GIMP takes to start, and
what a look at GIMP and Thunar costs (docs/benchmarks.md, "GIMP and Thunar").

Starts its own private desktop (Xvfb 1280x800 + D-Bus + AT-SPI), then measures, medians:

* ``gimp start`` — GIMP 2.10 with its GTK 2 bridge (``GTK_MODULES=gail:atk-bridge``) from
  spawn until its window shows the image (the CI's once-per-module cost), ``--gimp-runs``
  times, each with a fresh config;
* ``gimp observe`` — an in-process observe (window, tree, screenshot) of that window, with
  the kernel's step after it (kernel/visual_tree.py ``outlined``: nothing to do for a tree);
* ``gimp (no bridge) observe`` — the same window without the bridge: its OCR outline (the
  first read of each run's new pixels: the window reader forgets it between runs);
* ``thunar icon view`` — Thunar 4.18 on a folder of six files: the host's observe, then the
  kernel listing the icon view's files read from the screenshot (kernel/opaque_text.py),
  *fresh* (its OCR reading forgotten before each run) and *unchanged* (the same pixels: no
  OCR); ``thunar details view`` — its detailed list (a tree view: no OCR).

Usage: ``env -u DISPLAY -u DBUS_SESSION_BUS_ADDRESS DESKPILOT_HOST_LOCAL_TRUST=1
.venv/bin/python benchmarks/apps_bench.py [--runs N] [--gimp-runs N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from deskpilot import desktop as vdesk
from deskpilot.desktop import apps as dapps
from deskpilot.hostclient.backend import HostBackend
from deskpilot.kernel import opaque_text, visual_tree
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.wire import ExecuteAction, PressKeyAction, TargetSpec
from deskpilot.vision.incremental import window_reader
from gimp_kit import launch_gimp, picture

FILES = ("alpha.txt", "beta.txt", "delta.md", "epsilon.csv", "gamma.txt", "zeta.log")


async def timed(fn: Callable[[], Awaitable[Any]], runs: int) -> tuple[float, Any]:
    samples: list[float] = []
    last: Any = None
    for _ in range(runs):
        t = time.perf_counter()
        last = await fn()
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples), last


async def window_of(backend: HostBackend, pid: int, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for w in await backend.list_windows():
            if w.app.pid == pid and w.visible:
                return w.window_id
        await asyncio.sleep(0.2)
    raise SystemExit(f"no window for pid {pid}")


async def look(backend: HostBackend, window: str, *, forget: bool = False) -> ObservedState:
    """What an agent's look costs: the host's observe and the kernel's step after it."""
    if forget:
        window_reader().forget()
        opaque_text.forget()
    state = await backend.observe("bench", TargetSpec(window_id=window), include_screenshot=True)
    return await visual_tree.outlined(state)


def row(label: str, ms: float, state: ObservedState) -> None:
    obs = state.observation
    print(
        f"{label:<34} {ms:8.1f} ms  elements={obs.element_count:<4} "
        f"source={obs.tree_read.source} timings={obs.timings_ms}",
        flush=True,
    )


async def bench_gimp(backend: HostBackend, args: argparse.Namespace, work: Path) -> None:
    image = picture(work)
    starts: list[float] = []
    for _ in range(args.gimp_runs):
        t = time.perf_counter()
        app = launch_gimp(image, bridge=True)
        starts.append((time.perf_counter() - t) * 1000)
        app.stop()
    print(
        f"{'gimp start (to the image window)':<34} {statistics.median(starts):8.1f} ms  "
        f"runs={starts}",
        flush=True,
    )
    for bridge in (True, False):
        app = launch_gimp(image, bridge=bridge)
        try:
            window = await window_of(backend, app.pid)
            await look(backend, window)  # warm: the host knows the app
            fresh = partial(look, backend, window, forget=True)
            ms, state = await timed(fresh, args.runs)
            row("gimp observe" if bridge else "gimp (no bridge) observe, OCR", ms, state)
        finally:
            app.stop()


async def bench_thunar(backend: HostBackend, args: argparse.Namespace, work: Path) -> None:
    folder = work / "files"
    folder.mkdir()
    for name in FILES:
        (folder / name).write_text(name)
    app = dapps.launch_accessible(["thunar", str(folder)])
    try:
        window = await window_of(backend, app.pid)
        await keys(backend, window, "ctrl+1")  # the icon view (Thunar keeps the last one)
        deadline = time.monotonic() + 30
        while "zeta.log" not in (await look(backend, window)).observation.tree:
            if time.monotonic() > deadline:
                raise SystemExit("Thunar's icon view never listed its files")
            await asyncio.sleep(0.3)
        ms, state = await timed(lambda: look(backend, window, forget=True), args.runs)
        row("thunar icon view, fresh OCR", ms, state)
        ms, state = await timed(lambda: look(backend, window), args.runs)
        row("thunar icon view, unchanged", ms, state)
        await keys(backend, window, "ctrl+2")
        deadline = time.monotonic() + 30
        while 'cell "zeta.log"' not in (await look(backend, window)).observation.tree:
            if time.monotonic() > deadline:
                raise SystemExit("Thunar's detailed list never showed")
            await asyncio.sleep(0.3)
        ms, state = await timed(lambda: look(backend, window), args.runs)
        row("thunar details view", ms, state)
        await keys(backend, window, "ctrl+1")
    finally:
        app.stop()


async def keys(backend: HostBackend, window: str, chord: str) -> None:
    state = await backend.observe("bench", TargetSpec(window_id=window), include_screenshot=False)
    obs = state.observation
    request = ExecuteAction(
        id=0,
        session_id="bench",
        frame_id=obs.frame_id,
        tree_version=obs.tree_version,
        action=PressKeyAction(keys=[chord]),
    )
    await backend.execute(request)


async def run(args: argparse.Namespace, state: vdesk.DesktopState) -> None:
    backend = HostBackend(heartbeat=False)
    work = Path(tempfile.mkdtemp(prefix="deskpilot-apps-bench-"))
    try:
        print(f"# Xvfb {state.width}x{state.height}, {os.cpu_count()} CPUs, runs={args.runs}")
        await bench_thunar(backend, args, work)
        await bench_gimp(backend, args, work)
    finally:
        await backend.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--gimp-runs", type=int, default=3)
    args = ap.parse_args()
    state = vdesk.up(1280, 800)
    os.environ.update(state.env)
    try:
        asyncio.run(run(args, state))
    finally:
        vdesk.down(state)


if __name__ == "__main__":
    main()
