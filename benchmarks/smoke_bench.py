"""deskpilot smoke: what a case costs beyond the agent's own work, in one run.

The full suite (12 cases) runs ``--n`` times (after one warm-up run) against the scripted
reference model (smoke/fake_model/, a real HTTP server on loopback that answers in about a
millisecond), so what is measured is deskpilot, not a model. Per case, from its lifecycle
record and event stream:

* **agent start**: spawn → the agent's ``session_start`` (Python, imports, runtime, provider);
* **agent work**: ``session_start`` → its last ``turn_end`` (the tasks: model requests, tools,
  events) — the baseline the overhead is set against;
* **exit**: the last ``turn_end`` → the process gone (closing the runtime);
* **judging**: the runner's own time per case beyond the process (artifacts read, checks,
  summary records) — the case's wall time minus the process's.

Medians over all cases and runs, and the ratio of the process overhead (start + exit) to the
agent's work. Run: ``env -u DISPLAY -u DBUS_SESSION_BUS_ADDRESS DESKPILOT_HOST_LOCAL_TRUST=1
.venv/bin/python benchmarks/smoke_bench.py [--n 3]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from deskpilot.smoke.cases import select  # noqa: E402
from deskpilot.smoke.fake_model.reference import Router  # noqa: E402
from deskpilot.smoke.fake_model.server import ScriptedModel  # noqa: E402
from deskpilot.smoke.runner import Options, run  # noqa: E402


def one_run(tmp: Path, index: int) -> tuple[list[dict[str, Any]], list[float], float]:
    cases = select(["full-suite"], [])
    walls: list[float] = []
    last = [time.monotonic()]

    def progress(record: dict[str, Any]) -> None:
        now = time.monotonic()
        walls.append(now - last[0])
        last[0] = now

    with ScriptedModel(Router(cases)) as model:
        env = {
            k: v for k, v in os.environ.items() if k not in ("DISPLAY", "DBUS_SESSION_BUS_ADDRESS")
        }
        env.update(
            DESKPILOT_PROVIDER_BASE_URL=model.base_url,
            DESKPILOT_PROVIDER_MODEL="reference",
            DESKPILOT_PROVIDER_API_KEY="smoke-bench-key-0123456789",
            DESKPILOT_DATA_DIR=str(tmp / "data"),
        )
        t0 = time.monotonic()
        last[0] = t0
        outcome = run(
            Options(cases=cases, out_dir=tmp / f"run-{index}", env=env, progress=progress)
        )
        total = time.monotonic() - t0
    if not outcome.summary["ok"]:
        raise SystemExit(f"run {index} failed: {outcome.summary['totals']}")
    return outcome.summary["caseResults"], walls, total


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=3)
    args = parser.parse_args()
    starts: list[float] = []
    works: list[float] = []
    exits: list[float] = []
    judging: list[float] = []
    totals: list[float] = []
    with tempfile.TemporaryDirectory(prefix="smoke-bench-") as tmp:
        one_run(Path(tmp), 0)  # warm-up: caches, bytecode
        for i in range(1, args.n + 1):
            records, walls, total = one_run(Path(tmp), i)
            totals.append(total)
            for record, wall in zip(records, walls, strict=True):
                life = record["lifecycle"]
                start, end = life["agentStartElapsedSeconds"], life["agentEndElapsedSeconds"]
                starts.append(start)
                works.append(end - start)
                exits.append(life["elapsedSeconds"] - end)
                judging.append(wall - life["elapsedSeconds"])
    overhead = median(starts) + median(exits)
    print(f"full suite (12 cases) x{args.n}, reference model")
    print(f"  suite wall time      median {median(totals):6.2f} s")
    print(f"  agent start          median {median(starts) * 1000:7.0f} ms per case")
    print(f"  agent work (baseline) median {median(works) * 1000:6.0f} ms per case")
    print(f"  exit after the end   median {median(exits) * 1000:7.0f} ms per case")
    print(f"  runner's own judging median {median(judging) * 1000:7.0f} ms per case")
    print(f"  process overhead / agent work: {overhead / median(works):.1f}x")


if __name__ == "__main__":
    main()
