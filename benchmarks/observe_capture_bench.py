"""An observe with a short tree deadline on a big window: does the screenshot eat the deadline?

The host used to grab the screenshot on its event loop, synchronously, while the tree read's
D-Bus replies waited behind it: on Xvfb without MIT-SHM a 1280×800 GetImage is 4 MB through the
X socket (≈ 3–70 ms depending on load), all of it lost to a read whose deadline was already
counting. Now the grab (and the PNG encoding) runs on a capture thread of its own with its
own X connection, next to the read.

Starts its own private desktop (Xvfb 1280×800 + D-Bus + AT-SPI) and a Chromium window of
1280×800 showing a long page (``--items`` rows of a button and a text each), then in the same
run two host processes — ``before`` (this work tree's ``src`` with the files of this change,
``CHANGED``, as they were at ``REV``, on ``PYTHONPATH``: only the capture differs) and
``after`` (this work tree) — each with ``DESKPILOT_TREE_DEADLINE_MS`` (300 by default) and the tree
cache off (``DESKPILOT_TREE_CACHE=0``: every read is a fresh read, the case a deadline is
for). Observes alternate between the two hosts, with a screenshot and without one; per
observe: time to the answer, how many elements the tree got by the deadline, whether it was
cut (``partial``), and the grab's own time.

Usage: ``.venv/bin/python benchmarks/observe_capture_bench.py [--runs N] [--items N]
[--deadline-ms MS] [--before-rev REV]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "host"))
sys.path.insert(0, str(ROOT / "tests"))

from host_harness import HostProcess, wait_for  # noqa: E402

from deskpilot import desktop as vdesk  # noqa: E402
from deskpilot.desktop import apps  # noqa: E402
from desktop_kit import served  # noqa: E402

#: the files of the change measured here: the grab on the event loop → the capture thread
CHANGED = (
    "src/deskpilot/host/observer.py",
    "src/deskpilot/host/x11/capture.py",
    "src/deskpilot/host/x11/desktop.py",
)


def work_tree_with(rev: str) -> Path:
    """A copy of this work tree's ``src`` with the ``CHANGED`` files as they were at
    ``rev``: everything else — the tree read above all — is the same code as ``after``."""
    out = Path(tempfile.mkdtemp(prefix="deskpilot-before-"))
    shutil.copytree(
        ROOT / "src", out / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    for path in CHANGED:
        old = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:{path}"], check=True, capture_output=True
        ).stdout
        (out / path).write_bytes(old)
    return out / "src"


def page(items: int) -> str:
    rows = "".join(f"<li><button>Row {i}</button> detail {i}</li>" for i in range(items))
    return (
        "<!doctype html><html><head><title>Capture page</title></head><body>"
        f"<h1>Capture page</h1><ul>{rows}</ul><p>Last line</p></body></html>"
    )


def loaded(host: HostProcess, pid: int) -> bool:
    """The page's rows are in a complete read (a generous deadline)."""
    obs = host.call(
        {
            "type": "observe",
            "target": {"pid": pid},
            "treeDeadlineMs": 5000,
            "includeScreenshot": False,
        },
        30.0,
    )
    read = obs.get("treeRead") or {}
    return "Row 99" in obs.get("tree", "") and read.get("partial") is None


def observe(host: HostProcess, pid: int, screenshot: bool) -> dict[str, Any]:
    t0 = time.perf_counter()
    obs = host.call(
        {
            "type": "observe",
            "target": {"pid": pid},
            "sessionId": "bench",
            "includeScreenshot": screenshot,
        },
        30.0,
    )
    assert obs["type"] == "observation", obs
    read = obs.get("treeRead") or {}
    return {
        "ms": (time.perf_counter() - t0) * 1000,
        "elements": obs["elementCount"],
        "partial": read.get("partial") is not None,
        "stale": read.get("staleAgeMs") is not None,
        "capture": obs["timingsMs"].get("capture"),
        "tree": obs["timingsMs"].get("tree"),
    }


def summary(label: str, rows: list[dict[str, Any]]) -> str:
    def med(key: str) -> str:
        found = [r[key] for r in rows if r[key] is not None]
        return f"{statistics.median(found):.1f} ms" if found else "—"

    elements = [r["elements"] for r in rows]
    cut = sum(r["partial"] or r["stale"] for r in rows)
    return (
        f"| {label} | {med('ms')} | {med('tree')} | {statistics.median(elements):.0f} "
        f"({min(elements)}–{max(elements)}) | {cut}/{len(rows)} | {med('capture')} |"
    )


@contextmanager
def big_chromium(html: str, width: int, height: int) -> Iterator[apps.App]:
    """Chromium in a ``width``×``height`` window showing ``html``."""
    with served(html) as url:
        scratch = Path(tempfile.mkdtemp(prefix="deskpilot-bench-chromium-"))
        app = apps.launch(apps.chromium_argv(url, scratch, width=width, height=height))
        try:
            apps.wait_accessible(pid=app.pid, timeout=60)
            yield app
        finally:
            app.stop()
            shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--items", type=int, default=1500)
    ap.add_argument("--size", default="2560x1600", help="the screen and the window, WxH")
    ap.add_argument("--deadline-ms", type=int, default=300)
    ap.add_argument("--before-rev", default="HEAD")
    args = ap.parse_args()
    before = work_tree_with(args.before_rev)
    env = {"DESKPILOT_TREE_DEADLINE_MS": str(args.deadline_ms), "DESKPILOT_TREE_CACHE": "0"}
    width, height = (int(v) for v in args.size.split("x"))
    state = vdesk.up(width, height)
    os.environ.update(state.env)
    try:
        with big_chromium(page(args.items), width, height) as app:
            with (
                HostProcess({**env, "PYTHONPATH": str(before)}) as old,
                HostProcess(env) as new,
            ):
                for host in (old, new):  # the page loaded and read once in full by each host
                    wait_for(lambda h=host: loaded(h, app.pid), timeout=60, interval=0.5)
                rows = end_to_end(old, new, app.pid, args.runs)
            print(
                f"observe of a {args.size} Chromium page of {args.items} rows, tree deadline "
                f"{args.deadline_ms} ms, tree cache off, {args.runs} runs each, interleaved"
            )
            print("| host | answer | tree read | elements (min–max) | cut or stale | grab |")
            print("|---|---|---|---|---|---|")
            for (label, shot), found in rows.items():
                print(summary(f"{label}, {'with' if shot else 'no'} screenshot", found))
            print()
            print("what the screenshot adds to the tree read, run by run (with − without):")
            for label in ("before", "after"):
                added = [
                    w["tree"] - n["tree"]
                    for w, n in zip(rows[label, True], rows[label, False], strict=True)
                    if w["tree"] is not None and n["tree"] is not None
                ]
                print(f"  {label}: median {statistics.median(added):+.1f} ms (n={len(added)})")
    finally:
        vdesk.down(state)


def end_to_end(
    old: HostProcess, new: HostProcess, pid: int, runs: int
) -> dict[tuple[str, bool], list[dict[str, Any]]]:
    """``runs`` observes per host, with and without a screenshot; the order turns every run
    so that no side always goes first."""
    rows: dict[tuple[str, bool], list[dict[str, Any]]] = {
        (label, shot): [] for label in ("before", "after") for shot in (True, False)
    }
    hosts = [("before", old), ("after", new)]
    for k in range(runs):
        for label, host in hosts if k % 2 == 0 else hosts[::-1]:
            for shot in (True, False) if k % 4 < 2 else (False, True):
                rows[label, shot].append(observe(host, pid, shot))
    return rows


if __name__ == "__main__":
    main()
