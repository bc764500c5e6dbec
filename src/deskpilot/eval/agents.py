"""The agent a task is run with: deskpilot's delegated operator, any MCP agent command, or
none (the baseline run that shows a suite's criteria do not hold before the work is done).

``operator`` is ``deskpilot run INSTRUCTION --app TARGET --criteria … --json`` in the task's
environment, with the configured decision model: the delegated operator of
runtime/delegated/ deciding through the provider, its result line giving steps and model calls.

``mcp:COMMAND`` starts ``deskpilot serve --transport http`` bound to the task's desktop (its
environment is the task's: the private display, the task's data dir) and runs ``COMMAND``
(split like a shell would, run without one) with the server's address in its environment:

* ``DESKPILOT_EVAL_MCP_URL`` — the Streamable HTTP endpoint (``http://127.0.0.1:PORT/mcp``);
* ``DESKPILOT_EVAL_MCP_TOKEN`` — its bearer token (``Authorization: Bearer …``);
* ``DESKPILOT_EVAL_TASK_ID``, ``DESKPILOT_EVAL_INSTRUCTION``, ``DESKPILOT_EVAL_TARGET``,
  ``DESKPILOT_EVAL_TASK_DIR``, ``DESKPILOT_EVAL_MAX_STEPS``, ``DESKPILOT_EVAL_TIME_S``.

The agent command gets no ``DISPLAY`` and no D-Bus address at all: it reaches the desktop
only through the server, so every action it takes is governed and recorded in the task's
ledger (whose rows are the task's step count).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import secrets
import shlex
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deskpilot.eval import procfs

#: how the agent's command finds the server (docs/eval.md)
ENV_URL = "DESKPILOT_EVAL_MCP_URL"
ENV_TOKEN = "DESKPILOT_EVAL_MCP_TOKEN"
ENV_TASK_ID = "DESKPILOT_EVAL_TASK_ID"
ENV_INSTRUCTION = "DESKPILOT_EVAL_INSTRUCTION"
ENV_TARGET = "DESKPILOT_EVAL_TARGET"
ENV_TASK_DIR = "DESKPILOT_EVAL_TASK_DIR"
#: a token of one agent run: what the agent leaves running is found by it (``run_agent``)
ENV_RUN = "DESKPILOT_EVAL_AGENT_RUN"
ENV_MAX_STEPS = "DESKPILOT_EVAL_MAX_STEPS"
ENV_TIME_S = "DESKPILOT_EVAL_TIME_S"
SERVER_START_S = 60.0
#: how the eval gives ``deskpilot serve`` its bearer token (= cli.serve.SERVE_TOKEN_ENV)
SERVE_TOKEN_ENV = "DESKPILOT_SERVE_TOKEN"
_URL = re.compile(r"(http://127\.0\.0\.1:\d+/mcp)")
_TOKEN = re.compile(r"bearer token \(shown once[^)]*\): (\S+)")


class AgentError(RuntimeError):
    """The agent could not be started (a server that never came up, a missing program)."""


@dataclass(frozen=True)
class AgentSpec:
    kind: str  # "operator" | "mcp" | "none"
    command: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> AgentSpec:
        if text in ("operator", "none"):
            return cls(text)
        if text.startswith("mcp:"):
            try:
                argv = tuple(shlex.split(text[4:]))
            except ValueError as exc:
                raise ValueError(f"--agent mcp: cannot split the command: {exc}") from None
            if not argv:
                raise ValueError('--agent mcp: needs a command, e.g. mcp:"my-agent --flag"')
            return cls("mcp", argv)
        raise ValueError(f"--agent is operator, mcp:COMMAND or none, not {text!r}")

    @property
    def label(self) -> str:
        return self.kind if self.kind != "mcp" else "mcp:" + shlex.join(self.command)


@dataclass
class AgentRun:
    exit_code: int | None
    timed_out: bool
    elapsed_s: float
    steps: int | None
    model_calls: int | None
    #: the operator's own end (completed, failed …) when it said so
    agent_state: str | None = None
    error: str | None = None
    #: seconds the MCP server took to announce itself, and to shut down
    server_start_s: float | None = None
    server_stop_s: float | None = None

    def record(self) -> dict[str, Any]:
        return {
            "exitCode": self.exit_code,
            "timedOut": self.timed_out,
            "elapsedS": round(self.elapsed_s, 3),
            "state": self.agent_state,
            "error": self.error,
            "serverStartS": None if self.server_start_s is None else round(self.server_start_s, 3),
            "serverStopS": None if self.server_stop_s is None else round(self.server_stop_s, 3),
        }


@dataclass(frozen=True)
class AgentJob:
    """What one agent run needs: the task, its environment and where its files go."""

    task_id: str
    instruction: str
    target: str | None
    criteria: list[dict[str, Any]]
    max_steps: int
    time_s: float
    #: the task's environment (private desktop, data dir, config dirs)
    env: Mapping[str, str]
    #: the environment without any desktop (for an MCP agent command)
    agent_env: Mapping[str, str]
    task_dir: Path
    #: the agent's working directory (this machine's ``work/``)
    work: Path
    #: ``${TASK_DIR}`` as the task's apps see it: ``work`` here, a path on the remote machine
    #: when the desktop is there (``--host-command``)
    shown_task_dir: str | None = None
    #: set when the whole run is interrupted: the agent is ended at once
    cancel: threading.Event | None = None


def _spawn(
    argv: list[str], env: Mapping[str, str], cwd: Path, out: Path, err: Path
) -> subprocess.Popen[bytes]:
    with out.open("wb") as o, err.open("wb") as e:
        return subprocess.Popen(
            argv,
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=o,
            stderr=e,
            start_new_session=True,
        )


def end_group(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM to the process group, SIGKILL after ``grace``."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # what the leader left behind
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


class Interrupted(RuntimeError):
    """The run was interrupted (Ctrl-C) while this agent ran; the agent has been ended."""


def _wait(
    proc: subprocess.Popen[bytes], time_s: float, cancel: threading.Event | None
) -> tuple[int | None, bool]:
    """The agent's exit status and whether it outlived ``time_s`` (then it is ended); when
    ``cancel`` is set meanwhile the agent is ended and :class:`Interrupted` raised."""
    deadline = time.monotonic() + time_s
    while True:
        try:
            return proc.wait(timeout=min(0.2, max(0.0, deadline - time.monotonic()))), False
        except subprocess.TimeoutExpired:
            pass
        if cancel is not None and cancel.is_set():
            end_group(proc, grace=5.0)
            raise Interrupted("interrupted while the agent ran")
        if time.monotonic() >= deadline:
            end_group(proc, grace=5.0)
            return proc.returncode, True


def deskpilot_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "deskpilot", *args]


def ledger_steps(data_dir: Path) -> int | None:
    """The actions the task's server recorded (its ledger rows), read-only."""
    db = data_dir / "deskpilot.sqlite3"
    if not db.exists():
        return None
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            row = conn.execute("SELECT count(*) FROM actions").fetchone()
    except sqlite3.Error:
        return None
    return int(row[0]) if row else None


def run_operator(job: AgentJob, data_dir: Path) -> AgentRun:
    if job.target is None:
        return AgentRun(None, False, 0.0, None, None, error="the operator needs a task target")
    criteria = job.task_dir / "criteria.json"
    criteria.write_text(json.dumps({"success_criteria": job.criteria}), "utf-8")
    argv = deskpilot_argv(
        "run",
        job.instruction,
        "--app",
        job.target,
        "--criteria",
        str(criteria),
        "--max-steps",
        str(job.max_steps),
        "--timeout",
        str(job.time_s),
        "--json",
    )
    t0 = time.monotonic()
    out, err = job.task_dir / "agent.stdout.jsonl", job.task_dir / "agent.stderr.txt"
    proc = _spawn(argv, job.env, job.work, out, err)
    code, timed_out = _wait(proc, job.time_s + 60.0, job.cancel)  # run stops at --timeout
    elapsed = time.monotonic() - t0
    result: dict[str, Any] = {}
    for line in out.read_text("utf-8", "replace").splitlines():
        with contextlib.suppress(ValueError):
            obj = json.loads(line)
            if isinstance(obj, dict) and obj.get("type") == "result":
                result = obj
    steps = result.get("steps")
    calls = result.get("modelCalls")
    return AgentRun(
        code,
        timed_out,
        elapsed,
        int(steps) if isinstance(steps, int) else ledger_steps(data_dir),
        int(calls) if isinstance(calls, int) else None,
        agent_state=str(result["state"]) if result.get("state") else None,
    )


class McpServer:
    """``deskpilot serve --transport http --port 0`` on the task's desktop, until closed.

    Its bearer token is chosen here and given in the server's environment
    (:data:`SERVE_TOKEN_ENV`, which the server takes out of its own before anything starts),
    so the token is never printed into the stderr file the task's trajectory keeps."""

    def __init__(self, job: AgentJob) -> None:
        self.err = job.task_dir / "server.stderr.txt"
        self.token = secrets.token_urlsafe(32)
        self.proc = _spawn(
            deskpilot_argv("serve", "--transport", "http", "--port", "0"),
            {**job.env, SERVE_TOKEN_ENV: self.token},
            job.work,
            job.task_dir / "server.stdout.txt",
            self.err,
        )
        self.url = self._announced()

    def _announced(self) -> str:
        deadline = time.monotonic() + SERVER_START_S
        while time.monotonic() < deadline:
            text = self.err.read_text("utf-8", "replace")
            if (m := _URL.search(text)) is not None:
                return m.group(1)
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.close()
        tail = self.err.read_text("utf-8", "replace")[-400:].strip()
        raise AgentError(f"deskpilot serve did not come up: {tail or 'no output'}")

    def close(self) -> None:
        """End the server; a token it printed all the same (one started without ours) is
        taken out of the stderr file it leaves in the task's trajectory."""
        end_group(self.proc)
        if self.err.exists():
            text = self.err.read_text("utf-8", "replace")
            redacted = _TOKEN.sub("bearer token (shown once): [redacted]", text)
            if redacted != text:
                self.err.write_text(redacted, "utf-8")


def run_mcp(job: AgentJob, command: tuple[str, ...], data_dir: Path) -> AgentRun:
    t_server = time.monotonic()
    server = McpServer(job)
    started_s = time.monotonic() - t_server
    try:
        env = {
            **job.agent_env,
            ENV_URL: server.url,
            ENV_TOKEN: server.token,
            ENV_TASK_ID: job.task_id,
            ENV_INSTRUCTION: job.instruction,
            ENV_TARGET: job.target or "",
            ENV_TASK_DIR: job.shown_task_dir or str(job.work),
            ENV_MAX_STEPS: str(job.max_steps),
            ENV_TIME_S: str(job.time_s),
        }
        t0 = time.monotonic()
        try:
            proc = _spawn(
                list(command),
                env,
                job.work,
                job.task_dir / "agent.stdout.txt",
                job.task_dir / "agent.stderr.txt",
            )
        except OSError as exc:
            raise AgentError(f"cannot start {command[0]}: {exc.strerror or exc}") from None
        code, timed_out = _wait(proc, job.time_s, job.cancel)
        elapsed = time.monotonic() - t0
    finally:
        t_stop = time.monotonic()
        server.close()
        stop_s = time.monotonic() - t_stop
    return AgentRun(
        code,
        timed_out,
        elapsed,
        ledger_steps(data_dir),
        None,
        server_start_s=started_s,
        server_stop_s=stop_s,
    )


def run_agent(spec: AgentSpec, job: AgentJob, data_dir: Path) -> AgentRun:
    """The agent's run; ``none`` runs nothing (the baseline: a suite's criteria must not
    hold before any work is done, so every task of ``--agent none`` should fail).

    An MCP agent's environment carries a token of its run (:data:`ENV_RUN`); once it ended,
    whatever it left running that still carries it — a child in a session of its own, which
    ending the agent's process group does not reach, still holding the server's token — is
    ended too. (Not the server's processes: apps the agent opened through it stay for the
    check. The operator is deskpilot's own ``deskpilot run``: its apps stay too.)"""
    if spec.kind == "none":
        return AgentRun(0, False, 0.0, 0, None, agent_state="none")
    if spec.kind == "operator":
        return run_operator(job, data_dir)
    mark = secrets.token_hex(16)
    job = dataclasses.replace(job, agent_env={**job.agent_env, ENV_RUN: mark})
    try:
        return run_mcp(job, spec.command, data_dir)
    finally:
        procfs.end_marked(f"{ENV_RUN}={mark}".encode(), grace_s=2.0)
