"""MCP latency on gnome-calculator and a Chromium page, over a real stdio MCP subprocess.

Measures, from the client's side of the SDK (wall time around ``call_tool``), in one run:

* ``get_app_state`` on gnome-calculator (tree + JPEG model frame + header): target ≤ 60 ms;
* ``click`` → result carrying the new state (invoke, settle, post-action observe, new
  stateId and image), per click split into the toolkit's delay — ``toolkitDelayMs`` from the
  result's diagnostic: the app's own wait between answering the AT-SPI invoke and its first
  event (GTK buttons emit ``clicked`` 250 ms after ``DoAction``) — and deskpilot's own share
  (end to end − toolkitDelayMs). Targets: own share ≤ 100 ms median on gnome-calculator,
  end to end ≤ 150 ms on the Chromium page (a button that updates a heading);
* the baseline in the same run, per app: the reference computer-use demo loop, which sleeps
  2 s after every action before taking its screenshot (here: click, ``sleep(2)``,
  ``screenshot``), and each figure's ratio to it.

Run: ``.venv/bin/python benchmarks/mcp_bench.py [--n 40] [--baseline-n 5] [--no-chromium]``.
Starts its own private desktop unless DISPLAY is set (in a development checkout with
``DESKPILOT_HOST_LOCAL_TRUST=1``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
DESKPILOT = str(ROOT / ".venv" / "bin" / "deskpilot")


def _text(result: object) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")  # type: ignore[attr-defined]


def _state(result: object) -> str:
    m = re.search(r"^state_id=(\S+)$", _text(result), re.M)
    if not m:
        raise SystemExit(f"no state_id in: {_text(result)[:400]}")
    return m.group(1)


def _toolkit_delay(result: object) -> float:
    """The click's ``toolkitDelayMs`` (0 when the diagnostic says null: no delay to subtract)."""
    meta = getattr(result, "meta", None) or {}
    diag = meta.get("deskpilot/diagnostic") or {}
    value = (diag.get("timings") or {}).get("toolkitDelayMs")
    return float(value) if value is not None else 0.0


def _element(result: object, label: str) -> int:
    for line in _text(result).splitlines():
        if f'"{label}"' in line and (m := re.search(r"\[(\d+)\]\s*$", line)):
            return int(m.group(1))
    raise SystemExit(f"no element {label!r}")


Sample = tuple[float, float]  # (end to end ms, toolkitDelayMs)


async def _clicks(
    client: Client, state: object, app: str, labels: list[str], n: int
) -> tuple[list[Sample], float, object]:
    """``n`` clicks, each acting on the state the previous result carried."""
    samples: list[Sample] = []
    issued = 0
    for i in range(n):
        label = labels[i % len(labels)]
        args = {"state_id": _state(state), "element_id": _element(state, label)}
        t0 = time.perf_counter()
        r = await client.call_tool("click", args)
        samples.append(((time.perf_counter() - t0) * 1000, _toolkit_delay(r)))
        if r.is_error:
            raise SystemExit(_text(r)[:600])
        if "\nstate_id=" in _text(r):
            issued += 1
            state = r
        else:
            state = await client.call_tool("get_app_state", {"app": app})
    return samples, issued / n, state


async def _baseline(
    client: Client, state: object, app: str, labels: list[str], n: int
) -> list[float]:
    """The reference loop: click, sleep 2 s, screenshot."""
    out: list[float] = []
    for i in range(n):
        label = labels[i % len(labels)]
        args = {"state_id": _state(state), "element_id": _element(state, label)}
        t0 = time.perf_counter()
        await client.call_tool("click", args)
        await asyncio.sleep(2.0)
        await client.call_tool("screenshot", {"app": app})
        out.append((time.perf_counter() - t0) * 1000)
        state = await client.call_tool("get_app_state", {"app": app})
    return out


def _summary(prefix: str, samples: list[Sample], baseline: list[float]) -> dict[str, float]:
    e2e = [s[0] for s in samples]
    toolkit = [s[1] for s in samples]
    own = [s[0] - s[1] for s in samples]
    base = statistics.median(baseline)
    out = {
        f"{prefix}_n": float(len(samples)),
        f"{prefix}_e2e_median_ms": statistics.median(e2e),
        f"{prefix}_e2e_p90_ms": statistics.quantiles(e2e, n=10)[-1],
        f"{prefix}_toolkit_delay_median_ms": statistics.median(toolkit),
        f"{prefix}_own_median_ms": statistics.median(own),
        f"{prefix}_own_p90_ms": statistics.quantiles(own, n=10)[-1],
        f"{prefix}_baseline_n": float(len(baseline)),
        f"{prefix}_baseline_median_ms": base,
    }
    for key in ("e2e", "toolkit_delay", "own"):
        median = out[f"{prefix}_{key}_median_ms"]
        out[f"{prefix}_{key}_baseline_ratio"] = base / median if median else float("inf")
    return out


CALC_LABELS = ["1 1", "2 2", "3 3", "Clear Display [Escape]"]


async def run(n: int, baseline_n: int) -> dict[str, float]:
    params = StdioServerParameters(command=DESKPILOT, args=["serve"], env=dict(os.environ))
    async with Client(params) as client:
        state = await client.call_tool("get_app_state", {"app": "gnome-calculator"})
        for _ in range(5):  # warm the host, the tree walk and the JPEG encoder
            state = await client.call_tool("get_app_state", {"app": "gnome-calculator"})
        reads: list[float] = []
        for _ in range(n):
            t0 = time.perf_counter()
            state = await client.call_tool("get_app_state", {"app": "gnome-calculator"})
            reads.append((time.perf_counter() - t0) * 1000)
        samples, issued, state = await _clicks(client, state, "gnome-calculator", CALC_LABELS, n)
        baseline = await _baseline(client, state, "gnome-calculator", CALC_LABELS, baseline_n)
    out = {
        "get_app_state_median_ms": statistics.median(reads),
        "get_app_state_p90_ms": statistics.quantiles(reads, n=10)[-1],
        "calc_click_results_with_new_state": issued,
    }
    out.update(_summary("calc", samples, baseline))
    return out


PAGE = """<html><head><title>Counter</title></head><body>
<h1 id="out">count 0</h1>
<button onclick="n=(window.n||0)+1;window.n=n;
document.getElementById('out').textContent='count '+n">Add one</button>
</body></html>"""


async def run_chromium(pid: int, n: int, baseline_n: int) -> dict[str, float]:
    params = StdioServerParameters(command=DESKPILOT, args=["serve"], env=dict(os.environ))
    app = str(pid)
    async with Client(params) as client:
        state: object = None
        for _ in range(5):
            state = await client.call_tool("get_app_state", {"app": app})
        samples, issued, state = await _clicks(client, state, app, ["Add one"], n)
        baseline = await _baseline(client, state, app, ["Add one"], baseline_n)
    out = {"chromium_click_results_with_new_state": issued}
    out.update(_summary("chromium", samples, baseline))
    return out


def _table(results: dict[str, float]) -> str:
    rows = [
        "| app | n | end to end | toolkitDelayMs | own share (p90) | baseline (n) "
        "| baseline ÷ end to end / ÷ own |",
        "|---|---|---|---|---|---|---|",
    ]
    for prefix, name in (("calc", "gnome-calculator"), ("chromium", "Chromium page")):
        if f"{prefix}_n" not in results:
            continue
        r = {k.removeprefix(prefix + "_"): v for k, v in results.items() if k.startswith(prefix)}
        rows.append(
            f"| {name} | {r['n']:.0f} | {r['e2e_median_ms']:.1f} ms | "
            f"{r['toolkit_delay_median_ms']:.1f} ms | {r['own_median_ms']:.1f} ms "
            f"({r['own_p90_ms']:.1f}) | {r['baseline_median_ms']:.0f} ms ({r['baseline_n']:.0f}) | "
            f"{r['e2e_baseline_ratio']:.1f}× / {r['own_baseline_ratio']:.1f}× |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--baseline-n", type=int, default=5)
    parser.add_argument("--no-chromium", action="store_true")
    ns = parser.parse_args()
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    os.environ.setdefault("DESKPILOT_HOST_LOCAL_TRUST", "1")
    sys.path.insert(0, str(ROOT / "src"))
    from deskpilot import desktop as vdesk
    from deskpilot.desktop.apps import launch, launch_chromium, wait_accessible

    state = None
    if not os.environ.get("DISPLAY"):
        state = vdesk.up(1280, 800)
        os.environ.update(state.env)
    try:
        app = launch(["gnome-calculator"])
        try:
            wait_accessible(pid=app.pid, timeout=60)
            time.sleep(1.0)
            results = asyncio.run(run(ns.n, ns.baseline_n))
        finally:
            app.stop()
        if not ns.no_chromium:
            page = Path(tempfile.mkdtemp(prefix="deskpilot-bench-")) / "counter.html"
            page.write_text(PAGE)
            browser = launch_chromium(page.as_uri())
            try:
                wait_accessible(pid=browser.pid, timeout=60)
                time.sleep(3.0)  # the page's document arrives after the browser registers
                results.update(asyncio.run(run_chromium(browser.pid, ns.n, ns.baseline_n)))
            finally:
                browser.stop()
                shutil.rmtree(page.parent, ignore_errors=True)
    finally:
        if state is not None:
            vdesk.down(state)
    print("command:", " ".join([os.path.relpath(sys.executable), *sys.argv]))
    with contextlib.suppress(OSError):
        after = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"cpus: {os.cpu_count()}; load average before: {load_before}; after: {after}")
    for key, value in results.items():
        print(f"{key}: {value:.2f}")
    print()
    print(_table(results))
    print()
    verdicts = [
        f"get_app_state <= 60 ms: {_verdict(results['get_app_state_median_ms'] <= 60)}",
        f"calculator own share <= 100 ms: {_verdict(results['calc_own_median_ms'] <= 100)}",
    ]
    if "chromium_e2e_median_ms" in results:
        ok = results["chromium_e2e_median_ms"] <= 150
        verdicts.append(f"Chromium click end to end <= 150 ms: {_verdict(ok)}")
    print("targets:", " | ".join(verdicts))


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


if __name__ == "__main__":
    main()
