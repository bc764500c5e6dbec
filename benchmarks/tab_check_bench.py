"""What the Chromium tab-name check costs a cache hit (atspi/tree_patch.py ``_same_tab_names``).

A hit of a Chromium window checks the tree's shape (one ``Collection.GetMatches``) and, beside
it, the names of the window's tabs (one batch of ``Get Name``): Chromium renames a tab with no
event (its memory figure), and the cache had served a stale name. This starts its own private
desktop and Chromium on observe_bench.py's page (300 items, ~1,750 nodes), then reads the
unchanged window through the cache, alternating runs with the tab check and with it replaced
by one that answers at once, and prints the medians and their ratio.

Usage: ``.venv/bin/python benchmarks/tab_check_bench.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from deskpilot.desktop import apps as dapps
from deskpilot.host.atspi import AtspiClient, tree_patch
from observe_bench import find_frame, page_desktop


async def run(runs: int, url: str) -> None:
    chrome = dapps.launch_chromium(url)
    try:
        frame = await find_frame(chrome.pid, "Bench page")
        async with await AtspiClient.connect() as client:
            await asyncio.sleep(6.0)  # the page loaded, the tab's memory figure shown
            real = tree_patch._same_tab_names

            async def skipped(conn: object, nodes: object) -> bool:
                return True

            times: dict[str, list[float]] = {"with": [], "without": []}
            kinds: dict[str, set[str]] = {"with": set(), "without": set()}
            await client.snapshot(frame.ref)
            for i in range(2 * runs):
                which = "with" if i % 2 == 0 else "without"
                tree_patch._same_tab_names = real if which == "with" else skipped  # type: ignore[assignment]
                t = time.perf_counter()
                snap = await client.snapshot(frame.ref)
                times[which].append((time.perf_counter() - t) * 1000)
                kinds[which].add(snap.cache_state)
            tree_patch._same_tab_names = real
            w, wo = statistics.median(times["with"]), statistics.median(times["without"])
            print(f"chromium hit with tab check: median {w:.2f} ms ({sorted(kinds['with'])})")
            print(f"chromium hit without:        median {wo:.2f} ms ({sorted(kinds['without'])})")
            print(f"ratio with/without: {w / wo:.3f} over {runs} runs each, interleaved")
    finally:
        chrome.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=41)
    args = ap.parse_args()
    with page_desktop() as (_state, url):
        asyncio.run(run(args.runs, url))


if __name__ == "__main__":
    main()
