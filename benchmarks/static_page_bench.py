"""Re-observing a quiet Chromium page, before and after Chromium is trusted without an event.

The tree cache reads an app in full on every look until the app has sent one accessibility
event since the host registered (host/atspi/tree_cache.py): some apps send none, and what
they change would pass for a hit. A page that was loaded before the host came and then left
alone (the person's browser on a document) sends nothing, so it was read in full every time.
Chromium's cached reads check the tree's shape anyway, so it is now trusted from its first
read.

Starts its own private desktop (Xvfb 1280x800 + D-Bus + AT-SPI) and Chromium on
observe_bench.py's page (300 list items, ~1,730 nodes), loaded and quiet before any host,
then, in the same run, for two host processes in turn:

* ``before`` — the committed tree (``git archive HEAD src``) on ``PYTHONPATH``; pass
  ``--before-rev`` to pick another revision;
* ``after``  — this work tree's host.

Each host observes the page (no screenshot) ``--runs`` times; the table gives the median and
p90 time to the answer, the cache states and whether every answer had the same tree version.

Usage: ``.venv/bin/python benchmarks/static_page_bench.py [--runs N] [--before-rev REV]``.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "host"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from host_harness import HostProcess, observe_until  # noqa: E402

from deadline_bench import committed_src, timed_observe  # noqa: E402
from deskpilot import desktop as vdesk  # noqa: E402
from deskpilot.desktop import apps as dapps  # noqa: E402
from observe_bench import ITEMS, page_html, serve  # noqa: E402


def measure(label: str, extra_env: dict[str, str], pid: int, runs: int) -> None:
    with HostProcess(extra_env) as host:
        observe_until(host, {"pid": pid}, rf"Item {ITEMS - 1}\b", "s", timeout=60)
        times: list[float] = []
        states: collections.Counter[str] = collections.Counter()
        versions: set[str] = set()
        for _ in range(runs):
            obs, ms = timed_observe(host, pid, "s", screenshot=False)
            times.append(ms)
            states[(obs.get("treeRead") or {}).get("cache") or "?"] += 1
            versions.add(obs["treeVersion"])
    p90 = sorted(times)[int(len(times) * 0.9)]
    print(
        f"| {label} | {statistics.median(times):.1f} ms | {p90:.1f} ms | "
        f"{', '.join(f'{k} {v}' for k, v in sorted(states.items()))} | "
        f"{'one' if len(versions) == 1 else len(versions)} |",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=41)
    ap.add_argument("--before-rev", default="HEAD")
    ap.add_argument("--load-s", type=float, default=6.0, help="time for the page to load")
    args = ap.parse_args()
    before = committed_src(args.before_rev)
    state = vdesk.up(1280, 800)
    os.environ.update(state.env)
    site = Path(tempfile.mkdtemp(prefix="deskpilot-bench-site-"))
    (site / "index.html").write_text(page_html("Quiet page"))
    server, url = serve(site)
    chrome = dapps.launch_chromium(url)
    try:
        dapps.wait_accessible(pid=chrome.pid, timeout=60)
        time.sleep(args.load_s)
        print(f"# Xvfb 1280x800, {os.cpu_count()} CPUs, runs={args.runs}, a quiet page")
        print("| host | observe, median | p90 | cache states | tree versions |")
        print("|---|---|---|---|---|")
        measure(f"before ({args.before_rev})", {"PYTHONPATH": str(before)}, chrome.pid, args.runs)
        measure("after", {}, chrome.pid, args.runs)
    finally:
        chrome.stop()
        server.shutdown()
        vdesk.down(state)


if __name__ == "__main__":
    main()
