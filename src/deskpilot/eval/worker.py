"""One task on one fresh private desktop: the unit a scheduler hands out.

:class:`DesktopWorker` is the place where "a desktop and its host run a task": it brings up a
private desktop (its own Xvfb, session bus and accessibility bus — desktop/virtual.py), gives
the task its own directory and data dir, runs the setup through the launch policy, runs the
agent against that desktop only, checks the success criteria with its own host, measures what
the desktop used, and tears everything down, by pid, whatever happened. Nothing of a task
outlives it but its teardown (which may run in the background while the next task starts),
so the local thread pool (engine.py) runs one per slot and a future Ray actor can wrap one as
it is; the host command is a parameter (a future ``ssh … deskpilot-host``).

Directory of a task run (``OUT/tasks/ID[-rK]/``, mode 0700)::

    work/       ${TASK_DIR}: the suite's files, what the apps write, the agent's cwd
    data/       DESKPILOT_DATA_DIR: the store (ledger, timeline, verdicts) and the vault
                (evidence frames, encrypted) — the task's trajectory
    config/ cache/   the apps' XDG_CONFIG_HOME / XDG_CACHE_HOME (throwaway)
    *.txt, *.jsonl   the agent's and the server's output, the host's log
"""

from __future__ import annotations

import os
import shlex
import shutil
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from deskpilot import desktop as vdesk
from deskpilot.eval.agents import (
    DESKTOP_KEYS,
    AgentError,
    AgentJob,
    AgentSpec,
    Interrupted,
    run_agent,
)
from deskpilot.eval.capacity import PeakMemory
from deskpilot.eval.checking import check, host_config
from deskpilot.eval.results import ERROR, FAILED, PASSED, TaskRecord
from deskpilot.eval.suite import SuiteTask
from deskpilot.eval.task_setup import SetupRefused, SetupResult, run_setup
from deskpilot.hostclient.config import HostConfig
from deskpilot.hostclient.remote import HOST_COMMAND_ENV, is_remote_command, ssh_environment

#: the person's session variables a task's processes never inherit (desktop, config homes)
PERSON_KEYS = (
    *DESKTOP_KEYS,
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "DESKPILOT_DATA_DIR",
)
PROVIDER_PREFIX = "DESKPILOT_PROVIDER_"
#: the decision model's key under its other name: only the operator gets a key, as
#: ``DESKPILOT_PROVIDER_API_KEY`` (provider_env.py)
PROVIDER_KEYS = ("DESKPILOT_API_KEY",)


@dataclass(frozen=True)
class WorkerConfig:
    agent: AgentSpec
    out_dir: Path
    #: the environment tasks start from (the person's, without their desktop)
    base_env: Mapping[str, str]
    #: the decision model's variables (operator only)
    provider_env: Mapping[str, str] = field(default_factory=dict)
    #: the host program the eval's own checks spawn; None = ``python -I -m deskpilot.host``
    host_command: Sequence[str] | None = None
    width: int = 1280
    height: int = 800
    #: remove each task's work/config/cache dirs after it (the data dir is kept)
    keep_work: bool = True
    #: set when the whole run is interrupted: a running agent is ended, no new task starts
    cancel: threading.Event | None = None
    #: tear a finished task's desktop down in a thread while the next task starts (its
    #: verdict is in: the apps and buses only have to end); :meth:`DesktopWorker.close` waits
    background_teardown: bool = False


def check_host_config(
    env: Mapping[str, str], command: Sequence[str] | None, log_path: Path
) -> HostConfig:
    """The checks' host: an ssh ``--host-command`` runs it remotely, anything else locally."""
    config = host_config(env, command, log_path)
    if command is not None and is_remote_command(command):
        # ssh gets the task's environment without the private display (ssh_environment)
        return replace(config, argv=None, remote_command=tuple(command), env=ssh_environment(env))
    return config


def task_dir_name(task_id: str, repeat: int) -> str:
    return task_id if repeat == 0 else f"{task_id}-r{repeat}"


def _private_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


class DesktopWorker:
    """Runs tasks one after another, each on its own fresh desktop (see the module doc)."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self._teardowns: list[threading.Thread] = []
        self._teardown_s: dict[str, float] = {}
        self._lock = threading.Lock()

    def task_env(self, state: vdesk.DesktopState, root: Path) -> dict[str, str]:
        """The setup's environment (the apps under test start with it): never a model key,
        which only :meth:`with_provider` adds, for the agent's side."""
        cfg = self.config
        env = {
            k: v
            for k, v in cfg.base_env.items()
            if k not in PERSON_KEYS and k not in PROVIDER_KEYS and not k.startswith(PROVIDER_PREFIX)
        }
        env.update(state.env)
        env.update(
            {
                "DESKPILOT_DATA_DIR": str(root / "data"),
                "XDG_CONFIG_HOME": str(root / "config"),
                "XDG_CACHE_HOME": str(root / "cache"),
                # settings live in memory: an app must not write the person's dconf database
                "GSETTINGS_BACKEND": "memory",
            }
        )
        if cfg.host_command is not None and is_remote_command(cfg.host_command):
            # the task's ``deskpilot serve`` runs its host over the same ssh (docs/host.md)
            env[HOST_COMMAND_ENV] = shlex.join(cfg.host_command)
        return env

    def with_provider(self, env: Mapping[str, str]) -> dict[str, str]:
        """The agent's side of a task (the operator and its ``deskpilot serve``): the task's
        environment plus the decision model's variables, for the operator only."""
        if self.config.agent.kind != "operator":
            return dict(env)
        return {**env, **self.config.provider_env}

    def agent_env(self, env: Mapping[str, str]) -> dict[str, str]:
        """An MCP agent command's environment: the task's without any desktop or bus."""
        return {k: v for k, v in env.items() if k not in DESKTOP_KEYS}

    def run(self, task: SuiteTask, repeat: int = 0) -> TaskRecord:
        """The task's record; never raises for the task's own failures (they are recorded)."""
        t0 = time.monotonic()
        tasks = _private_dir(self.config.out_dir / "tasks")
        root = _private_dir(tasks / task_dir_name(task.id, repeat))
        for sub in ("work", "data", "config", "cache"):
            _private_dir(root / sub)
        record = TaskRecord(task.id, repeat, ERROR, 0.0, trajectory=str(root / "data"))
        try:
            state = vdesk.up(self.config.width, self.config.height)
        except Exception as exc:  # a missing binary, a bus that never came up
            record.error = f"the private desktop could not start: {exc}"
            record.time_s = time.monotonic() - t0
            return record
        record.desktop = {"display": state.display, "startS": round(time.monotonic() - t0, 3)}
        started: list[SetupResult] = []
        try:
            self._run_on(task, state, root, record, started)
        except Exception as exc:  # a fault of ours: recorded, and the next task still runs
            record.outcome = ERROR
            record.error = f"internal: {type(exc).__name__}: {exc}"
        finally:
            record.time_s = time.monotonic() - t0
            if self.config.background_teardown:
                th = threading.Thread(
                    target=self._teardown,
                    args=(started, state, root, None),
                    name=f"eval-teardown-{state.display}",
                    daemon=True,
                )
                th.start()
                self._teardowns.append(th)
            else:
                self._teardown(started, state, root, record)
        return record

    def _teardown(
        self,
        started: list[SetupResult],
        state: vdesk.DesktopState,
        root: Path,
        record: TaskRecord | None,
    ) -> None:
        """End the task's apps and its desktop. In the background (``record`` None) the time
        is kept aside (the record may be being written) and put on the record by ``close``."""
        t_down = time.monotonic()
        for setup in started:
            setup.stop()
        vdesk.down(state)
        took = round(time.monotonic() - t_down, 3)
        if record is not None:
            record.desktop["teardownS"] = took
        else:
            with self._lock:
                self._teardown_s[str(root)] = took
        if not self.config.keep_work:
            for sub in ("work", "config", "cache", "chromium-profile"):
                shutil.rmtree(root / sub, ignore_errors=True)

    def close(self, records: Sequence[TaskRecord] = ()) -> None:
        """Wait for the desktops still being torn down; their teardown times go on
        ``records`` (matched by the task's data dir)."""
        for th in self._teardowns:
            th.join()
        self._teardowns.clear()
        with self._lock:
            for r in records:
                took = self._teardown_s.get(str(Path(r.trajectory or "").parent))
                if took is not None:
                    r.desktop["teardownS"] = took

    def _run_on(
        self,
        task: SuiteTask,
        state: vdesk.DesktopState,
        root: Path,
        record: TaskRecord,
        started: list[SetupResult],
    ) -> None:
        cfg = self.config
        work = root / "work"
        env = self.task_env(state, root)
        t_setup = time.monotonic()
        try:
            setup = run_setup(
                task.resolved_setup(str(work)), env, work, width=cfg.width, height=cfg.height
            )
        except SetupRefused as exc:
            record.error = f"setup: {exc}"
            return
        started.append(setup)
        record.setup = {
            "launched": [a.record() for a in setup.launched],
            "setupS": round(time.monotonic() - t_setup, 3),
        }
        criteria = task.criteria(str(work))
        job = AgentJob(
            task_id=task.id,
            instruction=task.instruction,
            target=task.target,
            criteria=[c.wire() for c in criteria],
            max_steps=task.limits.steps,
            time_s=task.limits.time_s,
            env=self.with_provider(env),
            agent_env=self.agent_env(env),
            task_dir=root,
            work=work,
            cancel=cfg.cancel,
        )
        started_at = time.time()
        roots = (*state.pids.values(), *(a.pid for a in setup.launched))
        memory = PeakMemory(state.display, roots)
        try:
            with memory:
                agent = run_agent(cfg.agent, job, root / "data")
        except (AgentError, Interrupted) as exc:
            record.error = f"agent: {exc}"
            return
        finally:
            record.desktop["memoryMb"] = memory.peak
        record.agent = agent.record()
        record.steps, record.model_calls = agent.steps, agent.model_calls
        t_check = time.monotonic()
        checked = check(
            criteria,
            task.target,
            started_at,
            check_host_config(env, cfg.host_command, root / "check-host.log"),
        )
        record.verification = checked.verdicts
        record.desktop["checkS"] = round(time.monotonic() - t_check, 3)
        if checked.observe_error is not None:
            record.desktop["observeError"] = checked.observe_error
        if checked.first_observation_s is not None:
            record.desktop["checkObserveS"] = round(checked.first_observation_s, 3)
        record.outcome = PASSED if checked.passed else FAILED
        if agent.timed_out and not checked.passed:
            record.error = f"the agent ran out of its {task.limits.time_s:g} s"
