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
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from deskpilot.hostclient.channel import HostProtocol, OnFailure, OnMessage
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


def _grow_pipe(transport: asyncio.SubprocessTransport) -> None:
    pipe_transport = transport.get_pipe_transport(1)
    pipe = pipe_transport.get_extra_info("pipe") if pipe_transport is not None else None
    fileno = getattr(pipe, "fileno", None)
    if fileno is None:
        return
    with contextlib.suppress(OSError):
        fcntl.fcntl(fileno(), _F_SETPIPE_SZ, PIPE_BYTES)


@dataclass(slots=True)
class HostProcess:
    transport: asyncio.SubprocessTransport
    protocol: HostProtocol

    @property
    def pid(self) -> int:
        return self.transport.get_pid()

    @property
    def returncode(self) -> int | None:
        return self.transport.get_returncode()

    def write(self, data: bytes) -> None:
        stdin = self.transport.get_pipe_transport(0)
        if stdin is None or stdin.is_closing():
            raise ConnectionResetError("the host's stdin is closed")
        stdin.write(data)  # type: ignore[attr-defined]

    async def drain(self) -> None:
        await self.protocol.drain()

    async def wait(self) -> int:
        return await asyncio.shield(self.protocol.exited)


async def spawn(
    config: HostConfig, env: Mapping[str, str], on_message: OnMessage, on_closed: OnFailure
) -> HostProcess:
    argv = config.host_argv()
    log_fd = _open_log(host_log_path(config))
    loop = asyncio.get_running_loop()
    try:
        transport, protocol = await loop.subprocess_exec(
            lambda: HostProtocol(on_message, on_closed),
            *argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log_fd,
            env=dict(env),
            close_fds=True,
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
    _grow_pipe(transport)
    return HostProcess(transport, protocol)


async def stop(host: HostProcess, grace_s: float) -> int:
    """Close stdin, wait ``grace_s`` for the host to exit by itself, then SIGKILL."""
    if host.returncode is None:
        stdin = host.transport.get_pipe_transport(0)
        if stdin is not None:
            with contextlib.suppress(Exception):
                stdin.close()
        try:
            await asyncio.wait_for(host.wait(), grace_s)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                host.transport.kill()
    rc = await host.wait()
    host.transport.close()
    return rc
