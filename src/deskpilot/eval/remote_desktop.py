"""A task's desktop on another machine, reached over ssh (``deskpilot eval --host-command``).

The eval's side of remote_task.py. One ssh channel per task run — ``ssh … deskpilot-host
--eval-task``, spawned with deskpilot's own ssh options (the remote's host key pinned,
nothing forwarded: hostclient/remote.py) — carries the task to the remote, which brings up a
private desktop there and runs the setup there; the channel stays open while the task runs
(closing it tears the remote's desktop down) and carries the check's verdicts back. The
agent's server reaches the same desktop over a second ssh channel, as a host attached to it
(:func:`attached_command`: ``… deskpilot-host --desktop=:N``).

Requests are answered one at a time; each has a deadline, and ssh's own failure (exit 255) is
named from what ssh said (a host key not pinned or changed, a login refused, a machine not
reached — ``ssh_failure``).
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deskpilot.eval.checking import Checked
from deskpilot.eval.remote_task import TASK_PROTOCOL
from deskpilot.eval.suite import SuiteTask
from deskpilot.hostclient.remote import (
    SSH_FAILURE_EXIT,
    log_offset,
    read_log_since,
    ssh_argv,
    ssh_environment,
    ssh_failure,
)
from deskpilot.protocol.errors import DeskpilotError
from deskpilot.protocol.frames import FrameError, FrameReader, FrameWriter

#: the remote command's word that asks for a task's desktop (hostclient/remote_host.py)
EVAL_TASK_WORD = "--eval-task"
#: bringing up the desktop and running the setup (an app may be started twice, 15 s each)
READY_TIMEOUT_S = 180.0
CHECK_TIMEOUT_S = 90.0
END_TIMEOUT_S = 30.0


class RemoteTaskError(RuntimeError):
    """The remote task could not go on; ``stage`` says where (``ssh``, ``request``,
    ``capacity``, ``desktop``, ``setup``, ``check``, ``channel``)."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(message)
        self.stage = stage


@dataclass(frozen=True)
class RemoteReady:
    display: str
    #: the task's ``work`` directory on the remote machine (``${TASK_DIR}`` there)
    task_dir: str
    version: str
    start_s: float
    setup: dict[str, Any]
    machine: dict[str, Any]


def attached_command(host_command: Sequence[str], display: str) -> tuple[str, ...]:
    """The host command for a task's server: a host on the remote's private desktop
    ``display`` (a plain word the remote shell reads as it is: ``--desktop=:5``)."""
    return (*host_command, f"--desktop={display}")


class RemoteTaskDesktop:
    """One task's desktop on the remote machine while this object's ssh channel is open."""

    def __init__(
        self,
        host_command: Sequence[str],
        env: Mapping[str, str],
        log_path: Path,
        known_hosts: Path | None = None,
        cancel: threading.Event | None = None,
    ) -> None:
        self.host_command = tuple(host_command)
        #: set when the whole run is interrupted: a request stops waiting for its answer
        self.cancel = cancel
        self.log_path = log_path
        self._log_at = log_offset(log_path)
        argv = ssh_argv((*self.host_command, EVAL_TASK_WORD), known_hosts=known_hosts)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=ssh_environment(env),
                start_new_session=True,
            )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._writer = FrameWriter(self.proc.stdin)
        self._replies: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._next_id = 0
        threading.Thread(
            target=self._read, args=(self.proc.stdout,), name="eval-remote-task", daemon=True
        ).start()

    def _read(self, stream: Any) -> None:
        reader = FrameReader(stream)
        try:
            while True:
                msg = reader.read().json()
                self._replies.put(msg if isinstance(msg, dict) else {"type": "?"})
        except (FrameError, OSError, ValueError):
            self._replies.put(None)  # the channel closed (ssh ended)

    def _request(self, msg: dict[str, Any], timeout: float, stage: str) -> dict[str, Any]:
        self._next_id += 1
        try:
            self._writer.write_json({**msg, "id": self._next_id})
        except OSError:
            raise self._channel_error(stage) from None
        deadline = time.monotonic() + timeout
        while True:
            try:
                reply = self._replies.get(timeout=min(0.2, max(0.0, deadline - time.monotonic())))
                break
            except queue.Empty:
                if self.cancel is not None and self.cancel.is_set() and msg["type"] != "end":
                    raise RemoteTaskError("interrupted", "interrupted") from None
                if time.monotonic() >= deadline:
                    raise RemoteTaskError(
                        stage, f"the remote did not answer {msg['type']!r} within {timeout:g} s"
                    ) from None
        if reply is None:
            raise self._channel_error(stage)
        if reply.get("type") == "error":
            details = reply.get("details") or {}
            where = str(details.get("stage") or stage)
            if reply.get("code") in ("native_host_untrusted", "native_host_missing"):
                where = "trust"  # the remote refused to start (its own install check)
            raise RemoteTaskError(where, str(reply.get("message") or "the remote refused"))
        return reply

    def _channel_error(self, stage: str) -> RemoteTaskError:
        """The channel closed: ssh's own failure named, or the remote's exit."""
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        said = read_log_since(self.log_path, self._log_at)
        if code == SSH_FAILURE_EXIT:
            err: DeskpilotError = ssh_failure(said)
            return RemoteTaskError("ssh", err.message)
        tail = " ".join(said.split())[-300:]
        return RemoteTaskError(
            "channel", f"the remote task ended (exit {code}): {tail or 'no message'}"
        )

    def open(self, task: SuiteTask, width: int, height: int) -> RemoteReady:
        """The task's desktop up and its setup run on the remote; raises RemoteTaskError."""
        reply = self._request(
            {
                "type": "eval_task",
                "protocolVersion": TASK_PROTOCOL,
                "task": task.wire(),
                "width": width,
                "height": height,
            },
            READY_TIMEOUT_S,
            "setup",
        )
        if reply.get("type") != "desktop_ready":
            raise RemoteTaskError("request", f"unexpected answer {reply.get('type')!r}")
        return RemoteReady(
            display=str(reply["display"]),
            task_dir=str(reply["taskDir"]),
            version=str(reply.get("version") or ""),
            start_s=float(reply.get("startS") or 0.0),
            setup=dict(reply.get("setup") or {}),
            machine=dict(reply.get("machine") or {}),
        )

    def agent_started(self) -> None:
        self._request({"type": "agent_started"}, END_TIMEOUT_S, "channel")

    def check(self) -> tuple[Checked, dict[str, Any]]:
        """The verdicts decided on the remote, and its figures (memory, check time)."""
        reply = self._request({"type": "check"}, CHECK_TIMEOUT_S, "check")
        checked = Checked(
            passed=bool(reply.get("passed")),
            verdicts=list(reply.get("verdicts") or []),
            observe_error=reply.get("observeError"),
            first_observation_s=reply.get("firstObservationS"),
        )
        return checked, {"memoryMb": reply.get("memoryMb"), "checkS": reply.get("checkS")}

    def close(self) -> float | None:
        """Tear the remote's desktop down and end the channel; the remote's teardown time
        (None when it could not say: the channel was gone)."""
        took: float | None = None
        if self.proc.poll() is None:
            with contextlib.suppress(RemoteTaskError):
                took = self._request({"type": "end"}, END_TIMEOUT_S, "channel").get("teardownS")
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        return None if took is None else float(took)
