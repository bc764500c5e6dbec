"""Serving the dashboard: uvicorn on loopback (or an address the person names with
``--bind``, for the ``remote`` setting), access log off (URLs carry the login token)."""

from __future__ import annotations

import asyncio
import ipaddress
import socket

import uvicorn

from deskpilot.store.db import Database
from deskpilot.web.app import create_app
from deskpilot.web.context import DashboardContext

LOOPBACK = "127.0.0.1"


def _hosts(bind: str, port: int) -> frozenset[str]:
    """The Host header values this server answers to."""
    names = {f"{bind}:{port}"}
    if ipaddress.ip_address(bind).is_loopback:
        names |= {f"127.0.0.1:{port}", f"localhost:{port}"}
    return frozenset(names)


class DashboardServer:
    def __init__(self, db: Database | None = None, *, port: int = 0, bind: str = LOOPBACK) -> None:
        ipaddress.ip_address(bind)  # a literal address only: no name to resolve or rebind
        self.ctx = DashboardContext(db=db or Database())
        self.app = create_app(self.ctx)
        self._bind_address = bind
        self._port = port
        self._server: uvicorn.Server | None = None
        self._sock: socket.socket | None = None
        self.base_url = ""

    def bind(self) -> str:
        """Bind the socket (the OS picks the port when it is 0); returns the base URL."""
        family = socket.AF_INET6 if ":" in self._bind_address else socket.AF_INET
        # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say so, and
        # without it every response's body waits ~40 ms for the client's delayed ACK
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self._bind_address, self._port))
        sock.listen(128)
        sock.setblocking(False)
        self._sock = sock
        port = int(sock.getsockname()[1])
        shown = f"[{self._bind_address}]" if family == socket.AF_INET6 else self._bind_address
        self.base_url = f"http://{shown}:{port}"
        self.ctx.bind(self.base_url, _hosts(self._bind_address, port) | {f"{shown}:{port}"})
        return self.base_url

    def login_url(self) -> str:
        """A fresh one-time login link."""
        return f"{self.base_url}/login?token={self.ctx.access.new_login()}"

    async def serve(self) -> None:
        if self._sock is None:
            self.bind()
        config = uvicorn.Config(
            self.app,
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="on",
            server_header=False,
            date_header=False,
            timeout_graceful_shutdown=2,
        )
        self._server = uvicorn.Server(config)
        assert self._sock is not None
        try:
            await self._server.serve(sockets=[self._sock])
        finally:
            self._sock.close()
            self._sock = None

    async def started(self, timeout_s: float = 10.0) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while self._server is None or not self._server.started:
            if loop.time() > deadline:
                raise RuntimeError("the dashboard did not start in time")
            await asyncio.sleep(0.01)

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
