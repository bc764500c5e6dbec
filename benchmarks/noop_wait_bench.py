"""The wait after a semantic action that changes nothing: the old 600 ms first-event rule vs
the toolkit's bound (host/settle.py, "The first event"), on GTK 4, GTK 3 and Chromium.

Starts its own private desktop (unless DISPLAY is set), gnome-calculator (GTK 4), the small
GTK 3 window of the host tests (``tests/host/noop_gtk_app.py``, system python3-gi) and
Chromium on a two-button page, then, in one run and alternating old and new action by action:

* **no effect**: a semantic press (``Action.DoAction``, in-process through the host's own
  ``Accessibility`` and ``Settler``) of a button that changes nothing — the calculator's "="
  on an empty display, the GTK 3 "Nothing" button, the page's "Nothing" button once it has
  the focus — timed from the call to the end of the wait; *old* is the same wait with the
  plain window (``Settler.settle(window=None)``: 600 ms from the call), *new* the toolkit's
  window (``Settler.first_event_window``);
* **effect**: a press that changes the UI (the calculator's "7" then "Undo", "Count" in the
  other two) with the new rule, to show it still waits for, and ends on, the app's events.

Run: ``.venv/bin/python benchmarks/noop_wait_bench.py [--n 20]``. Prints medians, p90 and
which bound ended each wait.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import cast

from deskpilot import desktop as vdesk
from deskpilot.desktop import apps as dapps
from deskpilot.host.accessibility import Accessibility
from deskpilot.host.atspi.model import ElementRef, SemanticOp
from deskpilot.host.settle import Settler
from deskpilot.host.x11.desktop import X11Desktop

ROOT = Path(__file__).resolve().parents[1]
GTK3_APP = ROOT / "tests" / "host" / "noop_gtk_app.py"
PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>noop</title></head><body>
<button>Nothing</button>
<button onclick="document.getElementById('o').textContent = 'Pressed ' + (++k)">Count</button>
<p id="o">Pressed 0</p><script>let k = 0;</script></body></html>
"""
BUDGET_MS = 1500


async def button(acc: Accessibility, pid: int, name: str) -> ElementRef:
    """The button called ``name`` in the app's window, from a fresh snapshot."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for frame in await acc.client.frames(pid=pid):
            snap = await acc.client.snapshot(frame.ref)
            if snap is None:
                continue
            for element in snap.elements.values():
                if element.role == "button" and element.name == name:
                    return element
        await asyncio.sleep(0.3)
    raise SystemExit(f"no button {name!r} in pid {pid}")


async def press(
    acc: Accessibility, settler: Settler, element: ElementRef, *, old: bool
) -> tuple[float, str]:
    """One semantic press and its wait: (ms from the call to the wait's end, its bound)."""
    await acc.events_ready()
    since = time.monotonic()
    if await acc.perform(element, SemanticOp.invoke()) is None:
        raise SystemExit(f"{element.name!r} cannot be pressed")
    answered = time.monotonic()
    window = None if old else await settler.first_event_window(element, answered)
    done = await settler.settle(element.bus_name, since, BUDGET_MS, window=window)
    settler.toolkit_delay_ms(element.bus_name, since, answered)  # as the host records it
    return (time.monotonic() - since) * 1000, str(done.bound)


def p90(values: list[float]) -> float:
    return sorted(values)[max(0, round(0.9 * len(values)) - 1)]


def row(label: str, values: list[float], bounds: list[str]) -> str:
    counts = ", ".join(f"{b} {n}" for b, n in collections.Counter(bounds).most_common())
    return (
        f"| {label} | {len(values)} | {statistics.median(values):.1f} ms "
        f"| {p90(values):.1f} ms | {counts} |"
    )


async def run(n: int, calc: int, gtk3: int, chromium: int) -> None:
    acc = await Accessibility.connect()
    if acc is None:
        raise SystemExit("no accessibility bus")
    settler = Settler(cast(X11Desktop, None), acc)  # no pixels are watched after semantic ops
    cases = {
        'GTK 4 (gnome-calculator, "=")': (await button(acc, calc, "= ="), calc),
        'GTK 3 (python3-gi, "Nothing")': (await button(acc, gtk3, "Nothing"), gtk3),
        'Chromium ("Nothing", focused)': (await button(acc, chromium, "Nothing"), chromium),
    }
    page_nothing = cases['Chromium ("Nothing", focused)'][0]
    await press(acc, settler, page_nothing, old=False)  # the focus moves to it: events
    await asyncio.sleep(0.3)
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    print("\n| no-effect press | n | median (call → end of wait) | p90 | bounds |")
    print("|---|---|---|---|---|")
    for label, (element, _) in cases.items():
        waits: dict[bool, list[float]] = {True: [], False: []}
        bounds: dict[bool, list[str]] = {True: [], False: []}
        for i in range(2 * n):
            old = i % 2 == 0
            ms, bound = await press(acc, settler, element, old=old)
            waits[old].append(ms)
            bounds[old].append(bound)
            await asyncio.sleep(0.15)
        print(row(f"{label}, old 600 ms rule", waits[True], bounds[True]))
        print(row(f"{label}, toolkit bound", waits[False], bounds[False]))
    print("\n| press with an effect (toolkit bound) | n | median | p90 | bounds |")
    print("|---|---|---|---|---|")
    effects = {
        'GTK 4 ("7", "Undo")': [await button(acc, calc, "7 7"), await button(acc, calc, "Undo")],
        'GTK 3 ("Count")': [await button(acc, gtk3, "Count")],
        'Chromium ("Count")': [await button(acc, chromium, "Count")],
    }
    for label, elements in effects.items():
        values, got = [], []
        for i in range(n):
            ms, bound = await press(acc, settler, elements[i % len(elements)], old=False)
            values.append(ms)
            got.append(bound)
            await asyncio.sleep(0.15)
        print(row(label, values, got))
    await acc.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--n", type=int, default=20, help="presses per rule and app")
    args = parser.parse_args()
    state = None
    if not os.environ.get("DISPLAY"):
        state = vdesk.up(1280, 800)
        os.environ.update(state.env)
    scratch = Path(tempfile.mkdtemp(prefix="noop-wait-"))
    page = scratch / "noop.html"
    page.write_text(PAGE)
    started: list[dapps.App] = []
    try:
        calc = dapps.launch(["gnome-calculator"])
        started.append(calc)
        gtk3 = dapps.launch(["/usr/bin/python3", str(GTK3_APP)])
        started.append(gtk3)
        chromium = dapps.launch_chromium(page.as_uri())
        started.append(chromium)
        for app in started:
            dapps.wait_accessible(pid=app.pid, timeout=60)
        asyncio.run(run(args.n, calc.pid, gtk3.pid, chromium.pid))
        print(f"\ncommand: .venv/bin/python benchmarks/noop_wait_bench.py --n {args.n}")
    finally:
        for app in started:
            app.stop()
        if state is not None:
            vdesk.down(state)


if __name__ == "__main__":
    sys.exit(main())
