"""One task on one fresh private desktop: the unit a scheduler hands out.

:class:`DesktopWorker` is the place where "a desktop and its host run a task": it brings up a
private desktop (its own Xvfb, session bus and accessibility bus — desktop/virtual.py), gives
the task its own directory and data dir, runs the setup through the launch policy, runs the
agent against that desktop only, checks the success criteria with its own host, measures what
the desktop used, and tears everything down, by pid, whatever happened. Nothing of a task
outlives it but its teardown (which may run in the background while the next task starts),
so the local thread pool (engine.py) runs one per slot and a Ray actor (ray_engine.py) wraps
one as it is. With an ssh ``host_command`` (``--host-command``) the desktop, its setup and
its check are on the remote machine instead (remote_desktop.py): this side keeps the task's
directory, runs the agent, and holds the channel that keeps the remote's desktop up.

Directory of a task run (``OUT/tasks/ID[-rK]/``, mode 0700)::

    work/       ${TASK_DIR}: the suite's files, what the apps write, the agent's cwd
    data/       DESKPILOT_DATA_DIR: the store (ledger, timeline, verdicts) and the vault
                (evidence frames, encrypted) — the task's trajectory
    config/ cache/   the apps' XDG_CONFIG_HOME / XDG_CACHE_HOME (throwaway)
    *.txt, *.jsonl   the agent's and the server's output, the host's log
"""

from __future__ import annotations

import shlex
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from deskpilot import desktop as vdesk
from deskpilot.eval.agents import AgentError, AgentJob, AgentRun, AgentSpec, Interrupted, run_agent
from deskpilot.eval.capacity import PeakMemory
from deskpilot.eval.checking import Checked, check, host_config
from deskpilot.eval.remote_desktop import RemoteTaskDesktop, RemoteTaskError, attached_command
from deskpilot.eval.results import ERROR, FAILED, PASSED, TaskRecord
from deskpilot.eval.suite import SuiteTask
from deskpilot.eval.task_env import DESKTOP_KEYS, private_dir, task_dirs, task_environment
from deskpilot.eval.task_setup import SetupRefused, run_setup
from deskpilot.hostclient.remote import (
    HOST_COMMAND_ENV,
    KNOWN_HOSTS_ENV,
    is_remote_command,
    known_hosts_path,
    remote_location,
)


@dataclass(frozen=True)
class WorkerConfig:
    agent: AgentSpec
    out_dir: Path
    #: the environment tasks start from (the person's, without their desktop)
    base_env: Mapping[str, str]
    #: the decision model's variables (operator only)
    provider_env: Mapping[str, str] = field(default_factory=dict)
    #: an ssh argv (``--host-command``): each task's desktop on that machine; any other
    #: argv is the host program the eval's own checks spawn (None: ``python -I -m
    #: deskpilot.host``)
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

    @property
    def remote(self) -> bool:
        return self.host_command is not None and is_remote_command(self.host_command)


def task_dir_name(task_id: str, repeat: int) -> str:
    return task_id if repeat == 0 else f"{task_id}-r{repeat}"


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
        return task_environment(self.config.base_env, state.env, root)

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
        tasks = private_dir(self.config.out_dir / "tasks")
        root = task_dirs(tasks / task_dir_name(task.id, repeat))
        record = TaskRecord(task.id, repeat, ERROR, 0.0, trajectory=str(root / "data"))
        stops: list[Callable[[], object]] = []
        try:
            if self.config.remote:
                self._run_remote(task, root, record, stops, t0)
            else:
                self._run_local(task, root, record, stops, t0)
        except Exception as exc:  # a fault of ours: recorded, and the next task still runs
            record.outcome = ERROR
            record.error = f"internal: {type(exc).__name__}: {exc}"
        finally:
            record.time_s = time.monotonic() - t0
            if stops and self.config.background_teardown:
                th = threading.Thread(
                    target=self._teardown,
                    args=(stops, root, None),
                    name=f"eval-teardown-{root.name}",
                    daemon=True,
                )
                th.start()
                self._teardowns.append(th)
            elif stops:
                self._teardown(stops, root, record)
        return record

    def _teardown(
        self,
        stops: list[Callable[[], object]],
        root: Path,
        record: TaskRecord | None,
    ) -> None:
        """End the task's apps and its desktop (newest first). In the background (``record``
        None) the time is kept aside (the record may be being written) and put on the
        record by ``close``."""
        t_down = time.monotonic()
        for stop in reversed(stops):
            stop()
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

    def _job(self, task: SuiteTask, env: Mapping[str, str], root: Path, task_dir: str) -> AgentJob:
        """The agent's run: ``task_dir`` is ``${TASK_DIR}`` where the desktop is (this
        machine's ``work/``, or the remote's)."""
        return AgentJob(
            task_id=task.id,
            instruction=task.instruction,
            target=task.target,
            criteria=[c.wire() for c in task.criteria(task_dir)],
            max_steps=task.limits.steps,
            time_s=task.limits.time_s,
            env=self.with_provider(env),
            agent_env=self.agent_env(env),
            task_dir=root,
            work=root / "work",
            shown_task_dir=task_dir,
            cancel=self.config.cancel,
        )

    def _agent(self, job: AgentJob, root: Path, record: TaskRecord) -> AgentRun | None:
        """The agent's run on the record; None when it could not run (said on the record)."""
        try:
            agent = run_agent(self.config.agent, job, root / "data")
        except (AgentError, Interrupted) as exc:
            record.error = f"agent: {exc}"
            return None
        record.agent = agent.record()
        record.steps, record.model_calls = agent.steps, agent.model_calls
        return agent

    @staticmethod
    def _decide(record: TaskRecord, checked: Checked, agent: AgentRun, task: SuiteTask) -> None:
        record.verification = checked.verdicts
        if checked.observe_error is not None:
            record.desktop["observeError"] = checked.observe_error
        if checked.first_observation_s is not None:
            record.desktop["checkObserveS"] = round(checked.first_observation_s, 3)
        record.outcome = PASSED if checked.passed else FAILED
        if agent.timed_out and not checked.passed:
            record.error = f"the agent ran out of its {task.limits.time_s:g} s"

    def _run_local(
        self,
        task: SuiteTask,
        root: Path,
        record: TaskRecord,
        stops: list[Callable[[], object]],
        t0: float,
    ) -> None:
        cfg = self.config
        try:
            state = vdesk.up(cfg.width, cfg.height)
        except Exception as exc:  # a missing binary, a bus that never came up
            record.error = f"the private desktop could not start: {exc}"
            return
        stops.append(lambda: vdesk.down(state))
        record.desktop = {"display": state.display, "startS": round(time.monotonic() - t0, 3)}
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
        stops.append(setup.stop)
        record.setup = {
            "launched": [a.record() for a in setup.launched],
            "setupS": round(time.monotonic() - t_setup, 3),
        }
        job = self._job(task, env, root, str(work))
        started_at = time.time()
        memory = PeakMemory(state.display, (*state.pids.values(), *(a.pid for a in setup.launched)))
        try:
            with memory:
                agent = self._agent(job, root, record)
        finally:
            record.desktop["memoryMb"] = memory.peak
        if agent is None:
            return
        t_check = time.monotonic()
        checked = check(
            task.criteria(str(work)),
            task.target,
            started_at,
            host_config(env, cfg.host_command, root / "check-host.log"),
        )
        record.desktop["checkS"] = round(time.monotonic() - t_check, 3)
        self._decide(record, checked, agent, task)

    def _run_remote(
        self,
        task: SuiteTask,
        root: Path,
        record: TaskRecord,
        stops: list[Callable[[], object]],
        t0: float,
    ) -> None:
        """The task's desktop, setup and check on the remote machine (remote_desktop.py); the
        agent here, its server's host attached to that desktop over ssh."""
        cfg = self.config
        assert cfg.host_command is not None
        known_hosts = known_hosts_path()  # the person's pins (the tasks' data dirs are new)
        env = task_environment(cfg.base_env, {}, root)
        remote = RemoteTaskDesktop(
            cfg.host_command,
            env,
            root / "remote-task.log",
            known_hosts=known_hosts,
            cancel=cfg.cancel,
        )
        stops.append(remote.close)
        try:
            ready = remote.open(task, cfg.width, cfg.height)
        except RemoteTaskError as exc:
            prefix = "setup" if exc.stage == "setup" else "remote"
            record.error = f"{prefix}: {exc}"
            return
        record.desktop = {
            "display": ready.display,
            "startS": round(time.monotonic() - t0, 3),
            "remote": remote_location(cfg.host_command),
            "remoteVersion": ready.version,
            "remoteTaskDir": ready.task_dir,
            "remoteStartS": ready.start_s,
            "remoteMachine": ready.machine,
        }
        record.setup = ready.setup
        env[HOST_COMMAND_ENV] = shlex.join(attached_command(cfg.host_command, ready.display))
        env[KNOWN_HOSTS_ENV] = str(known_hosts)
        job = self._job(task, env, root, ready.task_dir)
        try:
            remote.agent_started()
            agent = self._agent(job, root, record)
            if agent is None:
                return
            t_check = time.monotonic()
            checked, figures = remote.check()
        except RemoteTaskError as exc:
            record.error = f"remote: {exc}"
            return
        record.desktop["checkS"] = round(time.monotonic() - t_check, 3)
        record.desktop["memoryMb"] = figures.get("memoryMb")
        record.desktop["remoteCheckS"] = figures.get("checkS")
        self._decide(record, checked, agent, task)
