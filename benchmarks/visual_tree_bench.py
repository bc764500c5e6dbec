"""Visual tree of a 1280x800 terminal: observe → OCR outline, beside the page path it replaced.

Run: ``.venv/bin/python benchmarks/visual_tree_bench.py [--runs N]``

Target (issue #17): ≤ 700 ms median for the visual tree of a 1280x800 terminal window on
the 2-core CI machine, nothing cached. Starts its own private desktop (Xvfb 1280x800 +
D-Bus), the host, a kernel, and xterm (DejaVu Sans Mono 14, 116x34 cells: the whole screen)
in two states:

* ``output``: a known command output, two short lines (the tests' xterm);
* ``full``: every row of the terminal full of text (33 rows of ``ls -l``-like lines, ~2,900
  characters): the worst case, OCR time grows with the text;
* ``colour``: 33 rows of ``ls -l --color``-like lines, the file names bold green, cyan,
  blue or yellow as ``ls`` colours them (the terminal engine's grayscale, for accuracy).

Measured per state, N runs of each path interleaved (after one warm-up each), median and p90
of the wall time, and the CPU time of this process (all threads: the wall time a load of other
processes cannot inflate):

* full: ``Kernel.observe`` as shipped, nothing cached: the window's last frame *and* the
  terminal engine's glyphs forgotten first (vision/glyphs.py): the host's observe (window,
  capture, PNG) and the kernel's OCR outline of the whole frame (kernel/visual_tree.py),
  read as a grid of cells, each distinct glyph by tesseract once — the target's number;
* page: the same with the terminal engine's grid reading off (``glyphs = None``,
  luminance grayscale): the whole frame read by tesseract as one uniform block of text in
  two bands at once, the path before this change, in the same run (the baseline);
* known: ``Kernel.observe`` of a frame not seen before (last frame forgotten) whose glyphs
  are all known: no tesseract at all;
* hit: ``Kernel.observe`` again, nothing changed: the last reading reused
  (vision/incremental.py), no OCR;
* patched: ``Kernel.observe`` after one character was typed at the prompt
  (``TypeTextAction`` through the kernel): only the rows that changed are read again;
* host: ``HostBackend.observe`` alone (no OCR): what the observation cost before;
* ocr / ocr-page: ``OcrEngine.read`` of the same PNG by the terminal engine, glyphs
  forgotten / grid off: the engine's part of full and page;
* sparse: the same PNG with the screenshot engine (sparse text), what a terminal cost before
  ``engine_for``;
* cli: the ``tesseract`` CLI per call on the same PNG (``--oem 1 --psm 11 tsv``,
  ``OMP_THREAD_LIMIT=1``), the reading alone, no outline (docs/benchmarks.md "OCR").

Accuracy: the bench knows the text it put on the screen. For full and page (the outline's
``text`` elements of the first run's observation, before anything is typed) it prints the
characters read correctly (matched in order, whitespace collapsed, of all shown) and the
rows read exactly, and for full the rows tesseract read (the rest written from glyphs).
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

os.environ.setdefault("OMP_THREAD_LIMIT", "1")
os.environ.setdefault("DESKPILOT_HOST_LOCAL_TRUST", "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from deskpilot import desktop as vdesk
from deskpilot.desktop.apps import App, launch

if TYPE_CHECKING:
    from deskpilot.vision.ocr import OcrEngine

T = TypeVar("T")

FULL = "\n".join(
    f"-rw-r--r-- 1 root root {1000 + 37 * i:6d} Dec  1 21:{i % 60:02d} report-{i:03d}.txt "
    f"invoice total window keyboard {i * 7}"
    for i in range(33)
)
OUTPUT = "DESKPILOT-VISUAL-4711\nalpha bravo charlie\n"
_COLOURS = ("01;32", "01;36", "01;34", "00;33")  # ls --color: executable, link, directory, fifo
COLOUR = "\n".join(
    f"-rwxr-xr-x 1 root root {2000 + 53 * i:6d} Dec  2 09:{i % 60:02d} "
    f"\\033[{_COLOURS[i % 4]}mtool-{i:03d}.bin\\033[0m -> target window {i * 3}"
    for i in range(33)
)
PATHS = ("full", "page", "known", "hit", "patched", "host", "ocr", "ocr-page", "sparse", "cli")


def _xterm(text: str) -> App:
    path = shutil.which("xterm")
    if path is None:
        raise SystemExit("xterm is not installed (apt-get install xterm)")
    script = f"printf '%b' '{text}'; exec sleep 3600"
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


def _accuracy(read: list[str], shown: str) -> str:
    """Characters of ``shown`` read correctly (in order, whitespace collapsed) and rows
    read exactly."""
    plain = re.sub(r"\\033\[[0-9;]*m", "", shown)  # the colours' escapes
    expected = [" ".join(line.split()) for line in plain.splitlines() if line.strip()]
    got = [" ".join(line.split()) for line in read if line.strip()]
    a, b = "\n".join(expected), "\n".join(got)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    chars = sum(block.size for block in matcher.get_matching_blocks())
    exact = sum(1 for line in expected if line in got)
    return f"chars {chars}/{len(a)} (read {len(b)}), rows exact {exact}/{len(expected)}"


@contextmanager
def _page_path(engine: OcrEngine) -> Iterator[None]:
    """``engine`` reading as before this change: no grid of glyphs, luminance grayscale."""
    glyphs, colour = engine.glyphs, engine.colour_text
    engine.glyphs, engine.colour_text = None, False
    try:
        yield
    finally:
        engine.glyphs, engine.colour_text = glyphs, colour


async def _bench(name: str, text: str, runs: int, save: Path | None = None) -> None:
    from deskpilot.hostclient.backend import HostBackend
    from deskpilot.hostclient.config import HostConfig
    from deskpilot.kernel import Kernel
    from deskpilot.kernel.flags import Flags
    from deskpilot.protocol.session import TaskContract
    from deskpilot.protocol.tree import parse_tree
    from deskpilot.protocol.wire import TargetSpec, TypeTextAction
    from deskpilot.store.db import Database
    from deskpilot.vision import pool
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
        glyphs = engine.glyphs
        assert glyphs is not None, "the terminal engine reads no grid"
        pool.start(engine)  # the partner reading a second row (or band) at once
        times: dict[str, list[float]] = {p: [] for p in PATHS}
        cpu: dict[str, list[float]] = {p: [] for p in PATHS}
        rows: list[float] = []
        ocr_rows: list[int] = []
        outlines: dict[str, list[str]] = {}
        cli = shutil.which("tesseract") is not None
        await asyncio.to_thread(sparse.read, png)
        with _page_path(engine):
            await asyncio.to_thread(engine.read, png)

        def texts(observed: object) -> list[str]:
            tree = parse_tree(observed.observation.tree)  # type: ignore[attr-defined]
            return [e.name for e in tree.elements.values() if e.role == "text"]

        for _ in range(runs):
            window_reader().forget()  # the window's last frame forgotten: a full read
            glyphs.forget()  # and every glyph: nothing cached
            before = glyphs.rows_read
            seen = await _timed(lambda: kernel.observe(sid), times["full"], cpu["full"])
            ocr_rows.append(glyphs.rows_read - before)
            outlines.setdefault("full", texts(seen))  # before anything is typed
            window_reader().forget()
            with _page_path(engine):
                paged = await _timed(lambda: kernel.observe(sid), times["page"], cpu["page"])
            outlines.setdefault("page", texts(paged))
            window_reader().forget()  # a frame not seen, its glyphs known
            await _timed(lambda: kernel.observe(sid), times["known"], cpu["known"])
            seen = await _timed(lambda: kernel.observe(sid), times["hit"], cpu["hit"])
            obs = seen.observation
            await kernel.execute(sid, obs.frame_id, obs.tree_version, TypeTextAction(text="x"))
            await asyncio.sleep(0.3)  # the echo drawn
            typed = await _timed(lambda: kernel.observe(sid), times["patched"], cpu["patched"])
            rows.append(typed.observation.timings_ms.get("ocr_rows", -1.0))
            await _timed(lambda: backend.observe(host_sid, target), times["host"])
            glyphs.forget()
            await _timed(partial(asyncio.to_thread, engine.read, png), times["ocr"], cpu["ocr"])
            with _page_path(engine):
                read = partial(asyncio.to_thread, engine.read, png)
                await _timed(read, times["ocr-page"], cpu["ocr-page"])
            read = partial(asyncio.to_thread, sparse.read, png)
            await _timed(read, times["sparse"], cpu["sparse"])
            if cli:
                await _timed(lambda: asyncio.to_thread(_cli, png), times["cli"])
        obs = state.observation
        size = f"{obs.image.width}x{obs.image.height}" if obs.image else "?"
        print(f"{name}: image {size}, source={obs.tree_read.source}")
        for path, values in times.items():
            if not values:
                print(f"  {path:8} skipped (no tesseract CLI)")
                continue
            med, p90 = _stats(values)
            used = f"  cpu median {statistics.median(cpu[path]):6.0f} ms" if cpu[path] else ""
            print(f"  {path:8} median {med:6.0f} ms  p90 {p90:6.0f} ms{used}")
        print(f"  patched: rows read again, median {statistics.median(rows):.0f} of {size}")
        print(f"  full: rows tesseract read, median {statistics.median(ocr_rows):.0f}")
        for path in ("full", "page"):
            print(f"  accuracy {path:5} {_accuracy(outlines[path], text)}")
        ratio = statistics.median(times["page"]) / statistics.median(times["full"])
        cpu_ratio = statistics.median(cpu["page"]) / statistics.median(cpu["full"])
        print(f"  page ÷ full {ratio:.2f}× wall, {cpu_ratio:.2f}× cpu")
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
        asyncio.run(_bench("output", OUTPUT, args.runs, args.save))
        asyncio.run(_bench("full", FULL, args.runs, args.save))
        asyncio.run(_bench("colour", COLOUR, args.runs, args.save))
        load = tuple(round(v, 2) for v in os.getloadavg())
        print(f"load at the end={load}")
    finally:
        vdesk.down(state)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
