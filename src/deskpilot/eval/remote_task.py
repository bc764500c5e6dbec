"""The remote side of ``deskpilot eval --host-command``: one task's desktop on this machine.

``deskpilot-host --eval-task`` (hostclient/remote_host.py) verifies this machine's deskpilot
install against its RECORD — every module of the package, since this mode runs the setup's
launch policy and the verification engine as well as the host — and then runs this module on
the ssh channel's stdin/stdout. The eval on the other machine sends one task; this process:

1. brings up a private desktop of its own here (desktop/virtual.py: Xvfb, D-Bus, AT-SPI),
   with a fresh task directory (0700) under ``$XDG_RUNTIME_DIR`` (else the temp dir);
2. runs the task's setup — its files, its apps, its page — through the same launch policy
   as ``open_app`` (task_setup.py): no shell, the task's environment only (this machine's
   person's display and buses dropped), each app's display read back from /proc;
3. answers with the desktop's display and the task's directory: the eval's agent then acts
   through ``deskpilot serve --host-command "… deskpilot-host --desktop=:N"``, a host
   attached to this desktop over a second ssh channel;
4. checks the success criteria here, where the state is, when asked: the eval's own host
   (``python -I -m deskpilot.host`` on this desktop) observes the target, the verification
   engine decides every spec, ``file`` specs read this machine's files (``${TASK_DIR}`` is
   the task directory here), and the verdicts go back;
5. tears everything down — the apps, the desktop, the task directory — when told to, when
   the channel closes (the eval ended or its ssh died) or on SIGTERM/SIGHUP.

The channel speaks the framed protocol (protocol/frames.py) with JSON frames, one request at
a time: ``eval_task`` → ``desktop_ready``; ``agent_started`` → ``ok``; ``check`` →
``checked``; ``end`` → ``ended``. A failure is an ``error`` frame with ``details.stage``
(``request``, ``capacity``, ``desktop``, ``setup``, ``check``, ``internal``) and the process
goes on serving (a failed setup leaves nothing running: the eval then ends the channel).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from deskpilot import __version__
from deskpilot import desktop as vdesk
from deskpilot.eval.capacity import DESKTOP_MB, RESERVE_MB, Machine, PeakMemory
from deskpilot.eval.checking import check, host_config
from deskpilot.eval.suite import SuiteTask
from deskpilot.eval.task_env import task_dirs, task_environment
from deskpilot.eval.task_setup import SetupRefused, SetupResult, run_setup
from deskpilot.protocol.errors import ErrorCode
from deskpilot.protocol.frames import FrameError, FrameReader, FrameWriter, StreamClosed

MODULE = "deskpilot.eval.remote_task"
#: the version of this channel's messages (``protocolVersion`` of ``eval_task``)
TASK_PROTOCOL = 1


class _Refused(Exception):
    def __init__(self, stage: str, message: str) -> None:
        super().__init__(message)
        self.stage = stage


def _task_root() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(tempfile.mkdtemp(prefix="deskpilot-eval-", dir=base))


class RemoteTask:
    """One task's desktop, setup and check on this machine (see the module doc)."""

    def __init__(self) -> None:
        self.task: SuiteTask | None = None
        self.root: Path | None = None
        self.state: vdesk.DesktopState | None = None
        self.setup: SetupResult | None = None
        self.env: dict[str, str] = {}
        self.started_at: float | None = None
        self.memory: PeakMemory | None = None

    @property
    def work(self) -> Path:
        assert self.root is not None
        return self.root / "work"

    def handle(self, msg: dict[str, Any]) -> dict[str, Any]:
        kind = msg.get("type")
        if kind == "eval_task":
            return self.start(msg)
        if self.task is None or self.state is None:
            raise _Refused("request", f"{kind!r} before a task's desktop is up")
        if kind == "agent_started":
            self.agent_started()
            return {"type": "ok"}
        if kind == "check":
            return self.check()
        raise _Refused("request", f"unknown request {kind!r}")

    def start(self, msg: dict[str, Any]) -> dict[str, Any]:
        if self.task is not None:
            raise _Refused("request", "this channel already runs a task")
        if msg.get("protocolVersion") != TASK_PROTOCOL:
            raise _Refused(
                "request",
                f"the eval speaks task protocol {msg.get('protocolVersion')!r}, this "
                f"deskpilot {__version__} speaks {TASK_PROTOCOL}: install the same version",
            )
        try:
            task = SuiteTask.model_validate(msg.get("task"))
            width, height = int(msg.get("width", 1280)), int(msg.get("height", 800))
        except (ValidationError, TypeError, ValueError) as exc:
            raise _Refused("request", f"not a valid task: {exc}") from None
        machine = Machine.here()
        if machine.mem_available_mb < DESKTOP_MB + RESERVE_MB:
            raise _Refused(
                "capacity",
                f"this machine has {machine.mem_available_mb} MiB available; a task desktop "
                f"needs about {DESKTOP_MB} MiB plus {RESERVE_MB} MiB kept free",
            )
        t0 = time.monotonic()
        self.root = task_dirs(_task_root())
        try:
            self.state = vdesk.up(width, height)
        except Exception as exc:  # a missing binary, a bus that never came up
            raise _Refused("desktop", f"the private desktop could not start: {exc}") from None
        self.task = task
        start_s = time.monotonic() - t0
        self.env = task_environment(os.environ, self.state.env, self.root)
        t_setup = time.monotonic()
        try:
            self.setup = run_setup(
                task.resolved_setup(str(self.work)), self.env, self.work, width=width, height=height
            )
        except SetupRefused as exc:
            raise _Refused("setup", str(exc)) from None
        return {
            "type": "desktop_ready",
            "display": self.state.display,
            "taskDir": str(self.work),
            "version": __version__,
            "machine": Machine.here().to_json(),
            "startS": round(start_s, 3),
            "setup": {
                "launched": [a.record() for a in self.setup.launched],
                "setupS": round(time.monotonic() - t_setup, 3),
            },
        }

    def agent_started(self) -> None:
        """The task's time starts now (on this machine's clock, which ``file`` specs' times
        are compared with) and the desktop's memory is sampled until the check."""
        assert self.state is not None
        self.started_at = time.time()
        launched = self.setup.launched if self.setup is not None else []
        roots = (*self.state.pids.values(), *(a.pid for a in launched))
        self.memory = PeakMemory(self.state.display, roots)
        self.memory.__enter__()

    def check(self) -> dict[str, Any]:
        assert self.task is not None and self.root is not None
        memory_mb = None
        if self.memory is not None:
            self.memory.__exit__(None, None, None)
            memory_mb, self.memory = self.memory.peak, None
        t0 = time.monotonic()
        try:
            checked = check(
                self.task.criteria(str(self.work)),
                self.task.target,
                self.started_at if self.started_at is not None else time.time(),
                host_config(self.env, None, self.root / "check-host.log"),
            )
        except Exception as exc:  # a fault of ours: said, and the channel goes on
            raise _Refused("check", f"internal: {type(exc).__name__}: {exc}") from None
        return {
            "type": "checked",
            "passed": checked.passed,
            "verdicts": checked.verdicts,
            "observeError": checked.observe_error,
            "firstObservationS": checked.first_observation_s,
            "memoryMb": memory_mb,
            "checkS": round(time.monotonic() - t0, 3),
        }

    def teardown(self) -> float:
        """End the apps, the desktop and the task directory; the seconds it took."""
        t0 = time.monotonic()
        if self.memory is not None:
            self.memory.__exit__(None, None, None)
            self.memory = None
        if self.setup is not None:
            self.setup.stop()
            self.setup = None
        if self.state is not None:
            vdesk.down(self.state)
            self.state = None
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None
        return round(time.monotonic() - t0, 3)


def _channel() -> tuple[IO[bytes], IO[bytes]]:
    """The ssh channel, kept apart from fds 0 and 1: those become /dev/null and stderr, so
    nothing this process starts (an app, Xvfb, a host) can read or write a frame."""
    channel_in = os.fdopen(os.dup(0), "rb", buffering=0)
    channel_out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return channel_in, channel_out


def _ended(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def serve(channel_in: IO[bytes], channel_out: IO[bytes]) -> int:
    reader, writer = FrameReader(channel_in), FrameWriter(channel_out)
    task = RemoteTask()
    try:
        while True:
            try:
                msg = reader.read().json()
            except StreamClosed:
                return 0  # the eval ended (or its ssh died): tear down
            except FrameError as exc:
                sys.stderr.write(f"deskpilot eval task: unreadable frame: {exc}\n")
                return 2
            request_id = msg.get("id") if isinstance(msg, dict) else None
            if not isinstance(msg, dict):
                reply: dict[str, Any] = _error("request", "a request is a JSON object")
            elif msg.get("type") == "end":
                reply = {"type": "ended", "teardownS": task.teardown()}
            else:
                try:
                    reply = task.handle(msg)
                except _Refused as exc:
                    reply = _error(exc.stage, str(exc))
                except Exception as exc:  # a fault of ours: said, and the channel goes on
                    reply = _error("internal", f"internal: {type(exc).__name__}: {exc}")
            try:
                writer.write_json({**reply, "id": request_id})
            except OSError:
                return 0  # the channel is gone
            if reply["type"] == "ended":
                return 0
    finally:
        task.teardown()


#: the error code each stage's failure answers with
_CODES = {
    "request": ErrorCode.INVALID_REQUEST,
    "capacity": ErrorCode.ENVIRONMENT_UNAVAILABLE,
    "desktop": ErrorCode.ENVIRONMENT_UNAVAILABLE,
    "setup": ErrorCode.ACTION_BLOCKED,
    "check": ErrorCode.INTERNAL_ERROR,
}


def _error(stage: str, message: str) -> dict[str, Any]:
    return {
        "type": "error",
        "code": _CODES.get(stage, ErrorCode.INTERNAL_ERROR).value,
        "message": message,
        "details": {"stage": stage},
    }


def main() -> int:
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, _ended)
    channel_in, channel_out = _channel()
    with contextlib.suppress(KeyboardInterrupt):
        return serve(channel_in, channel_out)
    return 130


if __name__ == "__main__":
    raise SystemExit(main())
