"""The delegated operator's own time per step, and its model calls with batches on and off.

One run, side by side, on a 5-field zenity form (``zenity --forms --title=Bench
--add-entry=A … --add-entry=E``) filled by the scripted decision model of the operator tests
(``tests/operator/scripted_model.py``: a real OpenAI-compatible HTTP server on loopback whose
``FormFiller`` policy reads the state the operator sent and answers the next action):

* **Per-step overhead** (batches off, so one action per step). The operator records, per step,
  its time outside the model call (``Operator.own_ms``: the contract check and phase change
  before ``Provider.decide``, then everything after it until the next decision). The desktop
  work inside that time is timed here by wrapping, for the delegated runs only, the three
  calls through which the operator reaches the desktop: ``get_app_state`` (as the operator
  module calls it), ``action_tools.act`` (as ``delegated/acting.py`` calls it — the runtime's
  whole atomic action path: broker, host, settle, post-action observe, stateId) and
  ``Kernel.windows`` (the window list the verification takes when the window is gone). Each
  wrapped call is given to the step whose ``decide`` returned last before it started; what
  is left of ``own_ms`` is the operator's own work: phases, conversation, batch checks,
  verification bookkeeping. Target: ≤ 30 ms median for that difference.
* **Baseline** (same run): the same form filled by an agent through ``runtime.call`` — one
  ``get_app_state``, five ``type_text``, one ``click`` — timed per call.
* **Model calls** for the form + OK (6 actions), batches off vs on (the same policy offered
  ``act_batch``), with each task's wall time from ``start_task`` to ``wait_for_completion``.

``DESKPILOT_ACTION_BATCH`` is read by the kernel's flags when the kernel is built, so each
mode gets its own kernel and runtime (and host process). One untimed warm-up task per mode.

Run: ``DESKPILOT_HOST_LOCAL_TRUST=1 .venv/bin/python benchmarks/operator_bench.py [--n 5]``.
Starts its own private desktop unless DISPLAY is set.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "operator"))

from scripted_model import FormFiller, ScriptedModel, parse_elements  # noqa: E402

LABELS = ["A", "B", "C", "D", "E"]
VALUES = {label: f"value {label.lower()}" for label in LABELS}
FORM_ARGV = ["--forms", "--title=Bench", *[f"--add-entry={label}" for label in LABELS]]
SESSION = "operator-bench"
_STATE_ID = re.compile(r"^state_id=(\S+)$", re.M)


# ----------------------------------------------------------------------------- recording


@dataclass
class Recorder:
    """Time stamps of the delegated run: decide calls and the desktop calls between them."""

    active: bool = False
    #: nesting of wrapped desktop calls (an action lists windows itself: count it once)
    depth: int = 0
    decides: list[tuple[float, float]] = field(default_factory=list)
    #: HTTP round trips to the model server inside decide (the rest of decide is local)
    http: list[tuple[float, float]] = field(default_factory=list)
    io: list[tuple[str, float, float]] = field(default_factory=list)

    def reset(self) -> None:
        self.decides.clear()
        self.http.clear()
        self.io.clear()

    def decide_local_ms(self) -> list[float]:
        """Per decide: its time outside the HTTP round trips (prompt, parse, validate)."""
        out = []
        for t0, t1 in self.decides:
            wire = sum(b - a for a, b in self.http if t0 <= a < t1)
            out.append((t1 - t0 - wire) * 1000)
        return out

    def steps(self) -> list[dict[str, float]]:
        """Per decision: the desktop time after it (until the next decide) and which calls."""
        out = []
        for k, (_, end) in enumerate(self.decides):
            nxt = self.decides[k + 1][0] if k + 1 < len(self.decides) else float("inf")
            mine = [(kind, t0, t1) for kind, t0, t1 in self.io if end <= t0 < nxt]
            out.append(
                {
                    "io_ms": sum(t1 - t0 for _, t0, t1 in mine) * 1000,
                    "observe_ms": sum(t1 - t0 for k_, t0, t1 in mine if k_ == "observe") * 1000,
                    "act_ms": sum(t1 - t0 for k_, t0, t1 in mine if k_ == "act") * 1000,
                    "windows_ms": sum(t1 - t0 for k_, t0, t1 in mine if k_ == "windows") * 1000,
                    "acts": float(sum(1 for k_, _, _ in mine if k_ == "act")),
                }
            )
        return out


REC = Recorder()


def _timed(kind: str, fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not REC.active or REC.depth:
            return await fn(*args, **kwargs)
        REC.depth += 1
        t0 = time.perf_counter()
        try:
            return await fn(*args, **kwargs)
        finally:
            REC.io.append((kind, t0, time.perf_counter()))
            REC.depth -= 1

    return wrapper


def _install_probes() -> None:
    from deskpilot.kernel.kernel import Kernel
    from deskpilot.provider import Provider
    from deskpilot.provider.transport.chat_client import ChatClient
    from deskpilot.runtime import action_tools
    from deskpilot.runtime.delegated import operator

    operator.get_app_state = _timed("observe", operator.get_app_state)  # type: ignore[assignment]
    action_tools.act = _timed("act", action_tools.act)  # type: ignore[assignment]
    Kernel.windows = _timed("windows", Kernel.windows)  # type: ignore[method-assign]
    decide = Provider.decide

    async def timed_decide(self: Any, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return await decide(self, *args, **kwargs)
        finally:
            if REC.active:
                REC.decides.append((t0, time.perf_counter()))

    Provider.decide = timed_decide  # type: ignore[method-assign]
    complete = ChatClient.complete

    async def timed_complete(self: Any, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return await complete(self, *args, **kwargs)
        finally:
            if REC.active:
                REC.http.append((t0, time.perf_counter()))

    ChatClient.complete = timed_complete  # type: ignore[method-assign]


# ----------------------------------------------------------------------------- runs


def _json(text: str) -> dict[str, Any]:
    return json.loads(text.split("\n\ndeskpilot diagnostic")[0])


async def _start_form() -> Any:
    from deskpilot.desktop.apps import launch_accessible

    argv = [shutil.which("zenity") or "zenity", *FORM_ARGV]
    app = await asyncio.to_thread(launch_accessible, argv, capture_stdout=True)
    await asyncio.sleep(0.3)
    return app


def _submitted(app: Any) -> str:
    try:
        out, _ = app.proc.communicate(timeout=5)
    except Exception:
        return "?"
    return (out or b"").decode(errors="replace").strip()


@dataclass
class TaskRun:
    state: str
    wall_ms: float
    model_calls: int
    decisions: int
    own_ms: list[float]
    steps: list[dict[str, float]]
    decide_local_ms: list[float]
    submitted: str


async def delegated_task(rt: Any, model: ScriptedModel) -> TaskRun:
    app = await _start_form()
    try:
        before = model.calls
        REC.reset()
        REC.active = True
        t0 = time.perf_counter()
        started = await rt.call(
            "start_task",
            {
                "goal": "Fill the Bench form: " + ", ".join(f"{k}={v}" for k, v in VALUES.items()),
                "app": app.pid,
                "success_criteria": [
                    {
                        "kind": "application_state",
                        "assertion": "window_exists",
                        "app": str(app.pid),
                        "expected": False,
                    }
                ],
            },
            agent_session=SESSION,
        )
        if started.is_error:
            raise SystemExit(f"start_task failed: {started.text[:800]}")
        task_id = _json(started.text)["taskId"]
        wait = {"task_id": task_id, "timeout_ms": 120_000}
        waited = await rt.call("wait_for_completion", wait, agent_session=SESSION)
        wall = (time.perf_counter() - t0) * 1000
        REC.active = False
        status = _json(waited.text)
        task = rt.ctx.tasks.get(task_id)
        steps = REC.steps()
        if len(steps) != len(task.own_ms):
            raise SystemExit(f"{len(steps)} decides but {len(task.own_ms)} own_ms entries")
        return TaskRun(
            state=str(status.get("state")),
            wall_ms=wall,
            model_calls=model.calls - before,
            decisions=task.decisions,
            own_ms=list(task.own_ms),
            steps=steps,
            decide_local_ms=REC.decide_local_ms(),
            submitted=_submitted(app),
        )
    finally:
        REC.active = False
        app.stop()


def _state_id(text: str) -> str | None:
    m = _STATE_ID.search(text)
    return m.group(1) if m else None


async def direct_agent(rt: Any) -> tuple[list[float], list[float], str]:
    """The same form filled through ``runtime.call``: (observe ms, per-action ms, submitted)."""
    app = await _start_form()
    filler = FormFiller(VALUES)
    observe_ms: list[float] = []
    act_ms: list[float] = []

    async def timed(tool: str, args: dict[str, Any], into: list[float]) -> str:
        t0 = time.perf_counter()
        out = await rt.call(tool, args, agent_session=SESSION + "-direct")
        into.append((time.perf_counter() - t0) * 1000)
        if out.is_error:
            raise SystemExit(f"{tool} failed: {out.text[:800]}")
        return out.text

    try:
        text = await timed("get_app_state", {"app": app.pid}, observe_ms)
        for label in LABELS:
            sid = _state_id(text)
            if sid is None:
                text = await timed("get_app_state", {"app": app.pid}, observe_ms)
                sid = _state_id(text)
            el = filler.field(parse_elements(text), label)
            assert el is not None and sid is not None, label
            args = {"state_id": sid, "element_id": el.id, "text": VALUES[label]}
            text = await timed("type_text", args, act_ms)
        sid = _state_id(text)
        if sid is None:
            text = await timed("get_app_state", {"app": app.pid}, observe_ms)
            sid = _state_id(text)
        ok = filler.submit(parse_elements(text))
        assert ok is not None and sid is not None
        await timed("click", {"state_id": sid, "element_id": ok.id}, act_ms)
        return observe_ms, act_ms, _submitted(app)
    finally:
        app.stop()


async def mode(batch: bool, n: int, data_root: Path) -> tuple[list[TaskRun], Any]:
    """``n`` delegated tasks (after one warm-up) with one kernel/runtime for this mode, and
    the direct-agent baseline ``n`` times in the same runtime (batches off only)."""
    from deskpilot.runtime.wiring import build_runtime, default_kernel

    os.environ["DESKPILOT_ACTION_BATCH"] = "1" if batch else "0"
    os.environ["DESKPILOT_DATA_DIR"] = str(data_root / ("on" if batch else "off"))
    model = ScriptedModel(FormFiller(VALUES)).start()
    os.environ["DESKPILOT_PROVIDER_BASE_URL"] = model.base_url
    os.environ["DESKPILOT_PROVIDER_MODEL"] = model.model_id
    os.environ["DESKPILOT_PROVIDER_API_KEY"] = "bench"
    kernel = default_kernel()
    assert kernel.flags.enabled("actionBatch") is batch
    rt = build_runtime(kernel=kernel)
    runs: list[TaskRun] = []
    direct: list[tuple[list[float], list[float], str]] = []
    try:
        await delegated_task(rt, model)  # warm-up: host spawn, AT-SPI caches
        if not batch:
            await direct_agent(rt)
        for _ in range(n):
            runs.append(await delegated_task(rt, model))
            if not batch:
                direct.append(await direct_agent(rt))
    finally:
        await rt.close()
        model.close()
    if model.errors:
        raise SystemExit(f"scripted model errors: {model.errors}")
    return runs, direct


# ----------------------------------------------------------------------------- figures


def _med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def _p90(xs: list[float]) -> float:
    if len(xs) < 2:
        return xs[0] if xs else float("nan")
    return statistics.quantiles(xs, n=10, method="inclusive")[-1]


def _row(name: str, xs: list[float]) -> str:
    if not xs:
        return f"| {name} | 0 | – | – | – | – |"
    figures = " | ".join(f"{x:.1f}" for x in (_med(xs), _p90(xs), min(xs), max(xs)))
    return f"| {name} | {len(xs)} | {figures} |"


def report(off: list[TaskRun], on: list[TaskRun], direct: list[Any]) -> bool:
    own, io, diff = [], [], []
    act_own, act_io, act_diff, obs_in_act = [], [], [], []
    ver_own, ver_io, ver_diff, ver_obs, ver_win = [], [], [], [], []
    for run in off:
        for k, (o, s) in enumerate(zip(run.own_ms, run.steps, strict=True)):
            own.append(o)
            io.append(s["io_ms"])
            diff.append(o - s["io_ms"])
            if s["acts"] >= 1:
                act_own.append(o)
                act_io.append(s["io_ms"])
                act_diff.append(o - s["io_ms"])
                obs_in_act.append(s["observe_ms"])
            elif k == len(run.own_ms) - 1:  # ready_for_verification: observe + verify
                ver_own.append(o)
                ver_io.append(s["io_ms"])
                ver_obs.append(s["observe_ms"])
                ver_win.append(s["windows_ms"])
                ver_diff.append(o - s["io_ms"])
    batch_diff = [
        o - s["io_ms"] for r in on for o, s in zip(r.own_ms, r.steps, strict=True) if s["acts"] > 1
    ]
    local = [x for r in off for x in r.decide_local_ms]
    d_obs = [x for ob, _, _ in direct for x in ob]
    d_act = [x for _, ac, _ in direct for x in ac]
    lines = [
        "### Per step, batches off (ms)",
        "",
        "| measure | samples | median | p90 | min | max |",
        "|---|---|---|---|---|---|",
        _row("step time outside the model call (`own_ms`), all steps", own),
        _row("of which observe + act (+ window list)", io),
        _row("**operator's own work (difference)**, all steps", diff),
        _row("action steps: `own_ms`", act_own),
        _row("action steps: observe + act", act_io),
        _row("action steps: of which a re-observe (no state in the result)", obs_in_act),
        _row("**action steps: difference**", act_diff),
        _row("verification step: `own_ms`", ver_own),
        _row("verification step: observe + window list", ver_io),
        _row("verification step: of which observe (the window is gone)", ver_obs),
        _row("verification step: of which window list", ver_win),
        _row("verification step: difference (verify + record)", ver_diff),
        _row("batches on: batch steps (6 actions): difference", batch_diff),
        _row("context: provider's local work per decide (decide − HTTP), excluded", local),
        _row("baseline: agent `type_text`/`click` via runtime.call", d_act),
        _row("baseline: agent `get_app_state` via runtime.call", d_obs),
        "",
        "### Model calls, 5 fields + OK (6 actions)",
        "",
        "| batches | tasks | completed | model calls (median, range) | decisions "
        "| task wall ms (median, range) |",
        "|---|---|---|---|---|---|",
    ]
    for name, runs in (("off", off), ("on", on)):
        calls = [float(r.model_calls) for r in runs]
        dec = [float(r.decisions) for r in runs]
        wall = [r.wall_ms for r in runs]
        done = sum(1 for r in runs if r.state == "completed")
        lines.append(
            f"| {name} | {len(runs)} | {done} | {_med(calls):.0f} ({min(calls):.0f}–"
            f"{max(calls):.0f}) | {_med(dec):.0f} | {_med(wall):.0f} ({min(wall):.0f}–"
            f"{max(wall):.0f}) |"
        )
    calls_off = _med([float(r.model_calls) for r in off])
    calls_on = _med([float(r.model_calls) for r in on])
    wall_off = _med([r.wall_ms for r in off])
    wall_on = _med([r.wall_ms for r in on])
    lines += [
        "",
        f"ratio off/on: model calls {calls_off / calls_on:.2f}×, wall time "
        f"{wall_off / wall_on:.2f}×",
        "",
        f"operator's own work per action step: median {_med(act_diff):.1f} ms; "
        f"ratio of the operator's step (own_ms) to the agent's own call: "
        f"{_med(act_own) / _med(d_act):.2f}×",
    ]
    print("\n".join(lines))
    wanted = "|".join(VALUES[label] for label in LABELS)
    bad = [r.submitted for r in [*off, *on] if r.submitted != wanted or r.state != "completed"]
    bad += [s for _, _, s in direct if s != wanted]
    if bad:
        print(f"\nWARNING: {len(bad)} runs did not submit {wanted!r}: {bad[:3]}")
    ok = _med(act_diff) <= 30
    print(f"\ntarget: operator's own work ≤ 30 ms median per step: {'PASS' if ok else 'FAIL'}")
    return ok and not bad


async def run_all(n: int) -> tuple[list[TaskRun], list[TaskRun], list[Any]]:
    _install_probes()
    data_root = Path(tempfile.mkdtemp(prefix="deskpilot-opbench-"))
    try:
        off, direct = await mode(False, n, data_root)
        on, _ = await mode(True, n, data_root)
    finally:
        shutil.rmtree(data_root, ignore_errors=True)
    return off, on, direct


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=5, help="timed tasks per mode")
    ns = parser.parse_args()
    if shutil.which("zenity") is None:
        raise SystemExit("zenity is not installed")
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    os.environ.setdefault("DESKPILOT_HOST_LOCAL_TRUST", "1")
    from deskpilot import desktop as vdesk

    state = None
    if not os.environ.get("DISPLAY"):
        state = vdesk.up(1280, 800)
        os.environ.update(state.env)
    try:
        off, on, direct = asyncio.run(run_all(ns.n))
    finally:
        if state is not None:
            vdesk.down(state)
    print("command:", " ".join([os.path.relpath(sys.executable), *sys.argv]))
    with contextlib.suppress(OSError):
        after = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"cpus: {os.cpu_count()}; load average before: {load_before}; after: {after}")
    print()
    ok = report(off, on, direct)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
