"""Observe of a stopped app: how long the answer takes and what it holds, before and after.

A stopped app (SIGSTOP: a debugger, a hung main loop) answers no accessibility call. Before the
read deadline (issue #17) the host's frame lookup waited 3 s for it and the observation then
had no tree (``treeVersion=t-none``); now the read ends at its deadline (1.5 s by default) and
the answer is the window's last complete tree, marked stale with its age.

Starts its own private desktop (Xvfb 1280x800 + D-Bus + AT-SPI), mousepad and
gnome-calculator, then in the same run, for two host processes:

* ``before`` — the committed tree (``git archive HEAD src``, i.e. without the uncommitted
  deadline work) on ``PYTHONPATH``; pass ``--before-rev`` to pick another revision;
* ``after``  — this work tree's host, with the default deadline and with a 300 ms one.

Each host observes mousepad (complete), mousepad is stopped, and the host is asked ``--runs``
times for mousepad (time to the answer, what the answer is) and for the calculator meanwhile
(an app that answers: it must stay fast). mousepad runs again before the next host.

Then ``list_windows`` with a stopped app (a zenity dialog stopped before the host ever listed
it) beside the calculator: the first listing's time, the next listings' median, and whether
the calculator keeps its name and the stopped app is marked (``appUnresponsiveMs``). Last,
what an MCP ``get_app_state`` asks of the host for a stopped app never read — a listing, then
an observe — the first time and later.

Usage: ``.venv/bin/python benchmarks/deadline_bench.py [--runs N] [--before-rev REV]``.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "host"))

from host_harness import HostProcess, launch_accessible, observe_until  # noqa: E402

from deskpilot import desktop as vdesk  # noqa: E402


def committed_src(rev: str) -> Path:
    """The package as committed at ``rev``, unpacked in a temp dir (the repo is only read)."""
    data = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "src"], check=True, capture_output=True
    ).stdout
    out = Path(tempfile.mkdtemp(prefix="deskpilot-before-"))
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(out, filter="data")
    return out / "src"


def timed_observe(
    host: HostProcess, pid: int, session: str, *, screenshot: bool = True
) -> tuple[dict[str, Any], float]:
    """One observe of the app's window and the time to its answer (ms)."""
    request = {"type": "observe", "target": {"pid": pid}, "sessionId": session}
    t0 = time.perf_counter()
    obs = host.call({**request, "includeScreenshot": screenshot}, 30.0)
    return obs, (time.perf_counter() - t0) * 1000


def measure(label: str, extra_env: dict[str, str], mousepad: int, calc: int, runs: int) -> None:
    with HostProcess(extra_env) as host:
        fresh = observe_until(host, {"pid": mousepad}, r"- textField", "m")
        observe_until(host, {"pid": calc}, r'button "7', "c")
        frozen_ms: list[float] = []
        calc_ms: list[float] = []
        answers: set[str] = set()
        os.kill(mousepad, signal.SIGSTOP)
        try:
            time.sleep(0.3)
            for _ in range(runs):
                obs, ms = timed_observe(host, mousepad, "m")
                frozen_ms.append(ms)
                read = obs.get("treeRead") or {}
                if obs.get("treeVersion") == "t-none":
                    answers.add("t-none, no tree")
                elif read.get("staleAgeMs") is not None:
                    same = obs["treeVersion"] == fresh["treeVersion"]
                    same = same and obs["tree"] == fresh["tree"]
                    answers.add(f"stale, {'same' if same else 'other'} tree and version")
                else:
                    answers.add("a tree read now (?)")
                _, ms = timed_observe(host, calc, "c")
                calc_ms.append(ms)
        finally:
            os.kill(mousepad, signal.SIGCONT)
        time.sleep(0.5)
    later = frozen_ms[1:]
    print(
        f"| {label} | {frozen_ms[0]:.0f} ms | {statistics.median(later):.0f} ms "
        f"({min(later):.0f}–{max(later):.0f}) | {'; '.join(sorted(answers))} | "
        f"{statistics.median(calc_ms):.1f} ms ({min(calc_ms):.1f}–{max(calc_ms):.1f}) |"
    )


def timed_list(host: HostProcess) -> tuple[list[dict[str, Any]], float]:
    t0 = time.perf_counter()
    windows: list[dict[str, Any]] = host.call({"type": "list_windows"}, 30.0)["windows"]
    return windows, (time.perf_counter() - t0) * 1000


def measure_listing(label: str, extra_env: dict[str, str], calc: int, runs: int) -> None:
    """``runs`` listings by a new host of a desktop where a never-listed app is stopped."""
    dialog = launch_accessible(["zenity", "--info", "--text", "stopped before any listing"])
    time.sleep(0.5)  # mapped
    os.kill(dialog.pid, signal.SIGSTOP)
    try:
        with HostProcess(extra_env) as host:
            host.call({"type": "ping"})  # started: its connect is not the listing's time
            listed = [timed_list(host) for _ in range(runs)]
    finally:
        os.kill(dialog.pid, signal.SIGCONT)
        dialog.stop()
    named = sum(
        1 for ws, _ in listed for w in ws if w["app"].get("pid") == calc and w["app"].get("name")
    )
    marked = sum(
        1
        for ws, _ in listed
        for w in ws
        if w["app"].get("pid") == dialog.pid and w.get("appUnresponsiveMs")
    )
    rest = [ms for _, ms in listed[1:]]
    print(
        f"| {label} | {listed[0][1]:.0f} ms | {statistics.median(rest):.1f} ms "
        f"({min(rest):.1f}–{max(rest):.1f}) | {named}/{runs} | {marked}/{runs} |"
    )


def measure_look(label: str, extra_env: dict[str, str], runs: int) -> None:
    """What an MCP ``get_app_state`` asks the host for a stopped app it never read — a
    listing (to find the window), then an observe — ``runs`` times, by a new host."""
    dialog = launch_accessible(["zenity", "--info", "--text", "stopped before any look"])
    time.sleep(0.5)  # mapped
    os.kill(dialog.pid, signal.SIGSTOP)
    looks: list[float] = []
    answers: set[str] = set()
    try:
        with HostProcess(extra_env) as host:
            host.call({"type": "ping"})
            for _ in range(runs):
                _, list_ms = timed_list(host)
                obs, ms = timed_observe(host, dialog.pid, "look")
                looks.append(list_ms + ms)
                unavailable = (obs.get("truncation") or {}).get("treeUnavailable")
                answers.add("no tree (unavailable)" if unavailable else "a tree (?)")
    finally:
        os.kill(dialog.pid, signal.SIGCONT)
        dialog.stop()
    later = looks[1:]
    print(
        f"| {label} | {looks[0]:.0f} ms | {statistics.median(later):.0f} ms "
        f"({min(later):.0f}–{max(later):.0f}) | {'; '.join(sorted(answers))} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--before-rev", default="HEAD")
    args = ap.parse_args()
    before = committed_src(args.before_rev)
    state = vdesk.up(1280, 800)
    os.environ.update(state.env)
    mousepad = launch_accessible(["mousepad"])
    calc = launch_accessible(["gnome-calculator"])
    try:
        print(f"observe of a stopped mousepad, {args.runs} runs per host; calculator meanwhile")
        print(
            "| host | stopped app: first answer | later answers, median (min–max) | answer "
            "| calculator |"
        )
        print("|---|---|---|---|---|")
        measure(
            f"before ({args.before_rev})",
            {"PYTHONPATH": str(before)},
            mousepad.pid,
            calc.pid,
            args.runs,
        )
        measure("after (deadline 1.5 s)", {}, mousepad.pid, calc.pid, args.runs)
        measure(
            "after (DESKPILOT_TREE_DEADLINE_MS=300)",
            {"DESKPILOT_TREE_DEADLINE_MS": "300"},
            mousepad.pid,
            calc.pid,
            args.runs,
        )
        print()
        print(f"list_windows with a never-listed app stopped, {args.runs} listings per host")
        print("| host | first | next, median (min–max) | calculator named | stopped app marked |")
        print("|---|---|---|---|---|")
        measure_listing(
            f"before ({args.before_rev})", {"PYTHONPATH": str(before)}, calc.pid, args.runs
        )
        measure_listing("after", {}, calc.pid, args.runs)
        measure_listing(
            "after (DESKPILOT_TREE_DEADLINE_MS=300)",
            {"DESKPILOT_TREE_DEADLINE_MS": "300"},
            calc.pid,
            args.runs,
        )
        print()
        print(f"list_windows + observe (a get_app_state) of a never-read stopped app, {args.runs}x")
        print("| host | first look | later looks, median (min–max) | answer |")
        print("|---|---|---|---|")
        measure_look(f"before ({args.before_rev})", {"PYTHONPATH": str(before)}, args.runs)
        measure_look("after", {}, args.runs)
    finally:
        mousepad.stop()
        calc.stop()
        vdesk.down(state)


if __name__ == "__main__":
    main()
