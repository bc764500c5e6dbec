"""What honest outcomes cost, side by side with a baseline checkout, over real stdio MCP servers.

Two ``deskpilot serve`` processes on one private desktop — this checkout's and a baseline's
(``--baseline-deskpilot``, e.g. a checkout of main; each with its own data and runtime dir,
so neither holds the other's desktop lease) — take turns, action by action, on the same apps:

* **effect**: a click on gnome-calculator's "1" (its result carries the new state): end to
  end, and deskpilot's own share (end to end − ``toolkitDelayMs``). The host now grabs the
  window's pixels once before each action (the late-effect watch's "before"), and keys wait
  for a focus change to pass: this shows what that costs an action with an effect;
* **no effect**: a click on the "Nothing" button of tests/host/late_gtk_app.py (GTK 3, no
  handler): the baseline answers at GTK 3's bound and says ``action_noop``; this checkout
  watches for a late effect until the settle budget (1.5 s) before it says so;
* **late dialog**: ctrl+d on the same window, whose modal dialog comes 700 ms later: what the
  result says (the dialog's state, ``action_noop``, or a state of the window under it) and
  how long it took; the dialog is closed (Escape) between rounds;
* **observe**: ``get_app_state`` on gnome-calculator, which must not get slower.

Run: ``.venv/bin/python benchmarks/outcome_bench.py --baseline-deskpilot
/path/to/main/.venv/bin/deskpilot [--n 15]``. Starts its own private desktop unless DISPLAY
is set (in a development checkout with ``DESKPILOT_HOST_LOCAL_TRUST=1``). Prints medians.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
DESKPILOT = str(ROOT / ".venv" / "bin" / "deskpilot")
LATE_APP = ROOT / "tests" / "host" / "late_gtk_app.py"


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


def _diag(result: Any) -> dict[str, Any]:
    meta = getattr(result, "meta", None) or {}
    value = meta.get("deskpilot/diagnostic") or {}
    return value if isinstance(value, dict) else {}


def _state(result: Any) -> str:
    m = re.search(r"^state_id=(\S+)$", _text(result), re.M)
    if not m:
        raise SystemExit(f"no state_id in: {_text(result)[:400]}")
    return m.group(1)


def _element(result: Any, label: str) -> int:
    for line in _text(result).splitlines():
        if label in line and (m := re.search(r"\[(\d+)\]\s*$", line)):
            return int(m.group(1))
    raise SystemExit(f"no element {label!r} in: {_text(result)[:400]}")


def _said(result: Any) -> str:
    """What the result says happened, in a word."""
    text = _text(result)
    if "A dialog of this window opened" in text and "\nstate_id=" in text:
        return "dialog state"
    code = _diag(result).get("code")
    if code:
        return str(code)
    return "window state" if "\nstate_id=" in text else "no state"


class Side:
    """One checkout's server command and what it measured (over both passes)."""

    def __init__(self, name: str, command: str) -> None:
        self.name = name
        self.command = command
        self.ms: dict[str, list[float]] = defaultdict(list)
        self.said: dict[str, list[str]] = defaultdict(list)

    def params(self, slot: Path) -> StdioServerParameters:
        """A server with its own data and runtime dir (``slot``: one of two, swapped between
        the passes — measured, the server in the second slot was ≈ 10 ms slower per look
        whichever checkout it ran, so each checkout runs once in each)."""
        env = dict(os.environ)
        env["DESKPILOT_DATA_DIR"] = str(slot / "data")
        env["XDG_RUNTIME_DIR"] = str(slot / "run")
        for key in ("DESKPILOT_DATA_DIR", "XDG_RUNTIME_DIR"):
            Path(env[key]).mkdir(parents=True, mode=0o700, exist_ok=True)
        return StdioServerParameters(command=self.command, args=["serve"], env=env)

    async def timed(self, client: Client, key: str, tool: str, args: dict[str, Any]) -> Any:
        t0 = time.perf_counter()
        result = await client.call_tool(tool, args)
        self.ms[key].append((time.perf_counter() - t0) * 1000)
        return result


async def _round(side: Side, client: Client, calc: int, late: int) -> None:
    state = await side.timed(client, "observe", "get_app_state", {"app": calc})
    one = {"state_id": _state(state), "element_id": _element(state, 'button "1 1"')}
    clicked = await side.timed(client, "effect", "click", one)
    delay = (_diag(clicked).get("timings") or {}).get("toolkitDelayMs") or 0.0
    side.ms["effect_own"].append(side.ms["effect"][-1] - float(delay))
    state = await client.call_tool("get_app_state", {"app": late})
    nothing = {"state_id": _state(state), "element_id": _element(state, 'button "Nothing"')}
    side.said["no effect"].append(_said(await side.timed(client, "noop", "click", nothing)))
    state = await client.call_tool("get_app_state", {"app": late})
    keys = {"state_id": _state(state), "keys": ["ctrl+d"]}
    side.said["late dialog"].append(_said(await side.timed(client, "late", "press_key", keys)))
    for _ in range(40):  # close the dialog, however the result said it
        shown = await client.call_tool("get_app_state", {"app": late})
        if 'Window=(title="Later"' in _text(shown):
            await client.call_tool("press_key", {"state_id": _state(shown), "keys": ["Escape"]})
            break
        await asyncio.sleep(0.05)


async def run(sides: list[Side], slots: list[Path], calc: int, late: int, n: int) -> None:
    async with contextlib.AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(Client(side.params(slot)))
            for side, slot in zip(sides, slots, strict=True)
        ]
        for client in clients:  # warm both hosts
            for _ in range(3):
                await client.call_tool("get_app_state", {"app": calc})
                await client.call_tool("get_app_state", {"app": late})
        for i in range(n):
            order = list(zip(sides, clients, strict=True))
            for side, client in order if i % 2 == 0 else reversed(order):
                await _round(side, client, calc, late)


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} ms" if values else "–"


def _table(sides: list[Side]) -> str:
    rows = [
        "| measure | " + " | ".join(s.name for s in sides) + " |",
        "|---|" + "---|" * len(sides),
    ]
    for key, label in (
        ("observe", "get_app_state, gnome-calculator"),
        ("effect", "click with an effect (calculator), end to end"),
        ("effect_own", "  the same, deskpilot's own share"),
        ("noop", "click without an effect (GTK 3), end to end"),
        ("late", "ctrl+d, dialog 700 ms later, end to end"),
    ):
        rows.append(f"| {label} | " + " | ".join(_median(s.ms[key]) for s in sides) + " |")
    for key in ("no effect", "late dialog"):
        said = [
            ", ".join(f"{w} ×{s.said[key].count(w)}" for w in sorted(set(s.said[key])))
            for s in sides
        ]
        rows.append(f"| what the {key} result said | " + " | ".join(said) + " |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline-deskpilot", required=True)
    parser.add_argument("--n", type=int, default=15)
    ns = parser.parse_args()
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    os.environ.setdefault("DESKPILOT_HOST_LOCAL_TRUST", "1")
    sys.path.insert(0, str(ROOT / "src"))
    from deskpilot import desktop as vdesk
    from deskpilot.desktop.apps import launch, wait_accessible

    desk = None
    if not os.environ.get("DISPLAY"):
        desk = vdesk.up(1280, 800)
        os.environ.update(desk.env)
    scratch = Path(tempfile.mkdtemp(prefix="deskpilot-outcome-bench-"))
    apps = []
    try:
        calc = launch(["gnome-calculator"])
        late = launch(["/usr/bin/python3", str(LATE_APP)])
        apps = [calc, late]
        for app in apps:
            wait_accessible(pid=app.pid, timeout=60)
        time.sleep(1.0)
        sides = [Side("baseline", ns.baseline_deskpilot), Side("this", DESKPILOT)]
        slots = [scratch / "a", scratch / "b"]
        half = max(1, ns.n // 2)
        asyncio.run(run(sides, slots, calc.pid, late.pid, half))
        asyncio.run(run(sides[::-1], slots, calc.pid, late.pid, half))
    finally:
        for app in apps:
            app.stop()
        if desk is not None:
            vdesk.down(desk)
    print("command:", " ".join([os.path.relpath(sys.executable), *sys.argv]))
    after = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"cpus: {os.cpu_count()}; load average before: {load_before}; after: {after}")
    print(
        f"rounds: {2 * max(1, ns.n // 2)} per checkout, interleaved (order alternating), half "
        "in each server slot"
    )
    print()
    print(_table(sides))


if __name__ == "__main__":
    main()
