"""deskpilot agent: its own time per step, and its prompt size beside a screenshot-only loop.

One run, side by side:

* **Calculator task** (the desktop case): ``deskpilot agent``'s loop, built as the command
  builds it (agent/factory.py over runtime/agent_desktop.py and a real runtime, kernel and
  host on the private desktop), computes ``12*7`` on gnome-calculator. The decision model is
  the scripted OpenAI-compatible server of the tests (a real HTTP server on loopback:
  tests/operator/scripted_model.py) with the ``DesktopCalculator`` policy of
  tests/agent/agent_policies.py, which reads each request like an agent: it observes, clicks
  one button per reply on the newest state with that state's state_id, and answers with the
  display's value.
* **File task** (no desktop): ``read`` a file, ``bash`` a command, answer.

Per step the loop splits its wall time (agent/timing.py): the model's (HTTP request time,
measured in the provider's transport), the tool's own (the runtime's ``toolElapsedMs`` for a
desktop tool, the run of a local tool), and the agent's own — selection, serialisation,
parsing, validation, repair bookkeeping, conversation, events and the execution overhead
around the tool. Target: ≤ 20 ms median for the agent's own time.

**Prompt size.** Every request the model received is measured (characters of all messages;
tokens estimated as characters / 4). The baseline is a screenshot-only loop that sends the
image every step: the same requests with each state's tree removed (its header kept) plus one
image of the state's frame per step (older images dropped, the cheapest such loop). Image
tokens use the published tile rule of OpenAI's high-detail vision input (fit 2048², short
side 768, 170 per 512-px tile + 85) and, beside it, the pixels / 750 rule of another vendor.

Run: ``DESKPILOT_HOST_LOCAL_TRUST=1 .venv/bin/python benchmarks/agent_bench.py [--n 5]``.
Starts its own private desktop unless DISPLAY is set.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "operator"))
sys.path.insert(0, str(ROOT / "tests" / "agent"))

from agent_policies import DesktopCalculator, Steps, last_text  # noqa: E402
from scripted_model import Request, ScriptedModel, call, final, has_tree  # noqa: E402

CHARS_PER_TOKEN = 4
_IMAGE = re.compile(r"^image=(\d+)x(\d+)", re.M)


def openai_image_tokens(width: int, height: int) -> int:
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def pixel_image_tokens(width: int, height: int) -> int:
    return math.ceil(width * height / 750)


def request_chars(body: dict[str, Any]) -> int:
    return sum(len(str(m.get("content") or "")) for m in body.get("messages") or [])


def baseline_chars_and_image(body: dict[str, Any]) -> tuple[int, tuple[int, int] | None]:
    """The request's characters without any tree, and the newest state's frame size."""
    request = Request(body)
    chars = request_chars(body)
    frame = None
    for result in request.results():
        if result.omitted or not has_tree(result.text):
            continue
        header, _, tree = result.text.partition("\n\n")
        chars -= len(tree)
        m = _IMAGE.search(header)
        if m:
            frame = (int(m.group(1)), int(m.group(2)))
    return chars, frame


def env_for(model: ScriptedModel) -> dict[str, str]:
    return {
        "DESKPILOT_PROVIDER_BASE_URL": model.base_url,
        "DESKPILOT_PROVIDER_MODEL": model.model_id,
        "DESKPILOT_PROVIDER_API_KEY": "sk-bench-0123456789",
    }


async def one_task(policy: Any, goal: str, cwd: Path) -> tuple[Any, list[dict[str, Any]]]:
    from deskpilot.agent.events import EventLog
    from deskpilot.agent.factory import build_agent
    from deskpilot.runtime.agent_desktop import RuntimeDesktop
    from deskpilot.runtime.budget import BudgetMode
    from deskpilot.runtime.runtime import RuntimeConfig
    from deskpilot.runtime.wiring import build_runtime

    with ScriptedModel(policy, model_id="bench") as model:
        runtime = build_runtime(RuntimeConfig(budget_mode=BudgetMode.BOUNDED))
        agent = build_agent(
            RuntimeDesktop(runtime), cwd=cwd, sink=EventLog(), env={**os.environ, **env_for(model)}
        )
        try:
            report = await agent.run_turn(goal)
        finally:
            await agent.model.aclose()
            await runtime.close()
        return report, model.requests


async def run_all(n: int) -> dict[str, Any]:
    from deskpilot.desktop.apps import launch_accessible

    out: dict[str, Any] = {"calc": [], "files": [], "requests": []}
    work = Path(tempfile.mkdtemp(prefix="deskpilot-agent-bench-"))
    (work / "notes.txt").write_text("".join(f"line {i}\n" for i in range(200)))
    try:
        for i in range(n + 1):
            app = await asyncio.to_thread(launch_accessible, ["gnome-calculator"])
            try:
                report, requests = await one_task(
                    DesktopCalculator("12*7"), "Compute 12×7 on the calculator.", work
                )
            finally:
                app.stop()
            if report.status != "answered" or "84" not in (report.text or ""):
                raise SystemExit(f"calculator task failed: {report.status} {report.text}")
            if i:  # the first is a warm-up
                out["calc"].append(report)
                out["requests"].append(requests)
            files = Steps(
                [
                    call("read", path="notes.txt"),
                    call("bash", command="wc -l notes.txt"),
                    lambda r: final(last_text(r)),
                ]
            )
            report, _ = await one_task(files, "Read notes.txt and count its lines.", work)
            if i:
                out["files"].append(report)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _p90(values: list[float]) -> float:
    return sorted(values)[int(0.9 * (len(values) - 1))] if values else float("nan")


def report(results: dict[str, Any]) -> bool:
    ok = True
    print("| task | steps | own ms median | own p90 | tool ms median | model ms median |")
    print("|---|---|---|---|---|---|")
    for name in ("calc", "files"):
        steps = [t for r in results[name] for t in r.timings]
        own = [t.own_ms for t in steps]
        tool = _median([t.tool_ms for t in steps])
        model = _median([t.model_ms for t in steps])
        print(
            f"| {name} | {len(steps)} | {_median(own):.2f} | {_p90(own):.2f} | "
            f"{tool:.1f} | {model:.1f} |"
        )
        ok &= _median(own) <= 20.0
    ours, base_oa, base_px = [], [], []
    for requests in results["requests"]:
        for body in requests:
            chars = request_chars(body)
            ours.append(chars / CHARS_PER_TOKEN)
            rest, frame = baseline_chars_and_image(body)
            image_oa = openai_image_tokens(*frame) if frame else 0
            image_px = pixel_image_tokens(*frame) if frame else 0
            base_oa.append(rest / CHARS_PER_TOKEN + image_oa)
            base_px.append(rest / CHARS_PER_TOKEN + image_px)
    print()
    print("| prompt per step (tokens, est.) | median | max |")
    print("|---|---|---|")
    print(f"| deskpilot agent (tree, no image) | {_median(ours):.0f} | {max(ours):.0f} |")
    print(f"| screenshot-only, tile rule | {_median(base_oa):.0f} | {max(base_oa):.0f} |")
    print(f"| screenshot-only, pixels/750 | {_median(base_px):.0f} | {max(base_px):.0f} |")
    print(
        f"ratio ours / screenshot-only: {_median(ours) / _median(base_oa):.2f} (tile rule), "
        f"{_median(ours) / _median(base_px):.2f} (pixels/750)"
    )
    return ok


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=5, help="timed runs of each task")
    ns = parser.parse_args()
    if shutil.which("gnome-calculator") is None:
        raise SystemExit("gnome-calculator is not installed")
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    os.environ.setdefault("DESKPILOT_HOST_LOCAL_TRUST", "1")
    from deskpilot import desktop as vdesk

    state = None
    if not os.environ.get("DISPLAY"):
        state = vdesk.up(1280, 800)
        os.environ.update(state.env)
    try:
        results = asyncio.run(run_all(ns.n))
    finally:
        if state is not None:
            vdesk.down(state)
    print("command:", " ".join([os.path.relpath(sys.executable), *sys.argv]))
    with contextlib.suppress(OSError):
        after = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"cpus: {os.cpu_count()}; load average before: {load_before}; after: {after}")
    print()
    sys.exit(0 if report(results) else 1)


if __name__ == "__main__":
    main()
