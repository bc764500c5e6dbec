"""What showing popups with their window costs an observation (host/popups.py).

Starts its own private desktop (Xvfb 1280x800 + D-Bus + AT-SPI) and the GTK 3 window of
tests/host/context_menu_gtk_app.py, and observes it with the host's in-process observer
(tree only, no screenshot: the screenshot is the same either way), interleaved in one
process, two ways:

* ``with popups``    — as the host runs: the mapped popups listed (x11/popups.py), matched
  to the app's top-level accessibles, and an open menu read and appended;
* ``without``        — the same observer with the popup listing answering nothing (the
  code before popups were shown): the baseline.

Each with the menu closed (what every observation pays) and open (a right click opened
it: the menu's own read). Also ``popup_rects`` alone, and ``foreign_menu``: the check
every key or pointer action now makes first (host/menu_grab.py).

Usage: ``.venv/bin/python benchmarks/popup_bench.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from pathlib import Path

from deskpilot import desktop as vdesk
from deskpilot.desktop import apps as dapps
from deskpilot.host.accessibility import Accessibility
from deskpilot.host.observer import Observer
from deskpilot.host.x11.desktop import X11Desktop
from deskpilot.protocol.wire import Observe, Rect, TargetSpec

APP = Path(__file__).resolve().parent.parent / "tests" / "host" / "context_menu_gtk_app.py"


def median(xs: list[float]) -> float:
    return statistics.median(xs)


async def observe_ms(observer: Observer, request: Observe) -> tuple[float, str]:
    t = time.perf_counter()
    body, _ = await observer.observe(request)
    return (time.perf_counter() - t) * 1000, body.tree


async def run(runs: int) -> None:
    app = dapps.launch_accessible(["/usr/bin/python3", str(APP)])
    desktop = X11Desktop()
    acc = await Accessibility.connect()
    assert acc is not None, "no accessibility bus"
    observer = Observer(desktop, acc)
    listing = desktop.popup_rects

    def nothing(*_: object) -> list[Rect]:
        return []

    request = Observe(id=1, target=TargetSpec(pid=app.pid), include_screenshot=False)
    try:
        await observer.observe(request)
        rects: list[float] = []
        for _ in range(runs):
            t = time.perf_counter()
            listing()
            rects.append((time.perf_counter() - t) * 1000)
        print(f"popup_rects alone: {median(rects):.3f} ms (median of {runs})")
        window, _ = desktop.resolve(TargetSpec(pid=app.pid))
        grabs: list[float] = []
        for _ in range(runs):  # what every key or pointer action now asks first
            t = time.perf_counter()
            desktop.foreign_menu(window)
            grabs.append((time.perf_counter() - t) * 1000)
        print(f"foreign_menu (before keys and clicks): {median(grabs):.3f} ms")
        for state in ("closed", "open"):
            if state == "open":
                window, _ = desktop.resolve(TargetSpec(pid=app.pid))
                b = window.bounds
                desktop.require_input().click(b.x + 60, b.y + 40, "right", 1)
                await asyncio.sleep(0.5)
            with_ms: list[float] = []
            without_ms: list[float] = []
            shown = ""
            for _ in range(runs):  # interleaved: the machine's noise hits both alike
                desktop.popup_rects = listing  # type: ignore[method-assign]
                ms, shown = await observe_ms(observer, request)
                with_ms.append(ms)
                desktop.popup_rects = nothing  # type: ignore[method-assign]
                ms, _ = await observe_ms(observer, request)
                without_ms.append(ms)
            desktop.popup_rects = listing  # type: ignore[method-assign]
            popup = "- popup [" in shown
            w, wo = median(with_ms), median(without_ms)
            print(
                f"menu {state:<6}: observe with popups {w:6.2f} ms, without {wo:6.2f} ms "
                f"(+{w - wo:5.2f} ms, {w / wo:4.2f}x); popup in the tree: {popup}",
                flush=True,
            )
    finally:
        await acc.close()
        desktop.close()
        app.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=41)
    args = ap.parse_args()
    state = vdesk.up(1280, 800)
    os.environ.update(state.env)
    try:
        asyncio.run(run(args.runs))
    finally:
        vdesk.down(state)


if __name__ == "__main__":
    main()
