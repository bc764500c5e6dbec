"""The runner behind the agent's ``bash`` tool, and the governed call that uses it.

:func:`run_command` is what actually runs a command, once the kernel has allowed it:
``/bin/sh -c`` in the working directory, stdin from ``/dev/null``, its own process group
(``start_new_session``), a minimal environment (a fixed standard ``PATH`` — the names the
policy rated are the system's programs — and the desktop's display variables; none of the
server's secrets). On the timeout the group gets SIGTERM, then SIGKILL after a grace; when the
shell exits, whatever it left running in its group is ended too (nothing a command starts
outlives its governed action; ``setsid`` to escape is rated L3); a cancellation (the session
paused or stopped) kills the group at once. stdout and stderr are each kept up to
``KEEP_BYTES`` — the real byte counts are reported and a cut is said — and decoded as UTF-8
with replacement.

:func:`governed_bash` calls ``kernel.run_shell`` with that runner: the kernel rates, records
and confirms (kernel/governed_shell.py) and never sees the output, which comes back here as
an untrusted tool result. Refusals propagate as the kernel's ``DeskpilotError``:
``action_blocked`` (the contract forbids ``bash``/``shell`` or the command's effect class),
``approval_denied`` (the person denied the confirmation, it expired — ``details.reason``
``confirmation_denied`` / ``confirmation_expired`` — or the wait was abandoned),
``session_not_executable`` / ``session_canceled`` (paused or stopped, before or during the
run), ``kill_switch_engaged``, ``computer_disabled``, the budget codes
(``task_step_limit_exceeded`` …), ``invalid_request`` (empty command, a cwd that is no
directory, a timeout out of range) and ``action_failed`` (``/bin/sh`` could not be started).
A command that runs past its timeout is no error: it is killed and its outcome says
``timed_out`` (with whatever output it had written).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from dataclasses import dataclass

from deskpilot.kernel.port import KernelPort, ShellReport, ShellRequest
from deskpilot.protocol.errors import DeskpilotError, ErrorCode

SHELL = "/bin/sh"
#: what is kept of each stream for the model
KEEP_BYTES = 64 * 1024
#: between SIGTERM and SIGKILL on a timeout
TERM_GRACE_S = 1.0
#: how long leftovers of an exited shell get to close the pipes after SIGKILL
DRAIN_S = 1.0
EXIT_POLL_S = 0.02
SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: variables passed through from the server (the desktop's and the locale's)
PASSED_ENV = (
    "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "DISPLAY", "XAUTHORITY",
    "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "XDG_SESSION_TYPE", "XDG_CURRENT_DESKTOP",
    "DBUS_SESSION_BUS_ADDRESS", "TMPDIR",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class ShellOutput:
    """What the command printed (bounded); untrusted text for the model, never logged."""

    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False


@dataclass(frozen=True, slots=True)
class BashOutcome:
    """What the ``bash`` tool shows the model."""

    action_id: str
    exit_code: int | None
    timed_out: bool
    stdout: str
    stderr: str
    stdout_bytes: int
    stderr_bytes: int
    stdout_truncated: bool
    stderr_truncated: bool
    duration_ms: float
    #: "L1" … "L3"
    risk: str
    #: the rating's reason code (docs/policy.md, "Shell commands")
    rating: str

    @property
    def failed(self) -> bool:
        return self.timed_out or self.exit_code != 0

    def text(self) -> str:
        """The tool result: status line, then each non-empty stream, saying where it was cut."""
        if self.timed_out:
            status = f"timed out after {self.duration_ms / 1000:.1f} s (killed)"
        else:
            status = f"exit code {self.exit_code}"
        parts = [f"{status} [{self.risk} {self.rating}, {self.action_id}]"]
        for name, body, size, cut in (
            ("stdout", self.stdout, self.stdout_bytes, self.stdout_truncated),
            ("stderr", self.stderr, self.stderr_bytes, self.stderr_truncated),
        ):
            if size:
                note = f" (first {KEEP_BYTES} of {size} bytes)" if cut else ""
                parts.append(f"--- {name}{note}\n{body}")
        return "\n".join(parts)


def command_env(cwd: str) -> dict[str, str]:
    env = {k: v for k in PASSED_ENV if (v := os.environ.get(k))}
    env.update(
        PATH=SAFE_PATH,
        PWD=cwd,
        SHELL=SHELL,
        TERM="dumb",
        PAGER="cat",
        GIT_PAGER="cat",
        GIT_TERMINAL_PROMPT="0",
        NO_COLOR="1",
        LC_ALL=os.environ.get("LC_ALL", "C.UTF-8"),
    )
    return env


class _Bounded:
    """Reads a stream to its end, keeping the first ``KEEP_BYTES``."""

    def __init__(self) -> None:
        self.kept = bytearray()
        self.total = 0

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            self.total += len(chunk)
            room = KEEP_BYTES - len(self.kept)
            if room > 0:
                self.kept += chunk[:room]

    def text(self) -> str:
        return self.kept.decode("utf-8", errors="replace")


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _exited(proc: asyncio.subprocess.Process, timeout_s: float) -> bool:
    """Whether the shell itself exited within ``timeout_s``. Polled: ``Process.wait`` also
    waits for the pipes, which a leftover background child keeps open."""
    deadline = time.monotonic() + timeout_s
    while proc.returncode is None:
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(EXIT_POLL_S)
    return True


async def run_command(request: ShellRequest) -> tuple[ShellReport, ShellOutput]:
    """Run the command as described in the module docstring; cancelling it kills the group."""
    t0 = time.monotonic()
    try:
        proc = await asyncio.create_subprocess_exec(
            SHELL,
            "-c",
            request.command,
            cwd=request.cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            env=command_env(request.cwd),
        )
    except OSError as exc:
        raise DeskpilotError(
            ErrorCode.ACTION_FAILED, f"could not start {SHELL}: {exc.strerror or exc}"
        ) from exc
    pgid = proc.pid  # start_new_session: the shell leads its own group
    assert proc.stdout is not None and proc.stderr is not None
    out, err = _Bounded(), _Bounded()
    readers = asyncio.gather(out.drain(proc.stdout), err.drain(proc.stderr))
    timed_out = False
    try:
        if not await _exited(proc, request.timeout_s):
            timed_out = True
            _signal_group(pgid, signal.SIGTERM)
            if not await _exited(proc, TERM_GRACE_S):
                _signal_group(pgid, signal.SIGKILL)
                await _exited(proc, DRAIN_S)
        # what the shell left behind in its group ends with it (and closes the pipes)
        _signal_group(pgid, signal.SIGKILL)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(readers), DRAIN_S)
    except asyncio.CancelledError:
        _signal_group(pgid, signal.SIGKILL)
        with contextlib.suppress(BaseException):
            await _exited(proc, DRAIN_S)
        raise
    finally:
        if not readers.done():
            readers.cancel()
            with contextlib.suppress(BaseException):
                await readers
    report = ShellReport(
        exit_code=proc.returncode,
        timed_out=timed_out,
        duration_ms=(time.monotonic() - t0) * 1000,
        stdout_bytes=out.total,
        stderr_bytes=err.total,
    )
    output = ShellOutput(out.text(), err.text(), out.total > KEEP_BYTES, err.total > KEEP_BYTES)
    return report, output


async def governed_bash(
    kernel: KernelPort, session_id: str, command: str, *, cwd: str, timeout_s: float
) -> BashOutcome:
    """Run ``command`` through the kernel (rating, ledger, confirmation, lane) and return
    what the tool shows the model; refusals raise (module docstring)."""
    kept: list[ShellOutput] = []

    async def run(request: ShellRequest) -> ShellReport:
        report, output = await run_command(request)
        kept.append(output)
        return report

    result = await kernel.run_shell(session_id, ShellRequest(command, cwd, timeout_s), run)
    output = kept[0] if kept else ShellOutput()
    report = result.report
    return BashOutcome(
        action_id=result.action_id,
        exit_code=report.exit_code,
        timed_out=report.timed_out,
        stdout=output.stdout,
        stderr=output.stderr,
        stdout_bytes=report.stdout_bytes,
        stderr_bytes=report.stderr_bytes,
        stdout_truncated=output.stdout_truncated,
        stderr_truncated=output.stderr_truncated,
        duration_ms=report.duration_ms,
        risk=result.decision.risk.label,
        rating=str(result.decision.details.get("rating", "")),
    )
