"""``deskpilot serve``: the MCP server (stdio by default, or Streamable HTTP on loopback)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING

import typer

from deskpilot.cli.remote_host import host_command_option, pin_host_key_option, remote_kernel
from deskpilot.runtime.budget import BOUNDED_DURATION_MS, BOUNDED_MAX_ACTIONS, BudgetMode
from deskpilot.runtime.runtime import RuntimeConfig

if TYPE_CHECKING:
    from deskpilot.kernel.kernel import Kernel
    from deskpilot.runtime.runtime import Runtime
    from deskpilot.web.preview import PreviewServer

LOOPBACK = ("127.0.0.1", "::1", "localhost")
#: HTTP: the bearer token to use instead of a new one, never printed (``deskpilot eval``
#: chooses it, so it is not written to the server's stderr file); = eval.agents.SERVE_TOKEN_ENV
SERVE_TOKEN_ENV = "DESKPILOT_SERVE_TOKEN"


class Transport(StrEnum):
    stdio = "stdio"
    http = "http"


class Budget(StrEnum):
    unbounded = "unbounded"
    bounded = "bounded"


def serve(
    transport: Transport = typer.Option(Transport.stdio, help="stdio, or http (Streamable HTTP)"),
    budget: Budget = typer.Option(
        Budget.unbounded, help="unbounded (default), or bounded: 180 s / 30 actions per task"
    ),
    host: str = typer.Option("127.0.0.1", help="HTTP: loopback address to bind"),
    port: int = typer.Option(8765, min=0, max=65535, help="HTTP: port (0 = any free port)"),
    budget_seconds: float = typer.Option(
        BOUNDED_DURATION_MS / 1000, hidden=True, help="bounded budget duration (tests)"
    ),
    budget_actions: int = typer.Option(
        BOUNDED_MAX_ACTIONS, hidden=True, help="bounded budget action attempts (tests)"
    ),
    host_command: str | None = host_command_option(),
    pin_host_key: bool = pin_host_key_option(),
) -> None:
    """Serve deskpilot's 28 tools over MCP."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    # taken out first: neither the host nor an app it starts inherits the token
    given_token = os.environ.pop(SERVE_TOKEN_ENV, None) or None
    if given_token is not None and len(given_token) < 32:
        raise typer.BadParameter(f"{SERVE_TOKEN_ENV} must be at least 32 characters")
    kernel = remote_kernel(host_command, pin_host_key)
    config = RuntimeConfig(
        budget_mode=BudgetMode(budget.value),
        bounded_duration_ms=int(budget_seconds * 1000),
        bounded_max_actions=budget_actions,
    )
    try:
        if transport is Transport.http:
            if host not in LOOPBACK:
                raise typer.BadParameter(
                    "the HTTP transport binds loopback only", param_hint="--host"
                )
            sock = _bind(host, port)  # before the runtime starts: a busy port costs nothing
            asyncio.run(_http(config, host, sock, kernel, given_token))
        else:
            asyncio.run(_stdio(config, kernel))
    except asyncio.CancelledError:
        raise typer.Exit(143) from None  # SIGTERM: shut down cleanly, then say so


class _Shutdown:
    """SIGTERM ends the server the way Ctrl-C does: the runtime closes, so live tasks and
    sessions end as ``shutdown`` and the desktop lease is let go (the default action would
    kill the process and leave them running in the store). The signal cancels the serving
    task once; after the shutdown began it is ignored, so it never cuts the cleanup short."""

    def __init__(self, stop: Callable[[], None] | None = None) -> None:
        self.started = False
        self.signalled = False
        self._stop = stop
        self._task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGTERM, self._signalled)

    def _signalled(self) -> None:
        self.signalled = True
        if self._stop is not None:
            self._stop()  # a server with its own graceful stop (uvicorn): ask it, don't cancel
        elif not self.started and self._task is not None:
            self._task.cancel()

    def begin(self) -> None:
        self.started = True


async def _previews(runtime: Runtime) -> PreviewServer | None:
    """Serve snapshot previews on loopback when the vault is open (the runtime cannot start a
    web server itself: web sits above it)."""
    from deskpilot.runtime.snapshots import VaultSnapshots
    from deskpilot.web.preview import PreviewServer

    port = runtime.ctx.snapshots
    if not isinstance(port, VaultSnapshots):
        return None
    server = PreviewServer(port.service)
    try:
        await server.start_async()
    except Exception:
        logging.getLogger(__name__).warning("snapshot preview server did not start")
        return None
    port.service.start_maintenance()
    return server


async def _stdio(config: RuntimeConfig, kernel: Kernel | None = None) -> None:
    from deskpilot.mcp.server import build_server
    from deskpilot.runtime.wiring import build_runtime

    runtime = build_runtime(config, kernel)
    server = build_server(runtime)
    shutdown = _Shutdown()
    await runtime.start()
    previews = await _previews(runtime)
    try:
        await server.run_stdio_async()
    finally:
        shutdown.begin()
        if previews is not None:
            await previews.stop_async()
        await runtime.close()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        typer.echo(f"error: cannot listen on {host}:{port}: {exc.strerror or exc}", err=True)
        raise typer.Exit(2) from None
    return sock


async def _http(
    config: RuntimeConfig,
    host: str,
    sock: socket.socket,
    kernel: Kernel | None = None,
    given_token: str | None = None,
) -> None:
    import uvicorn

    from deskpilot.mcp.http import BearerGate, BearerToken
    from deskpilot.mcp.server import build_server
    from deskpilot.runtime.wiring import build_runtime

    runtime = build_runtime(config, kernel)
    server = build_server(runtime)
    await runtime.start()
    previews = await _previews(runtime)
    token = BearerToken(given_token)
    app = BearerGate(server.streamable_http_app(host=host), token)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    print(f"deskpilot MCP (Streamable HTTP): http://{shown}:{bound}/mcp", file=sys.stderr)
    if given_token is not None:
        print(
            f"bearer token: the one in {SERVE_TOKEN_ENV} (30 min sliding)",
            file=sys.stderr,
            flush=True,
        )
    else:
        said = f"bearer token (shown once, 30 min sliding): {token.value}"
        print(said, file=sys.stderr, flush=True)
    uv = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))

    def stop() -> None:
        uv.should_exit = True

    # SIGTERM asks uvicorn to finish (as Ctrl-C does): cancelling the serving task instead
    # would cut its lifespan shutdown and print a CancelledError traceback
    shutdown = _Shutdown(stop)
    try:
        await uv.serve(sockets=[sock])
    finally:
        shutdown.begin()
        if previews is not None:
            await previews.stop_async()
        await runtime.close()
    if shutdown.signalled:
        raise asyncio.CancelledError  # serve() turns it into exit status 143
