"""``external_readback`` specs: a command that reads the state back, run without a shell.

Runs only when the caller passes ``allow_external_readback`` (the ``allowExternalReadback``
setting, off by default: the spec names a program to execute). The command runs in its own
session (process group) with stdin closed and stderr discarded; stdout is kept up to
:data:`STDOUT_CAP` (the rest is drained and dropped, so a chatty program cannot block);
at the timeout, or when the check itself is cancelled, the whole group is killed. The
verdict: the exit code must equal ``expectExit``, then stdout must contain / equal the text
(one trailing newline ignored). A timeout fails the check; a program that cannot be started
makes it undecidable (``check_specs`` refuses such a program up front).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import time
from typing import Final

from deskpilot.protocol.verification import ExternalReadbackSpec

from .evidence import Outcome, clip, passed, undecidable

STDOUT_CAP: Final = 1024 * 1024
_CHUNK: Final = 65_536


def _program(argv0: str) -> str:
    """``~/bin/x`` is the user's; a bare name is looked up on PATH by exec itself."""
    return os.path.expanduser(argv0) if argv0.startswith("~") else argv0


def resolvable(program: str) -> bool:
    """The program can be started: an executable path, or a name found on PATH."""
    if "/" in program:
        path = _program(program)
        return os.path.isfile(path) and os.access(path, os.X_OK)
    return shutil.which(program) is not None


async def _read_capped(stream: asyncio.StreamReader) -> tuple[bytes, bool]:
    kept = bytearray()
    cut = False
    while chunk := await stream.read(_CHUNK):
        room = STDOUT_CAP - len(kept)
        if len(chunk) > room:
            cut = True
        kept += chunk[: max(room, 0)]
    return bytes(kept), cut


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """Kill the command's whole process group (start_new_session: its pid is the group id),
    children that still hold stdout included. Linux does not reuse a pid while it names a
    live group, so this never reaches a stranger even after the leader has exited."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def _strip_newline(text: str) -> str:
    if text.endswith("\r\n"):
        return text[:-2]
    return text.removesuffix("\n")


async def run_readback(spec: ExternalReadbackSpec) -> Outcome:
    program = _program(spec.argv[0])
    started = time.monotonic()
    base: dict[str, object] = {"program": os.path.basename(program), "expectExit": spec.expect_exit}
    try:
        proc = await asyncio.create_subprocess_exec(
            program,
            *spec.argv[1:],
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError as exc:
        return undecidable(f"the command could not start: {exc.strerror or exc}", **base)
    assert proc.stdout is not None
    try:
        async with asyncio.timeout(spec.timeout_ms / 1000):
            out, cut = await _read_capped(proc.stdout)
            code = await proc.wait()
    except TimeoutError:
        _kill_group(proc)
        await proc.wait()
        return passed(
            False,
            timedOut=True,
            timeoutMs=spec.timeout_ms,
            elapsedMs=round((time.monotonic() - started) * 1000, 1),
            **base,
        )
    except BaseException:  # the check itself was cancelled: leave nothing running
        _kill_group(proc)
        raise
    stdout = out.decode("utf-8", "replace")
    evidence: dict[str, object] = {
        **base,
        "exitCode": code,
        "elapsedMs": round((time.monotonic() - started) * 1000, 1),
        "stdoutBytes": len(out),
        "stdoutHead": clip(stdout, 120),
    }
    if cut:
        evidence["stdoutCut"] = STDOUT_CAP
    if code != spec.expect_exit:
        return passed(False, note="the exit code differs", **evidence)
    if spec.stdout_contains is not None:
        if spec.stdout_contains in stdout:
            return passed(True, **evidence)
        if cut:
            return undecidable("not in the first MiB of stdout; the rest was dropped", **evidence)
        return passed(False, note="stdout does not contain the text", **evidence)
    if spec.stdout_equals is not None:
        same = not cut and _strip_newline(stdout) == _strip_newline(spec.stdout_equals)
        return passed(same, **evidence)
    return passed(True, **evidence)
