"""Wayland frames and input against X11's, on the same app in one run.

Run: ``.venv/bin/python benchmarks/wayland_bench.py [--rounds N]``

Starts a private X11 desktop (Xvfb) and a private Wayland desktop (headless Mutter with
PipeWire: ``deskpilot desktop up --wayland``), a gnome-calculator (GTK 4) on each, and measures
(medians of ``--rounds``):

* a frame of the whole 1280×800 screen: X11 — the host's capture (``x11.capture.Capturer``:
  mss with XShm) and its PNG; Wayland — ``MutterSession.frame()`` on a monitor stream
  (one ``gst-launch-1.0 pipewiresrc … pngenc`` per frame);
* a frame of the calculator's window: X11 — the same capture of its rectangle; Wayland — a
  window stream's frame (``RecordWindow``);
* a Mutter session opened (remote desktop + screen cast + the stream's PipeWire node);
* a key (press and release of "1") and a click: X11 — XTEST through the host's input
  (``x11.input``); Wayland — ``NotifyKeyboardKeysym`` / ``NotifyPointerButton`` calls.

The issue's target (docs/benchmarks.md, "Wayland"): within 1.5× of X11 for observe and
click → state; these are the parts of it that exist so far.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from deskpilot import desktop as vdesk
from deskpilot.desktop import apps
from deskpilot.desktop import wayland as wdesk
from deskpilot.host.atspi import AtspiClient
from deskpilot.host.wayland.mutter_session import MutterSession
from deskpilot.host.x11.capture import Capturer, encode_png
from deskpilot.host.x11.connection import XConnection
from deskpilot.host.x11.input import HeldInputs, XInput
from deskpilot.protocol.wire import Rect


async def median_ms(fn: Callable[[], Awaitable[Any]], rounds: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        await fn()
    samples = []
    for _ in range(rounds):
        t = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


async def frame_of(address: str, pid: int) -> Any:
    async with await AtspiClient.connect(address) as client:
        deadline = time.monotonic() + 60
        while True:
            frames = await client.frames(pid=pid)
            if frames:
                snap = await client.snapshot(frames[0].ref)
                root = next(iter(snap.elements.values()))
                return await client.extents(root)
            if time.monotonic() > deadline:
                raise SystemExit("the calculator never came up")
            await asyncio.sleep(0.2)


async def run(rounds: int) -> None:
    x = vdesk.up()
    wl = wdesk.up()
    xcalc = apps.launch(["gnome-calculator"], {**os.environ, **x.env})
    wcalc = apps.launch(["gnome-calculator"], wdesk.app_env(wl))
    try:
        xrect = await frame_of(x.dbus_address, xcalc.pid)
        await frame_of(wl.dbus_address, wcalc.pid)
        await asyncio.sleep(1.0)
        cap = Capturer(x.display)
        screen = Rect(x=0, y=0, width=1280, height=800)
        window = Rect(x=xrect.x, y=xrect.y, width=xrect.width, height=xrect.height)

        async def x_screen() -> None:
            encode_png(cap.grab(screen).image())

        async def x_window() -> None:
            encode_png(cap.grab(window).image())

        env = wdesk.app_env(wl)
        rows: list[tuple[str, float, float]] = []
        async with (
            await MutterSession.open(env, (wl.width, wl.height), "monitor") as mon,
            await MutterSession.open(env, (wl.width, wl.height), "window") as win,
        ):
            rows.append(
                (
                    "frame, whole screen (PNG)",
                    await median_ms(x_screen, rounds),
                    await median_ms(mon.frame, rounds),
                )
            )
            rows.append(
                (
                    "frame, the calculator's window (PNG)",
                    await median_ms(x_window, rounds),
                    await median_ms(win.frame, rounds),
                )
            )

            async def w_key() -> None:
                await win.keysyms([0x31])

            async def w_click() -> None:
                await win.click(5, 5)

            wayland_key = await median_ms(w_key, rounds)
            wayland_click = await median_ms(w_click, rounds)

        async def w_open() -> None:
            s = await MutterSession.open(env, (wl.width, wl.height), "monitor")
            await s.close()

        opened = await median_ms(w_open, rounds)
        xin = XInput(XConnection(x.display), HeldInputs())

        async def x_key() -> None:
            xin.type_text("1")

        async def x_click() -> None:
            xin.click(window.x + 5, window.y + 5, "left", 1)

        rows.append(("a key (press and release)", await median_ms(x_key, rounds), wayland_key))
        rows.append(("a click", await median_ms(x_click, rounds), wayland_click))
        print(f"rounds={rounds}")
        print("| what | X11 (ms) | Wayland (ms) | ratio |")
        print("|---|---|---|---|")
        for what, xm, wm in rows:
            print(f"| {what} | {xm:.1f} | {wm:.1f} | {wm / xm:.2f} |")
        what = "a Mutter session opened (remote desktop, screen cast, node)"
        print(f"| {what} | – | {opened:.1f} | – |")
    finally:
        xcalc.stop()
        wcalc.stop()
        wdesk.down(wl)
        vdesk.down(x)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    asyncio.run(run(args.rounds))


if __name__ == "__main__":
    sys.exit(main())
