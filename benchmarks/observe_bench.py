"""Observe speed: tree snapshot + render vs the naive walker, and a full in-process observe.

Starts its own private desktop (Xvfb 1280x800 + D-Bus + AT-SPI), gnome-calculator and
Chromium showing a page of 300 list items (~1,750 accessible nodes) served on loopback, then
measures, in the same run:

* ``snapshot``  — ``AtspiClient.snapshot`` of the app's frame (read + details + render);
  *cold* = a new client (no connections, no per-app knowledge) for every run,
  *warm* = one client reused;
* ``baseline``  — benchmarks/baseline_walker.py over the same frame;
* ``observe``   — the host's in-process observer (window lookup, frame match, tree,
  screenshot capture and PNG encode), when ``deskpilot.host.observer`` is importable;
* ``render``    — rendering 100,000 synthetic elements (all shown, and with the defaults).

Usage: ``.venv/bin/python benchmarks/observe_bench.py [--runs N]``; prints medians and ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.server
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dbus_fast.aio import MessageBus

from baseline_walker import walk as baseline_walk
from deskpilot import desktop as vdesk
from deskpilot.desktop import apps as dapps
from deskpilot.host.atspi import AtspiClient, FrameInfo, RenderOptions, render
from deskpilot.host.atspi.bus import a11y_address, connect_session
from deskpilot.host.atspi.collect import RawNode
from deskpilot.host.atspi.vocab import ROLE_NUMBER, State, bit

ITEMS = 300


def page_html(
    title: str = "Bench page",
    controls: str = "<button onclick=\"this.textContent='done'\">Press me</button>",
) -> str:
    """The bench page: a heading, ``controls``, then ITEMS list items (~1,730 nodes)."""
    items = "".join(f'<li><a href="#i{i}">Item {i}</a> detail {i}</li>' for i in range(ITEMS))
    return (
        f"<!doctype html><html><head><title>{title}</title></head><body><h1>Items</h1>"
        f"{controls}<ul>{items}</ul></body></html>"
    )


def serve(root: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), partial(Handler, directory=str(root))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/index.html"


async def timed(fn: Callable[[], Awaitable[Any]], runs: int) -> tuple[float, Any]:
    samples: list[float] = []
    last: Any = None
    for _ in range(runs):
        t = time.perf_counter()
        last = await fn()
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples), last


async def find_frame(pid: int, title_prefix: str, timeout: float = 60) -> FrameInfo:
    deadline = time.monotonic() + timeout
    async with await AtspiClient.connect() as client:
        while time.monotonic() < deadline:
            for f in await client.frames(pid=pid):
                if f.title.startswith(title_prefix) and {"visible", "showing"} & f.states:
                    return f
            await asyncio.sleep(0.2)
    raise SystemExit(f"no frame {title_prefix!r} for pid {pid}")


async def wait_content(frame: FrameInfo, needle: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    async with await AtspiClient.connect() as client:
        while time.monotonic() < deadline:
            if needle in (await client.snapshot(frame.ref)).text:
                return
            await asyncio.sleep(0.3)
    raise SystemExit(f"{needle!r} never appeared")


async def bench_app(label: str, frame: FrameInfo, runs: int, baseline_runs: int) -> dict[str, Any]:
    async def cold() -> Any:
        client = await AtspiClient.connect()
        try:
            return await client.snapshot(frame.ref)
        finally:
            await client.close()

    warm_client = await AtspiClient.connect()
    await warm_client.snapshot(frame.ref)
    cold_ms, snap = await timed(cold, runs)
    warm_ms, _ = await timed(lambda: warm_client.snapshot(frame.ref), runs)
    await warm_client.close()

    session = await connect_session(None)
    bus = await MessageBus(bus_address=await a11y_address(session)).connect()
    base_ms, base = await timed(
        lambda: baseline_walk(bus, frame.ref.bus_name, frame.ref.path), baseline_runs
    )
    bus.disconnect()
    session.disconnect()
    row = {
        "app": label,
        "nodes": snap.node_count,
        "elements": snap.element_count,
        "strategy": snap.strategy,
        "cold_ms": cold_ms,
        "warm_ms": warm_ms,
        "baseline_ms": base_ms,
        "baseline_nodes": base[1],
        "baseline_calls": base[2],
    }
    print(
        f"{label:<18} nodes={snap.node_count:<5} shown={snap.element_count:<5} "
        f"strategy={snap.strategy:<10} snapshot cold {cold_ms:7.1f} ms  warm {warm_ms:7.1f} ms  "
        f"| baseline {base_ms:8.1f} ms ({base[1]} nodes, {base[2]} calls)  "
        f"ratio cold {base_ms / cold_ms:5.1f}x  warm {base_ms / warm_ms:5.1f}x",
        flush=True,
    )
    return row


async def bench_observe(pid: int, runs: int, base_ms: float, label: str) -> None:
    try:
        from deskpilot.host.accessibility import Accessibility
        from deskpilot.host.observer import Observer
        from deskpilot.host.x11.desktop import X11Desktop
        from deskpilot.protocol.wire import Observe, TargetSpec
    except ImportError as exc:
        print(f"{label:<18} full observe: host observer not available ({exc})")
        return
    desktop = X11Desktop()
    acc = await Accessibility.connect()
    observer = Observer(desktop, acc)
    request = Observe(id=1, target=TargetSpec(pid=pid))
    await observer.observe(request)
    ms, (body, png) = await timed(lambda: observer.observe(request), runs)
    print(
        f"{label:<18} full observe (window + tree + capture + PNG): {ms:7.1f} ms  "
        f"elements={body.element_count} png={len(png or b'') // 1024} KiB  "
        f"ratio vs baseline tree alone {base_ms / ms:5.1f}x  timings={body.timings_ms}",
        flush=True,
    )
    if acc is not None:
        await acc.close()
    desktop.close()


def synthetic(n_groups: int = 1000, per_group: int = 99) -> list[RawNode]:
    vis = bit(State.VISIBLE) | bit(State.SHOWING) | bit(State.SENSITIVE)
    nodes = [RawNode(":1.1", "/0", role=ROLE_NUMBER["frame"], name="Big", states=vis)]
    roles = [ROLE_NUMBER[r] for r in ("push button", "label", "link", "check box", "image")]
    for g in range(n_groups):
        gi = len(nodes)
        grp = RawNode(":1.1", f"/{gi}", parent=0, depth=1, role=ROLE_NUMBER["panel"], states=vis)
        grp.name = f"Group {g}" if g % 3 else ""
        nodes.append(grp)
        nodes[0].children.append(gi)
        for i in range(per_group):
            ci = len(nodes)
            role = roles[i % len(roles)]
            c = RawNode(":1.1", f"/{ci}", parent=gi, depth=2, role=role, states=vis)
            c.name = "" if role == ROLE_NUMBER["image"] else f"Element {g}.{i} ✓"
            c.actions = ("click",) if role != ROLE_NUMBER["label"] else None
            nodes.append(c)
            grp.children.append(ci)
    return nodes


def bench_render(runs: int) -> None:
    nodes = synthetic()
    full = RenderOptions(max_elements=100_000, text_budget=50_000_000, max_children=100_000)
    samples = []
    out = render(nodes, full)
    for _ in range(runs):
        t = time.perf_counter()
        out = render(nodes, full)
        samples.append((time.perf_counter() - t) * 1000)
    samples_d = []
    out_d = render(nodes)
    for _ in range(runs):
        t = time.perf_counter()
        out_d = render(nodes)
        samples_d.append((time.perf_counter() - t) * 1000)
    print(
        f"render synthetic   {len(nodes):,} nodes: all shown ({out.element_count:,} elements, "
        f"{len(out.text) // 1024} KiB) {statistics.median(samples):7.1f} ms  | defaults "
        f"({out_d.element_count:,} shown, {out_d.omitted:,} omitted) "
        f"{statistics.median(samples_d):7.1f} ms",
        flush=True,
    )


async def run(args: argparse.Namespace, state: vdesk.DesktopState, url: str) -> None:
    calc = dapps.launch(["gnome-calculator"])
    chrome = dapps.launch_chromium(url)
    try:
        calc_frame = await find_frame(calc.pid, "Calculator")
        chrome_frame = await find_frame(chrome.pid, "Bench page")
        await wait_content(chrome_frame, f"Item {ITEMS - 1}")
        print(f"# Xvfb {state.width}x{state.height}, {os.cpu_count()} CPUs, runs={args.runs}")
        calc_row = await bench_app("gnome-calculator", calc_frame, args.runs, args.baseline_runs)
        chrome_row = await bench_app(
            "chromium 300 items", chrome_frame, args.runs, args.baseline_runs
        )
        await bench_observe(calc.pid, args.runs, calc_row["baseline_ms"], "gnome-calculator")
        await bench_observe(chrome.pid, args.runs, chrome_row["baseline_ms"], "chromium 300 items")
        bench_render(max(3, args.runs // 2))
    finally:
        calc.stop()
        chrome.stop()


@contextlib.contextmanager
def page_desktop() -> Iterator[tuple[vdesk.DesktopState, str]]:
    """A private 1280x800 desktop (its environment set in this process) and the bench page
    served on loopback: the desktop and the page's URL; both ended afterwards."""
    state = vdesk.up(1280, 800)
    os.environ.update(state.env)
    site = Path(tempfile.mkdtemp(prefix="deskpilot-bench-site-"))
    (site / "index.html").write_text(page_html())
    server, url = serve(site)
    try:
        yield state, url
    finally:
        server.shutdown()
        vdesk.down(state)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--baseline-runs", type=int, default=3)
    args = ap.parse_args()
    with page_desktop() as (state, url):
        asyncio.run(run(args, state, url))


if __name__ == "__main__":
    main()
