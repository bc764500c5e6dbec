"""One agent process under a watchdog, and the record that tells its two kinds of failure apart.

A case can fail in the protocol (the model never answered, a wrong tool ran) or in the process
(the answer came but the process did not exit, or a watchdog had to kill it). The lifecycle
record keeps the second kind visible on its own: when the agent's last task ended (its
``turn_end`` in the event stream), when the process exited, whether the watchdog fired and
whether it fired after the agent had already ended (``timedOutAfterAgentEnd``).

The agent runs in its own process group, so the watchdog ends it with whatever it started.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from deskpilot.smoke.schema import LIFECYCLE_SCHEMA

#: exit codes ``deskpilot agent`` documents (cli/agent.py); anything else is a process failure
AGENT_EXIT_CODES = frozenset({0, 1, 2, 4, 5})
#: after the agent's last task ended, the process must be gone within this
LINGER_LIMIT_S = 10.0
_POLL_S = 0.05
_TERM_GRACE_S = 2.0
STDERR_LIMIT = 64 * 1024


@dataclass(frozen=True)
class Lifecycle:
    exit_status: int | None
    elapsed_s: float
    timeout_s: float
    timed_out: bool
    agent_end_s: float | None
    #: when the agent said it was ready (its ``session_start``), from the spawn
    agent_start_s: float | None = None
    #: the person interrupted the run (Ctrl-C, SIGTERM) while this process ran
    interrupted: bool = False

    @property
    def linger_s(self) -> float | None:
        return None if self.agent_end_s is None else max(0.0, self.elapsed_s - self.agent_end_s)

    @property
    def timed_out_after_agent_end(self) -> bool:
        return self.timed_out and self.agent_end_s is not None

    @property
    def ok(self) -> bool:
        """The process ended by itself, with a documented exit code, soon after its end."""
        if self.timed_out or self.interrupted or self.exit_status not in AGENT_EXIT_CODES:
            return False
        linger = self.linger_s
        return linger is None or linger <= LINGER_LIMIT_S

    def problem(self) -> str:
        """Why the process side is not ok (beside ``ok``, so the two cannot disagree)."""
        if self.timed_out_after_agent_end:
            return "the agent ended its task but its process was still running at the watchdog"
        if self.timed_out:
            return f"the watchdog ended the case after {self.timeout_s} s"
        if self.interrupted:
            return "the run was interrupted while the process ran"
        if self.exit_status not in AGENT_EXIT_CODES:
            return f"the process exited with status {self.exit_status}"
        return f"the process lingered {self.linger_s} s after the agent's end"

    def to_json(self) -> dict[str, Any]:
        linger = self.linger_s
        return {
            "schema": LIFECYCLE_SCHEMA,
            "exitStatus": self.exit_status,
            "elapsedSeconds": round(self.elapsed_s, 3),
            "caseTimeoutSeconds": self.timeout_s,
            "timedOutByWatchdog": self.timed_out,
            "agentStartElapsedSeconds": None
            if self.agent_start_s is None
            else round(self.agent_start_s, 3),
            "agentEndElapsedSeconds": None
            if self.agent_end_s is None
            else round(self.agent_end_s, 3),
            "postAgentEndLingerSeconds": None if linger is None else round(linger, 3),
            "timedOutAfterAgentEnd": self.timed_out_after_agent_end,
            "interrupted": self.interrupted,
            "processLifecycleOk": self.ok,
        }


def run_agent_process(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    stdin_lines: Sequence[str] | None,
    events_path: Path,
    stderr_path: Path,
    tasks: int,
    timeout_s: float,
) -> Lifecycle:
    """Run ``argv`` writing its stdout to ``events_path``; end it at ``timeout_s``.

    The agent's end is the moment the ``tasks``-th ``turn_end`` shows in its event stream."""
    t0 = time.monotonic()
    wall0 = time.time()
    with (
        _private(events_path) as out,
        _private(stderr_path) as err,
    ):
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE if stdin_lines is not None else subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
        )
        if stdin_lines is not None:
            _feed(proc, stdin_lines)
        agent_end: float | None = None
        timed_out = interrupted = False
        try:
            while True:
                status = proc.poll()
                now = time.monotonic() - t0
                if agent_end is None and _turn_ends(events_path) >= tasks:
                    agent_end = now
                if status is not None:
                    break
                if now >= timeout_s:
                    timed_out = True
                    _end_group(proc)
                    break
                time.sleep(_POLL_S)
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM: the agent (and what it started) goes too
            interrupted = True
            _end_group(proc)
        except BaseException:
            _end_group(proc)
            raise
    elapsed = time.monotonic() - t0
    start, end = _stamped(events_path, tasks)
    if end is not None:  # the event's own time, finer than the poll
        agent_end = min(elapsed, max(0.0, end - wall0))
    elif agent_end is None and _turn_ends(events_path) >= tasks:
        agent_end = elapsed
    _bound(stderr_path)
    agent_start = None if start is None else min(elapsed, max(0.0, start - wall0))
    return Lifecycle(
        proc.returncode, elapsed, timeout_s, timed_out, agent_end, agent_start, interrupted
    )


def _stamped(path: Path, tasks: int) -> tuple[float | None, float | None]:
    """The wall times of the agent's ``session_start`` and of its ``tasks``-th ``turn_end``."""
    start: float | None = None
    ends: list[float] = []
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        return None, None
    for line in lines:
        if b'"session_start"' not in line and b'"turn_end"' not in line:
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        ts = event.get("ts") if isinstance(event, dict) else None
        if not isinstance(ts, int | float):
            continue
        if event.get("event") == "session_start" and start is None:
            start = float(ts)
        elif event.get("event") == "turn_end":
            ends.append(float(ts))
    return start, (ends[tasks - 1] if len(ends) >= tasks else None)


def _private(path: Path) -> BinaryIO:
    """A new artifact file only its owner may read (0600, like every smoke artifact)."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb")


def _feed(proc: subprocess.Popen[bytes], lines: Sequence[str]) -> None:
    """All lines at once, then end of input: the interactive agent reads them in order and
    ends after the last task (``/exit`` is not needed)."""
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.write("".join(f"{line}\n" for line in lines).encode("utf-8"))
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.close()


def _turn_ends(path: Path) -> int:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return 0
    return sum(1 for line in data.splitlines() if b'"event": "turn_end"' in line)


def _end_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=_TERM_GRACE_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=_TERM_GRACE_S)


def _bound(path: Path) -> None:
    """Keep the last ``STDERR_LIMIT`` bytes of stderr (the end says why it stopped)."""
    with contextlib.suppress(FileNotFoundError):
        if path.stat().st_size > STDERR_LIMIT:
            data = path.read_bytes()[-STDERR_LIMIT:]
            path.write_bytes(b"[earlier output cut]\n" + data)


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Artifacts are 0600: they describe someone's work (never keys or typed text)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, ensure_ascii=False, indent=2, sort_keys=False)
        fh.write("\n")
