"""Visual tree of a 1280x800 terminal: observe → OCR outline, beside the raw OCR and the CLI.

Run: ``.venv/bin/python benchmarks/visual_tree_bench.py [--runs N]``

Target (issue #17): ≤ 700 ms median for the visual tree of a 1280x800 terminal window on
the 2-core CI machine. Starts its own private desktop (Xvfb 1280x800 + D-Bus), the host, a
kernel, and xterm (DejaVu Sans Mono 14, 116x34 cells: the whole screen) in two states:

* ``output``: a known command output, two short lines (the tests' xterm);
* ``full``: every row of the terminal full of text (33 rows of ``ls -l``-like lines, ~2,800
  characters): the worst case, OCR time grows with the text.

Measured per state, N runs of each path interleaved (after one warm-up each), median and p90
of the wall time, and the CPU time of this process (all threads: the wall time a load of other
processes cannot inflate):

* full: ``Kernel.observe`` as shipped with the window's last frame forgotten first: the
  host's observe (window, capture, PNG) and the kernel's OCR outline of the whole frame
  (kernel/visual_tree.py), wall time — the target's number;
* hit: ``Kernel.observe`` again, nothing changed: the last reading reused
  (vision/incremental.py), no OCR;
* patched: ``Kernel.observe`` after one character was typed at the prompt
  (``TypeTextAction`` through the kernel): only the rows that changed are read again;
* host: ``HostBackend.observe`` alone (no OCR): what the observation cost before;
* ocr: ``OcrEngine.read`` of the same PNG (decode, polarity pass, two bands, lines) by the
  engine the kernel chose (vision/outline.py ``engine_for``: a terminal is read as one
  uniform block of text), the engine's part of observe;
* sparse: the same with the screenshot engine (sparse text), what a terminal cost before
  ``engine_for``;
* cli (baseline, docs/benchmarks.md "OCR (vision_read)"): the ``tesseract`` CLI per call on
  the same PNG (``--oem 1 --psm 11 tsv``, ``OMP_THREAD_LIMIT=1``), the reading alone, no
  outline.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

os.environ.setdefault("OMP_THREAD_LIMIT", "1")
os.environ.setdefault("DESKPILOT_HOST_LOCAL_TRUST", "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from deskpilot import desktop as vdesk
from deskpilot.desktop.apps import App, launch

T = TypeVar("T")

FULL = "\n".join(
    f"-rw-r--r-- 1 root root {1000 + 37 * i:6d} Dec  1 21:{i % 60:02d} report-{i:03d}.txt "
    f"invoice total window keyboard {i * 7}"
    for i in range(33)
)


def _xterm(text: str) -> App:
    path = shutil.which("xterm")
    if path is None:
        raise SystemExit("xterm is not installed (apt-get install xterm)")
    script = f"printf '%s' '{text}'; exec sleep 3600"
    argv = [path, "-geometry", "116x34+0+0", "-fa", "DejaVu Sans Mono", "-fs", "14"]
    return launch([*argv, "-e", "sh", "-c", script])


async def _timed(
    fn: Callable[[], Awaitable[T]], wall: list[float], cpu: list[float] | None = None
) -> T:
    """``fn()``; its wall ms appended to ``wall``, its CPU ms (this process, all threads) to
    ``cpu``."""
    t, c = time.perf_counter(), time.process_time()
    value = await fn()
    if cpu is not None:
        cpu.append((time.process_time() - c) * 1000.0)
    wall.append((time.perf_counter() - t) * 1000.0)
    return value


def _cli(png: bytes) -> None:
    with tempfile.NamedTemporaryFile(suffix=".png") as f:
        f.write(png)
        f.flush()
        subprocess.run(
            ["tesseract", f.name, "stdout", "--oem", "1", "--psm", "11", "tsv"],
            check=True,
            capture_output=True,
            env={**os.environ, "OMP_THREAD_LIMIT": "1"},
        )


def _stats(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]


async def _bench(name: str, text: str, runs: int, save: Path | None = None) -> None:
    from deskpilot.hostclient.backend import HostBackend
    from deskpilot.hostclient.config import HostConfig
    from deskpilot.kernel import Kernel
    from deskpilot.kernel.flags import Flags
    from deskpilot.protocol.session import TaskContract
    from deskpilot.protocol.wire import TargetSpec, TypeTextAction
    from deskpilot.store.db import Database
    from deskpilot.vision.incremental import window_reader
    from deskpilot.vision.ocr import default_engine
    from deskpilot.vision.outline import engine_for

    app = _xterm(text)
    backend = HostBackend(HostConfig(heartbeat_interval_s=3600.0), heartbeat=False)
    data = Path(tempfile.mkdtemp(prefix="visual-bench-"))
    kernel = Kernel(backend, Database(data / "bench.sqlite3"), flags=Flags({}))
    try:
        window = None
        for _ in range(150):
            window = next((w for w in await kernel.windows() if w.app.pid == app.pid), None)
            if window is not None:
                break
            await asyncio.sleep(0.1)
        assert window is not None, "xterm never mapped"
        await asyncio.sleep(1.0)  # the output drawn
        target = TargetSpec(window_id=window.window_id)
        sid = await kernel.open_session("bench", TaskContract(), target=target)
        host_sid = "bench-host"
        state = await kernel.observe(sid)  # warm-up (loads the engine)
        png = state.png
        assert png is not None
        if save is not None:
            (save / f"{name}.png").write_bytes(png)
        engine, sparse = engine_for(state.observation.app), default_engine()
        paths = ("full", "hit", "patched", "host", "ocr", "sparse", "cli")
        times: dict[str, list[float]] = {p: [] for p in paths}
        cpu: dict[str, list[float]] = {p: [] for p in paths}
        rows: list[float] = []
        cli = shutil.which("tesseract") is not None
        for warm in (engine, sparse):
            await asyncio.to_thread(warm.read, png)
        for _ in range(runs):
            window_reader().forget()  # the window's last frame forgotten: a full read
            await _timed(lambda: kernel.observe(sid), times["full"], cpu["full"])
            seen = await _timed(lambda: kernel.observe(sid), times["hit"], cpu["hit"])
            obs = seen.observation
            await kernel.execute(sid, obs.frame_id, obs.tree_version, TypeTextAction(text="x"))
            await asyncio.sleep(0.3)  # the echo drawn
            typed = await _timed(lambda: kernel.observe(sid), times["patched"], cpu["patched"])
            rows.append(typed.observation.timings_ms.get("ocr_rows", -1.0))
            await _timed(lambda: backend.observe(host_sid, target), times["host"])
            for path, chosen in (("ocr", engine), ("sparse", sparse)):
                read = partial(asyncio.to_thread, chosen.read, png)
                await _timed(read, times[path], cpu[path])
            if cli:
                await _timed(lambda: asyncio.to_thread(_cli, png), times["cli"])
        state = await kernel.observe(sid)
        obs = state.observation
        size = f"{obs.image.width}x{obs.image.height}" if obs.image else "?"
        print(
            f"{name}: image {size}, source={obs.tree_read.source}, "
            f"elements={obs.element_count}, version={obs.tree_version}"
        )
        for path, values in times.items():
            if not values:
                print(f"  {path:8} skipped (no tesseract CLI)")
                continue
            med, p90 = _stats(values)
            used = f"  cpu median {statistics.median(cpu[path]):6.0f} ms" if cpu[path] else ""
            print(f"  {path:8} median {med:6.0f} ms  p90 {p90:6.0f} ms{used}")
        print(f"  patched: rows read again, median {statistics.median(rows):.0f} of {size}")
        if times["cli"]:
            ratio = statistics.median(times["cli"]) / statistics.median(times["full"])
            print(f"  cli ÷ full {ratio:.2f}×")
    finally:
        await kernel.close()
        await backend.close()
        app.stop()
        shutil.rmtree(data, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--save", type=Path, help="write each state's screenshot here")
    args = parser.parse_args()
    state = vdesk.up(1280, 800)
    os.environ.update(state.env)
    try:
        load = tuple(round(v, 2) for v in os.getloadavg())
        print(f"runs={args.runs} cpus={os.cpu_count()} load={load}")
        output = "DESKPILOT-VISUAL-4711\nalpha bravo charlie\n"
        asyncio.run(_bench("output", output, args.runs, args.save))
        asyncio.run(_bench("full", FULL, args.runs, args.save))
    finally:
        vdesk.down(state)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
