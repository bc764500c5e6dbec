"""What ``deskpilot eval`` costs: a desktop's start to its first observation, its memory, and a
suite's wall time on N desktops against the sum of its task times.

Why: the eval's promise is "no VMs: a private desktop starts in about a second", and
``--desktops N`` is bounded by cores and memory (eval/capacity.py) with a per-desktop figure
that has to be measured, not guessed. The machine is shared, so the load average is printed
before and after each part.

1. ``start → first observation`` (``--rounds`` times): ``desktop.up()``, one app started
   through the eval's setup (launch policy, /proc display check, accessibility wait), and the
   eval's own host observing it (``python -I -m deskpilot.host`` spawned, handshake, tree).
2. memory: the proportional set size (PSS) of everything on the display (eval/capacity.py)
   — a bare desktop, then with gnome-calculator, then with Chromium on a local page.
3. the starter suite with the reference solver (``tests/eval/reference_solver.py``) for each
   ``--desktops`` value: wall time, the sum of task times, their ratio, peak memory per task.
4. ``--engines threads,ray``: the same tasks on the same number of desktops with each engine,
   the engines interleaved round by round (so both see the same load): the time until the
   results are shown (what a person waits for: Ray's start included, its shutdown comes
   after), until the process exits, the run's own wall, Ray's start; medians and ratios.

Run (from the repo root): ``DESKPILOT_HOST_LOCAL_TRUST=1 .venv/bin/python
benchmarks/eval_bench.py --rounds 5 --desktops 1,2,4`` (``--tasks a,b`` for fewer tasks);
the engines alone: ``… benchmarks/eval_bench.py --only-engines --engines threads,ray
--engine-rounds 3`` (``--engine-desktops 2``, ``--engine-tasks`` three starter tasks by default).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from deskpilot import desktop as vdesk
from deskpilot.eval.capacity import desktop_rss_mb
from deskpilot.eval.checking import host_config
from deskpilot.eval.suite import LaunchSpec
from deskpilot.eval.task_env import DESKTOP_KEYS, task_environment
from deskpilot.eval.task_setup import Launched, chromium_launch, launch_one
from deskpilot.hostclient.backend import HostBackend
from deskpilot.protocol.wire import TargetSpec

ROOT = Path(__file__).resolve().parents[1]
SOLVER = ROOT / "tests" / "eval" / "reference_solver.py"


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def task_env(state: vdesk.DesktopState, scratch: Path) -> dict[str, str]:
    return task_environment(os.environ, state.env, scratch)


async def first_observation(env: dict[str, str], app: str, log: Path) -> None:
    backend = HostBackend(host_config(env, None, log), heartbeat=False)
    try:
        await backend.observe("eval-bench", TargetSpec(app=app), include_screenshot=False)
    finally:
        await backend.close()


def start_to_observation(rounds: int) -> None:
    print(f"## start → first observation (zenity), {rounds} rounds; load {load()}")
    rows: dict[str, list[float]] = {"desktop": [], "app": [], "observe": [], "total": []}
    for _ in range(rounds):
        with tempfile.TemporaryDirectory(prefix="eval-bench-") as tmp:
            scratch = Path(tmp)
            work = scratch / "work"
            work.mkdir()
            t0 = time.monotonic()
            state = vdesk.up()
            t1 = time.monotonic()
            launched: Launched | None = None
            try:
                env = task_env(state, scratch)
                spec = LaunchSpec(app="zenity", args=["--info", "--text=benchmark"])
                launched = launch_one(spec, env, work, state.display)
                t2 = time.monotonic()
                asyncio.run(first_observation(env, "zenity", scratch / "host.log"))
                t3 = time.monotonic()
            finally:
                if launched is not None:
                    launched.proc.kill()
                    launched.proc.wait()
                vdesk.down(state)
            rows["desktop"].append(t1 - t0)
            rows["app"].append(t2 - t1)
            rows["observe"].append(t3 - t2)
            rows["total"].append(t3 - t0)
    for name, values in rows.items():
        ms = sorted(v * 1000 for v in values)
        print(f"{name}_median_ms: {statistics.median(ms):.0f}  (min {ms[0]:.0f}, max {ms[-1]:.0f})")
    print(f"load after: {load()}")


def rss(state: vdesk.DesktopState, apps: list[Launched]) -> float:
    return desktop_rss_mb(state.display, (*state.pids.values(), *(a.pid for a in apps)))


def memory() -> None:
    print(f"## memory per desktop (PSS of everything on its display, MiB); load {load()}")
    with tempfile.TemporaryDirectory(prefix="eval-bench-") as tmp:
        scratch = Path(tmp)
        work = scratch / "work"
        work.mkdir()
        state = vdesk.up()
        apps: list[Launched] = []
        try:
            env = task_env(state, scratch)
            time.sleep(1.0)
            print(f"bare desktop (Xvfb, D-Bus, AT-SPI): {rss(state, apps)}")
            apps.append(
                launch_one(
                    LaunchSpec(app="gnome-calculator", args=["--mode=basic"]),
                    env,
                    work,
                    state.display,
                )
            )
            time.sleep(1.0)
            print(f"+ gnome-calculator: {rss(state, apps)}")
            page = work / "p.html"
            page.write_text("<title>bench</title><h1>A page</h1><button>Go</button>")
            apps.append(
                launch_one(
                    chromium_launch(f"file://{page}", work, 1280, 800), env, work, state.display
                )
            )
            time.sleep(3.0)
            print(f"+ Chromium on a local page: {rss(state, apps)}")
        finally:
            for a in apps:
                a.proc.kill()
                a.proc.wait()
            vdesk.down(state)


def eval_argv(engine: str, desktops: int, out: str) -> list[str]:
    """``deskpilot eval`` of the starter suite with the reference solver, ``--json``."""
    return [
        str(Path(sys.executable).with_name("deskpilot")),
        "eval",
        str(ROOT / "suites" / "starter.json"),
        "--engine",
        engine,
        "--desktops",
        str(desktops),
        "--agent",
        "mcp:" + shlex.join([sys.executable, str(SOLVER)]),
        "--out",
        out,
        "--json",
    ]


def suite_runs(desktops: list[int], tasks: str | None) -> None:
    for n in desktops:
        with tempfile.TemporaryDirectory(prefix="eval-bench-suite-") as tmp:
            before = load()
            argv = eval_argv("threads", n, tmp)  # the engines are compared apart
            if tasks:
                argv += ["--tasks", tasks]
            t0 = time.monotonic()
            proc = subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ))
            elapsed = time.monotonic() - t0
            data = json.loads((Path(tmp) / "results.json").read_text())
            tot = data["totals"]
            mem = sorted(t["desktop"].get("memoryMb") or 0 for t in data["tasks"])
            by_app: dict[str, list[float]] = {}
            for t in data["tasks"]:
                by_app.setdefault(t["id"].split("-")[0], []).append(
                    t["desktop"].get("memoryMb") or 0
                )
            apps = ", ".join(f"{a} {max(v):.0f}" for a, v in sorted(by_app.items()))
            print(
                f"## suite, --desktops {n}: exit {proc.returncode}, {tot['passed']}/{tot['tasks']} "
                f"passed; wall {data['wallS']:.1f} s (process {elapsed:.1f} s), sum of task "
                f"times {tot['sumTaskS']:.1f} s, wall/sum {data['wallS'] / tot['sumTaskS']:.2f}; "
                f"peak memory per task median {statistics.median(mem):.0f} MiB, max {mem[-1]:.0f} "
                f"(by app: {apps}); load before {before}, after {load()}"
            )


def engine_runs(engines: list[str], tasks: str, desktops: int, rounds: int) -> None:
    """Each engine on the same tasks, interleaved round by round; medians and the ratio."""
    print(
        f"## engines {', '.join(engines)}: tasks {tasks}, --desktops {desktops}, "
        f"{rounds} rounds interleaved; load {load()}"
    )
    rows: dict[str, dict[str, list[float]]] = {e: {} for e in engines}
    for r in range(rounds):
        for engine in engines:
            with tempfile.TemporaryDirectory(prefix="eval-bench-engine-") as tmp:
                before = load()
                argv = [*eval_argv(engine, desktops, tmp), "--tasks", tasks]
                t0 = time.monotonic()
                proc = subprocess.Popen(
                    argv,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                    env=dict(os.environ),
                )
                assert proc.stdout is not None
                proc.stdout.readline()  # --json: the path of results.json, once it is final
                shown = time.monotonic() - t0
                proc.wait()
                elapsed = time.monotonic() - t0
                data = json.loads((Path(tmp) / "results.json").read_text())
            tot = data["totals"]
            for t in data["tasks"]:
                if t["outcome"] != "passed":
                    said = t["error"] or json.dumps(t["verification"])[:300]
                    print(f"  {engine} {t['id']}: {t['outcome']}: {said}")
            start = float(data["engine"].get("startS") or 0.0)
            got = rows[engine]
            downs = [float(t["desktop"].get("teardownS") or 0) for t in data["tasks"]]
            for key, value in (
                ("teardown", statistics.median(downs)),
                ("shown", shown),
                ("process", elapsed),
                ("wall", float(data["wallS"])),
                ("start", start),
                ("sum", float(tot["sumTaskS"])),
            ):
                got.setdefault(key, []).append(value)
            print(
                f"round {r + 1} {engine}: exit {proc.returncode}, {tot['passed']}/{tot['tasks']} "
                f"passed; results shown {shown:.1f} s, process {elapsed:.1f} s, run wall "
                f"{data['wallS']:.1f} s, Ray start {start:.2f} s (driver waited "
                f"{data['engine'].get('waitS', 0):.2f} s), sum of task times "
                f"{tot['sumTaskS']:.1f} s; load {before} → {load()}"
            )
    medians = {e: {k: statistics.median(v) for k, v in rows[e].items()} for e in engines}
    for engine, m in medians.items():
        print(
            f"{engine}: median results shown {m['shown']:.1f} s, process {m['process']:.1f} s, "
            f"run wall {m['wall']:.1f} s, "
            f"engine start {m['start']:.2f} s, sum of task times {m['sum']:.1f} s, a task's "
            f"teardown {m['teardown']:.2f} s"
        )
    if len(engines) == 2:
        a, b = engines
        print(
            f"{b} ÷ {a}: results shown {medians[b]['shown'] / medians[a]['shown']:.2f}, "
            f"process {medians[b]['process'] / medians[a]['process']:.2f}, "
            f"run wall {medians[b]['wall'] / medians[a]['wall']:.2f}"
        )
    print(f"load after: {load()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--desktops", default="1,2,4", help="comma-separated --desktops values")
    ap.add_argument("--tasks", default=None, help="only these starter tasks (a,b)")
    ap.add_argument("--skip-suite", action="store_true")
    ap.add_argument("--engines", default="threads,ray", help="engines to compare (part 4)")
    ap.add_argument("--engine-rounds", type=int, default=3)
    ap.add_argument("--engine-desktops", type=int, default=2)
    ap.add_argument("--engine-tasks", default="zenity-entry-name,zenity-scale,calculator-add")
    ap.add_argument("--only-engines", action="store_true", help="part 4 only")
    args = ap.parse_args()
    for key in DESKTOP_KEYS:
        os.environ.pop(key, None)  # every part runs on its own private desktops
    print(f"cores {os.cpu_count()}, load {load()}")
    if not args.only_engines:
        start_to_observation(args.rounds)
        memory()
        if not args.skip_suite:
            suite_runs([int(n) for n in args.desktops.split(",")], args.tasks)
    if args.engines:
        engine_runs(
            args.engines.split(","), args.engine_tasks, args.engine_desktops, args.engine_rounds
        )


if __name__ == "__main__":
    main()
