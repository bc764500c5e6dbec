"""Starting and ending the host process.

The host is started without a shell, with stdin/stdout as pipes and stderr appended to a log
file under ``logs_dir()`` (the host never writes UI text or typed text there). Ending it is
always the same sequence, whatever the reason: close its stdin so it can release held keys
and buttons and exit on its own, give it ``kill_grace_s`` (300 ms), then SIGKILL.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path

from deskpilot.hostclient.channel import (
    HostProtocol,
    OnFailure,
    OnMessage,
    ReadSide,
    WriteSide,
)
from deskpilot.hostclient.config import LOCAL_TRUST_ENV, HostConfig
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.store.paths import logs_dir

_F_SETPIPE_SZ = 1031  # Linux fcntl; a bigger pipe means fewer wake-ups per screenshot
PIPE_BYTES = 1024 * 1024
LOG_ROTATE_BYTES = 8 * 1024 * 1024


def host_log_path(config: HostConfig) -> Path:
    return config.log_path if config.log_path is not None else logs_dir() / "host.log"


def _open_log(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(FileNotFoundError):
        if path.stat().st_size > LOG_ROTATE_BYTES:
            os.replace(path, path.with_name(path.name + ".1"))
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)


def host_environment(config: HostConfig, *, local_trust: bool) -> dict[str, str]:
    env = dict(os.environ if config.env is None else config.env)
    # The override reaches the host only when the artifact check allowed it (development).
    env.pop(LOCAL_TRUST_ENV, None)
    if local_trust:
        env[LOCAL_TRUST_ENV] = "1"
    return env


def _grow_pipe(fd: int) -> None:
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, _F_SETPIPE_SZ, PIPE_BYTES)


class HostProcess:
    """A spawned host: its pipes as asyncio transports and its exit as a future (pidfd)."""

    def __init__(self, popen: subprocess.Popen[bytes], protocol: HostProtocol) -> None:
        self.popen = popen
        self.protocol = protocol
        self.stdin: asyncio.WriteTransport | None = None
        self.stdout: asyncio.ReadTransport | None = None
        self._pidfd: int | None = None

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        return self.popen.returncode

    async def connect(self) -> None:
        loop = asyncio.get_running_loop()
        assert self.popen.stdin is not None and self.popen.stdout is not None
        _grow_pipe(self.popen.stdout.fileno())
        self.stdout, _ = await loop.connect_read_pipe(
            lambda: ReadSide(self.protocol), self.popen.stdout
        )
        self.stdin, _ = await loop.connect_write_pipe(
            lambda: WriteSide(self.protocol), self.popen.stdin
        )
        self._pidfd = os.pidfd_open(self.popen.pid)
        loop.add_reader(self._pidfd, self._reap)

    def _reap(self) -> None:
        rc = self.popen.poll()
        if rc is None:
            return
        self._close_pidfd()
        self.protocol.process_exited(rc)

    def _close_pidfd(self) -> None:
        if self._pidfd is not None:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None

    def write(self, data: bytes) -> None:
        if self.stdin is None or self.stdin.is_closing():
            raise ConnectionResetError("the host's stdin is closed")
        self.stdin.write(data)

    async def drain(self) -> None:
        await self.protocol.drain()

    def close_stdin(self) -> None:
        if self.stdin is not None and not self.stdin.is_closing():
            self.stdin.close()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.popen.pid, signal.SIGKILL)

    async def wait(self) -> int:
        return await asyncio.shield(self.protocol.exited)

    def release(self) -> None:
        """Drop the transports once the process is gone."""
        self._close_pidfd()
        for transport in (self.stdin, self.stdout):
            if transport is not None:
                transport.close()


async def spawn(
    config: HostConfig, env: Mapping[str, str], on_message: OnMessage, on_closed: OnFailure
) -> HostProcess:
    argv = config.host_argv()
    log_fd = _open_log(host_log_path(config))
    try:
        # fork+exec only: as quick as asyncio's own subprocess_exec, which does the same
        popen = subprocess.Popen(  # noqa: ASYNC220
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log_fd,
            env=dict(env),
            close_fds=True,
            shell=False,
            start_new_session=True,  # a terminal's Ctrl-C reaches the client, not the host
        )
    except (FileNotFoundError, PermissionError) as exc:
        raise DeskpilotError(
            ErrorCode.NATIVE_HOST_MISSING,
            f"cannot start the host ({argv[0]}): {exc.strerror or exc}",
            retryable=False,
        ) from None
    finally:
        os.close(log_fd)
    host = HostProcess(popen, HostProtocol(on_message, on_closed))
    try:
        await host.connect()
    except BaseException:
        popen.kill()
        popen.wait()
        host.release()
        raise
    return host


async def stop(host: HostProcess, grace_s: float) -> int:
    """Close stdin, wait ``grace_s`` for the host to exit by itself, then SIGKILL."""
    if host.returncode is None:
        host.close_stdin()
        try:
            await asyncio.wait_for(host.wait(), grace_s)
        except TimeoutError:
            host.kill()
    rc = await host.wait()
    host.release()
    return rc
