"""The tree cache: re-observing a window unchanged, after one changed label, and cold.

Starts its own private desktop (Xvfb 1280x800 + D-Bus + AT-SPI) and Chromium showing
observe_bench.py's page of 300 list items (~1,750 accessible nodes) plus a button that edits
one label's text in place — *before* any accessibility client exists ("loaded first": the
person's browser, already open when the host comes; atk-bridge builds its cache of the page
when the first listener registers). Then it connects the clients and starts gnome-calculator
and a second Chromium with the same page ("loaded after": atk-bridge's cache then misses the
page, which Chromium builds without children-changed, and a read grafts it in with
Collection). Last, when the system python3 has PyQt6, a Qt 6 window (tests/host/mutating_qt_app.py),
which is never served from the cache (its "unchanged" reads are full reads). Measured in the
same run, per app:

* ``cold``      — a new client per run (no connections, nothing known, nothing kept);
* ``full``      — ``AtspiClient.snapshot`` with the cache off, one client reused;
* ``unchanged`` — the same with the cache on, the window not changed in between
  (every ``VERIFY_EVERY``-th read is a full one, by design: the median shows the hit);
* ``label``     — after one label changed (the calculator: a digit pressed, its display
  changes; the page: the button's handler edits a text node), the first read;
* ``baseline``  — benchmarks/baseline_walker.py (OSWorld's getter, call after call).

Usage: ``.venv/bin/python benchmarks/tree_cache_bench.py [--runs N] [--baseline-runs N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dbus_fast.aio import MessageBus

from baseline_walker import walk as baseline_walk
from deskpilot import desktop as vdesk
from deskpilot.desktop import apps as dapps
from deskpilot.host.atspi import AtspiClient, FrameInfo, SemanticOp, collect
from deskpilot.host.atspi.bus import a11y_address, connect_session
from observe_bench import ITEMS, find_frame, page_html, serve

SYSTEM_PYTHON = "/usr/bin/python3"
QT_APP = Path(__file__).resolve().parent.parent / "tests" / "host" / "mutating_qt_app.py"

#: a label and a button whose handler edits the label's text node in place
CONTROLS = (
    '<p id="lab">Count 0</p>'
    "<button onclick=\"const t = document.getElementById('lab').firstChild;"
    " t.data = 'Count ' + (++window.k)\">Press me</button><script>window.k = 0</script>"
)


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


async def measure(
    label: str,
    frame: FrameInfo,
    cached: AtspiClient,
    full: AtspiClient,
    press: str,
    runs: int,
    baseline_runs: int,
) -> None:
    ref = frame.ref
    cold: list[float] = []
    for _ in range(max(3, runs // 4)):
        t = time.perf_counter()
        client = await AtspiClient.connect()
        try:
            snap = await client.snapshot(ref)
        finally:
            await client.close()
        cold.append((time.perf_counter() - t) * 1000)
    full_ms: list[float] = []
    for _ in range(runs):
        t = time.perf_counter()
        fsnap = await full.snapshot(ref)
        full_ms.append((time.perf_counter() - t) * 1000)
    await cached.snapshot(ref)
    unchanged: list[float] = []
    kinds: collections.Counter[str] = collections.Counter()
    for _ in range(runs):
        t = time.perf_counter()
        s = await cached.snapshot(ref)
        unchanged.append((time.perf_counter() - t) * 1000)
        kinds[s.cache_state] += 1
        assert s.text == fsnap.text, "a cached read differs from the full one"
    button = next(e for e in fsnap.elements.values() if e.role == "button" and e.name == press)
    changed: list[float] = []
    ckinds: collections.Counter[str] = collections.Counter()
    differed: list[str] = []
    steps: list[dict[str, float]] = []
    for _ in range(max(5, runs // 2)):
        await full.perform(button, SemanticOp.invoke(), settle=True)
        t = time.perf_counter()
        s = await cached.snapshot(ref)
        changed.append((time.perf_counter() - t) * 1000)
        ckinds[s.cache_state] += 1
        steps.append(s.timings_ms)
        f = await full.snapshot(ref)
        if s.text != f.text:  # say so (and which line), do not hide it
            ckinds["differed"] += 1
            await cached.settle(ref.bus_name, first_ms=300, quiet_ms=200)
            if (await cached.snapshot(ref)).text != (await full.snapshot(ref)).text:
                ckinds["still differed after quiet"] += 1
            a, b = s.text.splitlines(), f.text.splitlines()
            first = next(
                (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                min(len(a), len(b)),
            )
            differed.append(
                f"{a[first] if first < len(a) else ''!r} vs {b[first] if first < len(b) else ''!r}"
            )
    session = await connect_session(None)
    bus = await MessageBus(bus_address=await a11y_address(session)).connect()
    base: list[float] = []
    for _ in range(baseline_runs):
        t = time.perf_counter()
        await baseline_walk(bus, ref.bus_name, ref.path)
        base.append((time.perf_counter() - t) * 1000)
    bus.disconnect()
    session.disconnect()
    b = median(base)
    conn = await cached._conn_for(ref.bus_name)
    items = await collect.read_cache(conn, ref.bus_name) or []
    missed = len(collect.from_cache(items, ref.path, 10_000, hidden_too=True)[1])
    print(f"{label:<24} the app's own cache: {len(items)} items, {missed} subtrees missed")
    print(
        f"{label:<24} nodes={snap.node_count:<5} shown={snap.element_count:<4} | "
        f"cold {median(cold):7.1f} ms ({b / median(cold):5.1f}x getter) | "
        f"full {median(full_ms):7.1f} ms | unchanged {median(unchanged):6.2f} ms "
        f"(p90 {sorted(unchanged)[int(len(unchanged) * 0.9)]:6.2f}, {dict(kinds)}) | "
        f"one label {median(changed):6.2f} ms ({dict(ckinds)}) | getter {b:8.1f} ms",
        flush=True,
    )
    keys = sorted({k for t in steps for k in t})
    parts = ", ".join(f"{k} {median([t[k] for t in steps if k in t]):.2f}" for k in keys)
    print(f"{'':<24} after one label, median ms per step: {parts}")
    for line in sorted(set(differed)):
        print(f"{'':<24} a cached read after a change differed from the full one: {line}")


def _launch_qt() -> subprocess.Popen[bytes] | None:
    """tests/host/mutating_qt_app.py (a Qt 6 window with an "Increment" button that counts
    in a label), when the system python3 has PyQt6; None otherwise. Its stdin stays open: it
    ends at end of input."""
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import PyQt6.QtWidgets"], capture_output=True)
    if probe.returncode != 0:
        print("# no PyQt6 for the system python3: the Qt row is left out")
        return None
    env = dict(os.environ, QT_LINUX_ACCESSIBILITY_ALWAYS_ON="1", QT_QPA_PLATFORM="xcb")
    return subprocess.Popen(
        [SYSTEM_PYTHON, str(QT_APP), "3"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def wait_loaded(client: AtspiClient, frame: FrameInfo) -> None:
    deadline = time.monotonic() + 60
    while f"Item {ITEMS - 1}" not in (await client.snapshot(frame.ref)).text:
        if time.monotonic() > deadline:
            raise SystemExit("the page never loaded")
        await asyncio.sleep(0.3)


async def run(args: argparse.Namespace, first_url: str, url: str) -> None:
    # the page loaded before any listener: atk-bridge's cache (made when the first one
    # registers) holds it
    first = dapps.launch_chromium(first_url)
    await dapps.wait_accessible_async(pid=first.pid, timeout=60)
    await asyncio.sleep(args.load_s)
    cached = await AtspiClient.connect()
    full = await AtspiClient.connect()
    full.tree_cache.enabled = False
    calc = dapps.launch(["gnome-calculator"])
    chrome = dapps.launch_chromium(url)
    qt = _launch_qt()
    try:
        first_frame = await find_frame(first.pid, "First page")
        calc_frame = await find_frame(calc.pid, "Calculator")
        chrome_frame = await find_frame(chrome.pid, "Bench page")
        await wait_loaded(full, first_frame)
        await wait_loaded(full, chrome_frame)
        await asyncio.sleep(1.0)
        print(f"# Xvfb 1280x800, {os.cpu_count()} CPUs, runs={args.runs}")
        apps = [
            ("gnome-calculator", calc_frame, "7 7"),
            ("chromium, loaded after", chrome_frame, "Press me"),
            ("chromium, loaded first", first_frame, "Press me"),
        ]
        if qt is not None:  # Qt is read in full every time (docs/host-tree.md, "Qt")
            qt_frame = await find_frame(qt.pid, "Mutating Qt")
            apps.append(("qt 6 (python3-pyqt6)", qt_frame, "Increment"))
        for label, frame, press in apps:
            await measure(label, frame, cached, full, press, args.runs, args.baseline_runs)
    finally:
        await cached.close()
        await full.close()
        if qt is not None:
            qt.kill()
            qt.wait()
        calc.stop()
        chrome.stop()
        first.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=41)
    ap.add_argument("--baseline-runs", type=int, default=3)
    ap.add_argument("--load-s", type=float, default=6.0, help="time for the first page to load")
    args = ap.parse_args()
    state = vdesk.up(1280, 800)
    os.environ.update(state.env)
    site = Path(tempfile.mkdtemp(prefix="deskpilot-bench-site-"))
    (site / "index.html").write_text(page_html(controls=CONTROLS))
    (site / "first.html").write_text(page_html("First page", CONTROLS))
    server, url = serve(site)
    try:
        asyncio.run(run(args, url.replace("index.html", "first.html"), url))
    finally:
        server.shutdown()
        vdesk.down(state)


if __name__ == "__main__":
    main()
