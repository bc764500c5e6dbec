"""The local engine: a suite's task runs spread over N desktop workers on this machine.

Each slot is a thread driving one :class:`~deskpilot.eval.worker.DesktopWorker` (the work
itself is in subprocesses: the desktop, the apps, the server, the agent); a slot takes the
next pending run, so N desktops are up at most at any moment. After every run
``results.json`` is rewritten, so an interrupted run keeps what it finished and ``--resume``
skips it. The Ray engine (ray_engine.py) hands the same runs to actors wrapping the same
worker; both start from :func:`plan_runs`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from deskpilot.eval.capacity import Machine
from deskpilot.eval.results import RESULTS_FILE, TaskRecord, load_finished, write_results
from deskpilot.eval.suite import Suite, SuiteTask
from deskpilot.eval.worker import DesktopWorker, WorkerConfig


@dataclass(frozen=True)
class PendingRun:
    task: SuiteTask
    repeat: int


@dataclass
class Progress:
    """What a view shows: counts, and the runs in flight (told on every change)."""

    total: int
    done: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    running: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    #: seconds the finished runs took (for the ETA)
    task_seconds: list[float] = field(default_factory=list)

    def task_elapsed(self) -> float:
        return time.monotonic() - self.started

    def eta_s(self, slots: int) -> float | None:
        if not self.task_seconds:
            return None
        left = self.total - self.done - self.skipped
        mean = sum(self.task_seconds) / len(self.task_seconds)
        return max(0.0, left * mean / max(1, slots))


@dataclass
class EvalOptions:
    suite: Suite
    suite_path: Path
    tasks: Sequence[SuiteTask]
    worker: WorkerConfig
    desktops: int = 1
    repeat: int = 1
    resume: bool = False
    provider: str | None = None
    on_progress: Callable[[Progress, TaskRecord | None], None] | None = None


@dataclass
class EvalOutcome:
    records: list[TaskRecord]
    results_path: Path
    wall_s: float
    skipped: int
    interrupted: bool = False
    #: what is left to end once the results are shown (the Ray engine's shutdown)
    closer: Callable[[], None] | None = None

    @property
    def ok(self) -> bool:
        return all(r.outcome == "passed" for r in self.records)

    def close(self) -> None:
        """End what the engine kept running for after the results (idempotent)."""
        closer, self.closer = self.closer, None
        if closer is not None:
            closer()


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class RunPlan:
    """What a run starts from, whichever engine runs it: the runs left, the runs an earlier
    run finished (``--resume``), the counts shown, and the header of ``results.json``."""

    results_path: Path
    runs: list[PendingRun]
    kept: list[TaskRecord]
    progress: Progress
    header: dict[str, Any]
    started: float = field(default_factory=time.monotonic)

    def label(self, run: PendingRun, repeat: int) -> str:
        return run.task.id if repeat == 1 else f"{run.task.id}#{run.repeat}"

    def count(self, record: TaskRecord) -> None:
        """A finished run on the counts (the caller holds its lock, if any)."""
        p = self.progress
        p.done += 1
        p.task_seconds.append(record.time_s)
        if record.outcome == "passed":
            p.passed += 1
        elif record.outcome == "failed":
            p.failed += 1
        else:
            p.errors += 1

    def write(self, records: Sequence[TaskRecord]) -> None:
        wall = round(time.monotonic() - self.started, 3)
        write_results(self.results_path, {**self.header, "wallS": wall}, records)

    def finish(self, records: list[TaskRecord], interrupted: bool) -> EvalOutcome:
        wall = time.monotonic() - self.started
        header_done: dict[str, Any] = {
            **self.header,
            "wallS": round(wall, 3),
            "endedAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        write_results(self.results_path, header_done, records)
        ordered = sorted(records, key=lambda r: (r.task_id, r.repeat))
        return EvalOutcome(ordered, self.results_path, wall, len(self.kept), interrupted)


def plan_runs(options: EvalOptions, engine: dict[str, Any]) -> RunPlan:
    """The runs to do (``--resume`` drops the finished ones) and the results header;
    ``engine`` is what the header says ran them (``{"kind": "threads"}``, Ray's address…)."""
    out = options.worker.out_dir
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    results_path = out / RESULTS_FILE
    digest = sha256_of(options.suite_path)
    if not options.resume and results_path.exists():
        raise ValueError(
            f"{out} holds the results of an earlier run: --resume continues it; give another "
            "--out for a new one (nothing was overwritten)"
        )
    agent = options.worker.agent.label
    finished = load_finished(results_path, digest, agent) if options.resume else {}
    runs = [
        PendingRun(t, k)
        for k in range(options.repeat)
        for t in options.tasks
        if f"{t.id}#{k}" not in finished
    ]
    # every finished run is kept in the rewritten results, the ones --tasks left out too
    kept = list(finished.values())
    progress = Progress(total=len(runs) + len(kept), skipped=len(kept))
    header = {
        "suite": {
            "name": options.suite.name,
            "path": str(options.suite_path),
            "sha256": digest,
        },
        "agent": agent,
        "provider": options.provider,
        "desktops": options.desktops,
        "repeat": options.repeat,
        "hostCommand": list(options.worker.host_command or []) or None,
        "engine": engine,
        "machine": Machine.here().to_json(),
        "startedAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    return RunPlan(results_path, runs, kept, progress, header)


def run_eval(options: EvalOptions) -> EvalOutcome:
    """The thread engine: a thread per desktop slot on this machine (ray_engine.py spreads
    the same runs over Ray actors)."""
    plan = plan_runs(options, {"kind": "threads"})
    progress, runs = plan.progress, plan.runs
    records: list[TaskRecord] = list(plan.kept)
    lock = threading.Lock()
    pending: queue.Queue[PendingRun] = queue.Queue()
    for run in runs:
        pending.put(run)

    def tell(record: TaskRecord | None) -> None:
        if options.on_progress is not None:
            options.on_progress(progress, record)

    cancel = options.worker.cancel or threading.Event()
    worker_config = dataclasses.replace(options.worker, cancel=cancel, background_teardown=True)
    workers: list[DesktopWorker] = []

    def slot() -> None:
        worker = DesktopWorker(worker_config)
        with lock:
            workers.append(worker)
        while not cancel.is_set():
            try:
                run = pending.get_nowait()
            except queue.Empty:
                return
            label = plan.label(run, options.repeat)
            with lock:
                progress.running.append(label)
                tell(None)
            record = worker.run(run.task, run.repeat)
            with lock:
                progress.running.remove(label)
                plan.count(record)
                records.append(record)
                plan.write(records)
                tell(record)

    threads = [
        threading.Thread(target=slot, name=f"eval-desktop-{i}", daemon=True)
        for i in range(max(1, min(options.desktops, len(runs) or 1)))
    ]
    tell(None)
    for th in threads:
        th.start()
    interrupted = False
    try:
        for th in threads:
            while th.is_alive():
                th.join(timeout=0.5)
    except KeyboardInterrupt:
        # the running agents are ended, their desktops torn down; the runs are recorded as
        # errors (``--resume`` runs them again)
        interrupted = True
        cancel.set()
        for th in threads:
            th.join()
    for worker in workers:  # the last desktops' teardown, and its times on the records
        worker.close(records)
    return plan.finish(records, interrupted)
