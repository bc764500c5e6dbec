"""Live view benchmark: capture → visible latency in a real browser, the dashboard's CPU while
streaming, and the per-frame cost of the live path against today's plain capture.

Run: ``env -u DISPLAY -u DBUS_SESSION_BUS_ADDRESS DESKPILOT_HOST_LOCAL_TRUST=1
.venv/bin/python benchmarks/ui_live_bench.py [--frames N] [--fps N] [--json]``

Starts its own private desktop (Xvfb 1280×800 + D-Bus + AT-SPI) with gnome-calculator, a
``deskpilot ui`` subprocess on a scratch data dir, and Playwright's Chromium (Debian's, via
``executable_path``), then, in one run:

* **latency** — the whole-screen view (1280×800) at ``--fps`` (5) for ``--frames`` (120)
  frames after a warm-up: per frame, the time from the dashboard asking its host for the
  capture (the frame's ``t``, wall clock) to the browser having decoded the image and reached
  the next animation frame (static/live.js, ``window.deskpilotLive.latencies``; same machine,
  same clock). Twice: the calculator alone (nothing to paint: the host's JPEG is passed on as
  it is), and with a zenity password dialog open over it (its field painted out of every
  frame: decode, paint, re-encode in the dashboard);
* **CPU** — the ``deskpilot ui`` process and the host process it spawned, over each latency
  window, from ``/proc/<pid>/stat`` (utime + stime), as % of one core;
* **per frame, live path vs baseline** — through a separate host client, 100 requests each
  (medians): the baseline is today's ``capture_window`` (PNG, zlib level 1, the window only:
  the one capture the protocol had), against the live view's request (JPEG q80, pointer and
  window list) of the same window and of the whole screen, and the whole screen as PNG for
  the record. Host round trip in ms and bytes per frame.

The screen is static apart from the pointer overlay (the calculator idles); JPEG's cost barely
depends on the content, PNG's grows with it (docs/host.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from deskpilot import desktop as vdesk  # noqa: E402
from deskpilot.desktop.apps import App, launch_accessible  # noqa: E402

LOGIN_RE = re.compile(r"one-time login link[^:]*: (http://\S+/login\?token=\S+)")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CLK_TCK = os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------ processes


def start_ui() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "deskpilot", "ui", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        found = LOGIN_RE.search(line)
        if found:
            return proc, found.group(1)
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise SystemExit("deskpilot ui did not print its login link")


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)


def children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        out.extend(int(c) for c in text)
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# ------------------------------------------------------------------ the browser side


def live_state(page: Any) -> dict[str, Any]:
    found: dict[str, Any] = page.evaluate("window.deskpilotLive || {}")
    return found


def measure_stream(
    page: Any, base: str, fps: int, frames: int, pids: dict[str, int]
) -> dict[str, Any]:
    page.goto(f"{base}/live?target=screen&fps={fps}")
    deadline = time.monotonic() + 30
    while live_state(page).get("shown", 0) < 3 * fps:  # a few seconds of warm-up
        if time.monotonic() > deadline:
            raise SystemExit("no frames reached the browser")
        time.sleep(0.2)
    start_shown = live_state(page)["shown"]
    ticks = {name: cpu_ticks(pid) for name, pid in pids.items()}
    t0 = time.monotonic()
    while live_state(page)["shown"] - start_shown < frames:
        time.sleep(0.25)
    wall = time.monotonic() - t0
    cpu = {
        name: (cpu_ticks(pid) - ticks[name]) / CLK_TCK / wall * 100 for name, pid in pids.items()
    }
    state = live_state(page)
    got = state["shown"] - start_shown
    latencies = state["latencies"][-got:]
    numbers = state["numbers"][-got:]
    return {
        "frames": got,
        "seconds": round(wall, 2),
        "fps": round((numbers[-1] - numbers[0]) / wall, 2),
        "latencyMedianMs": round(statistics.median(latencies), 1),
        "latencyP95Ms": round(percentile(latencies, 0.95), 1),
        "latencyMaxMs": round(max(latencies), 1),
        "painted": state["last"]["painted"],
        "cpuPercentOfOneCore": {k: round(v, 1) for k, v in cpu.items()},
    }


# ------------------------------------------------------------------ per frame, via a host client


async def per_frame(calc_pid: int, rounds: int) -> dict[str, Any]:
    from deskpilot.hostclient.backend import HostBackend
    from deskpilot.protocol.wire import TargetSpec

    backend = HostBackend(heartbeat=False)
    client = await backend.supervisor.acquire(None)
    windows = await backend.list_windows()
    calc = next(w for w in windows if w.app.pid == calc_pid and w.visible)
    target = TargetSpec(window_id=calc.window_id)

    async def timed(**options: Any) -> dict[str, Any]:
        ms: list[float] = []
        size = 0
        for i in range(rounds + 3):
            t = time.perf_counter()
            _, data = await client.capture(session_id=None, **options)
            if i >= 3:
                ms.append((time.perf_counter() - t) * 1000)
            size = len(data)
        return {"medianMs": round(statistics.median(ms), 2), "bytes": size}

    try:
        return {
            "baseline: capture_window PNG, window": await timed(target=target),
            "live: JPEG q80 + pointer + windows, window": await timed(
                target=target, image_format="jpeg", quality=80, include_pointer=True
            ),
            "live: JPEG q80 + pointer + windows, screen": await timed(
                screen=True, image_format="jpeg", quality=80, include_pointer=True
            ),
            "for the record: PNG, screen": await timed(screen=True),
            "window": f"{calc.bounds.width}x{calc.bounds.height}",
        }
    finally:
        await backend.close()


# ------------------------------------------------------------------ the run


def run(frames: int, fps: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    calc = launch_accessible(["gnome-calculator"])
    dialog: App | None = None
    proc, login = start_ui()
    base = login.split("/login")[0]
    results: dict[str, Any] = {"fps": fps}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
            )
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            page.goto(login)
            # the host process the dashboard spawns for its first viewer
            page.goto(f"{base}/live?target=screen&fps={fps}")
            deadline = time.monotonic() + 30
            while not children(proc.pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            pids = {"deskpilot ui": proc.pid}
            for i, child in enumerate(children(proc.pid)):
                pids["its host" if i == 0 else f"child {child}"] = child
            results["calculator"] = measure_stream(page, base, fps, frames, pids)
            zenity = shutil.which("zenity")
            if zenity:
                dialog = launch_accessible([zenity, "--password", "--title=Unlock"])
                time.sleep(1.0)
                results["with a password field painted"] = measure_stream(
                    page, base, fps, frames, pids
                )
            page.goto(f"{base}/readiness")
            browser.close()
        results["perFrame"] = asyncio.run(per_frame(calc.pid, 100))
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
        if dialog is not None:
            dialog.stop()
        calc.stop()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=120, help="frames per latency window")
    parser.add_argument("--fps", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="deskpilot-ui-live-bench-"))
    saved = dict(os.environ)
    state = vdesk.up(1280, 800)
    os.environ.update(state.env)
    os.environ["DESKPILOT_DATA_DIR"] = str(data_dir)
    os.environ["DESKPILOT_HOST_LOCAL_TRUST"] = "1"
    try:
        results = run(args.frames, args.fps)
    finally:
        vdesk.down(state)
        os.environ.clear()
        os.environ.update(saved)
        shutil.rmtree(data_dir, ignore_errors=True)
    results["load"] = os.getloadavg()
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for name in ("calculator", "with a password field painted"):
        if name not in results:
            continue
        r = results[name]
        print(
            f"{name}: {r['frames']} frames in {r['seconds']} s ({r['fps']} fps), latency median "
            f"{r['latencyMedianMs']} ms, p95 {r['latencyP95Ms']} ms, max {r['latencyMaxMs']} ms; "
            f"CPU % of one core: {r['cpuPercentOfOneCore']}"
        )
    print("per frame (host round trip, median of 100):")
    for name, value in results["perFrame"].items():
        print(f"  {name}: {value}")
    print(f"load average: {results['load']}")


if __name__ == "__main__":
    main()
