"""The Ray engine: a suite's task runs spread over Ray actors, one per desktop slot.

Each slot is a :class:`DesktopActor` — a Ray actor process owning one
:class:`~deskpilot.eval.worker.DesktopWorker`, so the desktop, its host, the apps and the agent
of a task all run on the actor's node. The driver (``deskpilot eval``) hands the next pending
run to whichever actor is free and takes each record back the moment it is done: the counts,
the live view and ``results.json`` are updated per task, as with the thread engine.

Ray is embedded by default (``ray.init`` on this machine, sized to ``--desktops``, no
dashboard, usage stats off, its files in a directory of its own — ray_start.py, which also
starts it while the driver prepares); ``--ray ADDRESS`` joins a running cluster instead
(``ray start --head`` …).

A lost actor — its process died mid-task (killed, out of memory, its node gone) — loses only
that task's attempt: the processes the actor started are ended (each carries the actor's
token in its environment, :data:`ACTOR_TOKEN`, so a sweep on the actor's node finds them
although their parent is gone), the attempt's directory is moved aside (``ID.lost``), a new
actor takes the slot, and the task runs once more on another actor; its record says so in
``retriedAfter``. A second loss of the same task is recorded as an ``error``.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import uuid
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deskpilot.eval import procfs
from deskpilot.eval.engine import EvalOptions, EvalOutcome, PendingRun, RunPlan, plan_runs
from deskpilot.eval.ray_start import RayStart, ray_module
from deskpilot.eval.results import ERROR, TaskRecord
from deskpilot.eval.suite import SuiteTask
from deskpilot.eval.task_env import PROVIDER_PREFIX
from deskpilot.eval.worker import DesktopWorker, WorkerConfig, task_dir_name

#: set in an actor's environment and in its tasks': how a sweep finds a lost actor's processes
ACTOR_TOKEN = "DESKPILOT_EVAL_ACTOR"
#: how long a sweep waits for SIGTERM before SIGKILL
SWEEP_GRACE_S = 3.0


#: the driver's variables an actor's tasks start from (:func:`actor_base_env`)
ACTOR_ENV_KEYS = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TMPDIR",
        "TERM",
        "XDG_RUNTIME_DIR",
        "XDG_DATA_DIRS",
        "VIRTUAL_ENV",
        "PYTHONPATH",
    }
)
#: a name with one of these in it is a secret, never shipped in a base environment
SECRET_MARKS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")


def actor_base_env(env: Mapping[str, str]) -> dict[str, str]:
    """The part of the driver's environment an actor's tasks start from.

    The worker config is an actor-constructor argument: Ray pickles it into its object store
    and, for ``--ray ADDRESS``, sends it to other machines, so the person's whole environment
    (cloud credentials, tokens, an ssh agent's socket, their desktop) must not ride along. Kept:
    what a process needs to run at all and to read and write text (PATH, HOME, the user, the
    shell, LANG/LANGUAGE/LC_*, TZ, TMPDIR, TERM), the runtime and data dirs the desktop's
    buses and apps use (XDG_RUNTIME_DIR, XDG_DATA_DIRS), the Python the agent and the
    host run from (VIRTUAL_ENV, PYTHONPATH), and deskpilot's own settings (``DESKPILOT_*``)
    except its provider's (the operator's model travels in ``provider_env``, only when it is
    the agent) and any name that reads as a secret (:data:`SECRET_MARKS`: a key, a token).
    Everything else (the desktop, the config homes) the worker sets per task anyway."""
    kept: dict[str, str] = {}
    for name, value in env.items():
        if name.startswith("DESKPILOT_"):
            if name.startswith(PROVIDER_PREFIX) or any(m in name for m in SECRET_MARKS):
                continue
        elif name not in ACTOR_ENV_KEYS and not name.startswith("LC_"):
            continue
        kept[name] = value
    return kept


def actor_worker_config(worker: WorkerConfig) -> WorkerConfig:
    """The worker config each actor is built with: no local cancel event, a background
    teardown, and the allow-listed base environment (:func:`actor_base_env`)."""
    return dataclasses.replace(
        worker, cancel=None, background_teardown=True, base_env=actor_base_env(worker.base_env)
    )


class DesktopActor:
    """One desktop slot on a Ray node: a :class:`DesktopWorker` in the actor's process.

    Made a Ray actor by :func:`run_eval_ray` (``max_concurrency=2``: :meth:`stop` must get in
    while :meth:`run` is busy)."""

    def __init__(self, config: WorkerConfig, token: str) -> None:
        # the desktop's Xvfb and buses inherit the process environment, the task's processes
        # the worker's base environment: both carry the token
        os.environ[ACTOR_TOKEN] = token
        self.cancel = threading.Event()
        self.worker = DesktopWorker(
            dataclasses.replace(
                config,
                base_env={**config.base_env, ACTOR_TOKEN: token},
                cancel=self.cancel,
                background_teardown=True,
            )
        )

    def where(self) -> tuple[int, str]:
        """The actor's pid and Ray node id."""
        node = str(ray_module().get_runtime_context().get_node_id())
        return os.getpid(), node

    def run(self, task: SuiteTask, repeat: int) -> TaskRecord:
        record = self.worker.run(task, repeat)
        record.desktop["rayActorPid"] = os.getpid()
        return record

    def stop(self) -> None:
        """End the running agent (the run is interrupted); no new task starts."""
        self.cancel.set()

    def close(self, records: Sequence[TaskRecord]) -> list[TaskRecord]:
        """Wait for the desktops still being torn down; ``records`` back with their times."""
        self.worker.close(records)
        return list(records)


def sweep_actor(token: str, task_root: str | None) -> list[int]:
    """End every process of this user whose environment carries ``token`` (a lost actor's
    desktop, apps, server and agent), then move the lost attempt's directory aside so the
    retry starts from nothing. Runs on the lost actor's node; returns the pids it ended."""
    found = procfs.end_marked(f"{ACTOR_TOKEN}={token}".encode(), SWEEP_GRACE_S)
    if task_root is not None:
        root = Path(task_root)
        if root.exists():
            n = 1
            while (aside := root.with_name(f"{root.name}.lost{'' if n == 1 else n}")).exists():
                n += 1
            root.rename(aside)
    return found


@dataclass
class _Slot:
    handle: Any
    token: str
    where: Any  # the ref of ``where()``: (pid, node id)
    records: list[TaskRecord] = field(default_factory=list)


@dataclass
class _Attempt:
    slot: _Slot
    run: PendingRun
    label: str
    retried_after: str | None


def run_eval_ray(
    options: EvalOptions, address: str | None = None, started: RayStart | None = None
) -> EvalOutcome:
    """Run the suite on Ray actors (see the module doc). ``started``: the Ray the caller
    began starting earlier (ray_start.py), else it is started here. The outcome's
    :meth:`~EvalOutcome.close` shuts Ray down (or leaves a cluster: the actors end with the
    driver), so the caller can show the results first; on an error it is shut down here."""
    ray_start = started if started is not None else RayStart(address, options.desktops)
    try:
        outcome = _drive(ray_module(), options, plan_runs(options, ray_start.engine()))
    except BaseException:
        ray_start.close()
        raise
    outcome.closer = ray_start.close
    return outcome


def _drive(ray: Any, options: EvalOptions, plan: RunPlan) -> EvalOutcome:
    progress = plan.progress
    records: list[TaskRecord] = list(plan.kept)
    actor_cls = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0, max_concurrency=2)(
        DesktopActor
    )
    sweep = ray.remote(num_cpus=0, max_retries=0)(sweep_actor)
    config = actor_worker_config(options.worker)

    def new_slot() -> _Slot:
        token = uuid.uuid4().hex
        handle = actor_cls.remote(config, token)
        return _Slot(handle, token, handle.where.remote())

    def tell(record: TaskRecord | None) -> None:
        if options.on_progress is not None:
            options.on_progress(progress, record)

    def done(attempt: _Attempt, record: TaskRecord) -> None:
        plan.count(record)
        records.append(record)
        plan.write(records)
        tell(record)

    pending: deque[tuple[PendingRun, str | None]] = deque((r, None) for r in plan.runs)
    # an actor holds its CPU while it lives: more actors than CPUs would wait forever
    cpus = int(plan.header["engine"].get("cpus") or options.desktops)
    slots = min(max(1, min(options.desktops, cpus)), len(plan.runs))
    plan.header["engine"]["slots"] = slots
    idle = deque(new_slot() for _ in range(slots))
    live = list(idle)
    inflight: dict[Any, _Attempt] = {}
    interrupted = False
    tell(None)
    try:
        while pending or inflight:
            while idle and pending:
                slot = idle.popleft()
                run, retried = pending.popleft()
                attempt = _Attempt(slot, run, plan.label(run, options.repeat), retried)
                inflight[slot.handle.run.remote(run.task, run.repeat)] = attempt
                progress.running.append(attempt.label)
                tell(None)
            ready, _ = ray.wait(list(inflight), num_returns=1, timeout=0.5)
            for ref in ready:
                attempt = inflight.pop(ref)
                progress.running.remove(attempt.label)
                try:
                    record: TaskRecord = ray.get(ref)
                except ray.exceptions.RayTaskError as exc:  # a fault of ours, in the actor
                    record = TaskRecord(
                        attempt.run.task.id,
                        attempt.run.repeat,
                        ERROR,
                        0.0,
                        error=f"internal: {str(exc).strip().splitlines()[-1][:300]}",
                    )
                    idle.append(attempt.slot)
                except ray.exceptions.RayActorError as exc:
                    reason = _lost(ray, sweep, attempt, options, exc)
                    live.remove(attempt.slot)
                    retry = attempt.retried_after is None
                    if retry:
                        pending.appendleft((attempt.run, reason))
                    if pending:  # the slot again, in a new actor
                        replacement = new_slot()
                        live.append(replacement)
                        idle.append(replacement)
                    if retry:
                        tell(None)
                        continue
                    record = TaskRecord(
                        attempt.run.task.id,
                        attempt.run.repeat,
                        ERROR,
                        0.0,
                        error=f"{reason} (again, after a retry)",
                    )
                else:
                    attempt.slot.records.append(record)
                    idle.append(attempt.slot)
                record.retried_after = attempt.retried_after
                done(attempt, record)
    except KeyboardInterrupt:
        # the running agents are ended, their desktops torn down; the runs are recorded as
        # errors (``--resume`` runs them again)
        interrupted = True
        for slot in live:
            slot.handle.stop.remote()
        for ref, attempt in list(inflight.items()):
            try:
                record = ray.get(ref)
            except ray.exceptions.RayError as exc:
                record = TaskRecord(
                    attempt.run.task.id, attempt.run.repeat, ERROR, 0.0, error=f"ray: {exc}"
                )
            attempt.slot.records.append(record)
            done(attempt, record)
    _close(ray, live, records)
    return plan.finish(records, interrupted)


def _lost(ray: Any, sweep: Any, attempt: _Attempt, options: EvalOptions, exc: Exception) -> str:
    """Sweep a lost actor's processes on its node; the sentence the retry records."""
    why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    root = options.worker.out_dir / "tasks" / task_dir_name(attempt.run.task.id, attempt.run.repeat)
    strategy: Any = None
    try:
        _, node = ray.get(attempt.slot.where, timeout=5)
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        strategy = NodeAffinitySchedulingStrategy(node, soft=True)
    except Exception:  # the actor died before it told its node: sweep where Ray likes
        strategy = None
    try:
        call = sweep.options(scheduling_strategy=strategy) if strategy is not None else sweep
        ended = ray.get(call.remote(attempt.slot.token, str(root)), timeout=30)
        swept = f"; {len(ended)} of its processes ended, the attempt's files in {root.name}.lost"
    except Exception as err:
        swept = f"; its processes could not be swept: {err}"
    return f"actor lost: {why[:200]}{swept}"


def _close(ray: Any, live: Sequence[_Slot], records: list[TaskRecord]) -> None:
    """The last desktops' teardown on each live actor, and its times on the records."""
    refs = {slot.handle.close.remote(slot.records): slot for slot in live if slot.records}
    by_key = {r.key: i for i, r in enumerate(records)}
    for ref in refs:
        try:
            closed: list[TaskRecord] = ray.get(ref, timeout=120)
        except ray.exceptions.RayError:
            continue
        for r in closed:
            if r.key in by_key:
                records[by_key[r.key]].desktop = r.desktop
