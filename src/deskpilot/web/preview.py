"""The loopback preview server: ``http://127.0.0.1:<port>/snapshot/<id>/preview?cap=<token>``.

A thin ASGI adapter around :class:`deskpilot.vault.preview.PreviewGate` served by uvicorn,
bound to 127.0.0.1 only, on a port the OS picks unless one is given. It passes the raw path
and raw query string through untouched (no percent-decoding, no normalisation), so the gate
compares exactly what arrived. Access logging is off: URLs carry bearer tokens.

Run it on a daemon thread (:meth:`PreviewServer.start`) or as a task in a running event loop
(:meth:`PreviewServer.start_async`).
"""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import Any

import uvicorn

from deskpilot.vault.preview import PreviewGate, PreviewResponse
from deskpilot.vault.service import SnapshotService

LOOPBACK = "127.0.0.1"

Scope = dict[str, Any]


class PreviewApp:
    """The ASGI application. Lifespan events are acknowledged; websockets are refused."""

    def __init__(self, gate: PreviewGate) -> None:
        self.gate = gate

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if kind != "http":
            return
        method = str(scope.get("method", "GET")).upper()
        raw_path = bytes(scope.get("raw_path") or b"").decode("latin-1")
        query = bytes(scope.get("query_string") or b"").decode("latin-1")
        hosts = [v for k, v in scope.get("headers", []) if k == b"host"]
        host = hosts[0].decode("latin-1") if len(hosts) == 1 else ""
        response = self.gate.handle(method, host, raw_path, query)
        await _send(send, response, head=method == "HEAD")


async def _send(send: Any, response: PreviewResponse, *, head: bool) -> None:
    headers = [(k.encode(), v.encode()) for k, v in response.headers(head=head)]
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else response.body})


class PreviewServer:
    def __init__(self, service: SnapshotService, *, port: int = 0) -> None:
        self.service = service
        self.gate = PreviewGate(service)
        self.app = PreviewApp(self.gate)
        self._port = port
        self._sock: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._task: asyncio.Task[None] | None = None
        self.base_url: str | None = None

    def _bind(self) -> uvicorn.Server:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((LOOPBACK, self._port))
        sock.listen(128)
        sock.setblocking(False)
        self._sock = sock
        port = sock.getsockname()[1]
        self.gate.base_host = f"{LOOPBACK}:{port}"
        self.base_url = f"http://{LOOPBACK}:{port}"
        config = uvicorn.Config(
            self.app,
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="off",
            server_header=False,
            date_header=False,
            timeout_graceful_shutdown=2,
        )
        self._server = uvicorn.Server(config)
        return self._server

    def start(self, timeout: float = 10.0) -> str:
        """Serve on a daemon thread; returns the base URL once the server accepts requests."""
        if self.base_url is not None and self._thread is not None:
            return self.base_url
        server = self._bind()
        sock = self._sock
        assert sock is not None
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="deskpilot-preview", daemon=True
        )
        self._thread.start()
        deadline = threading.Event()
        for _ in range(int(timeout / 0.005)):
            if server.started:
                break
            if not self._thread.is_alive():
                raise RuntimeError("the preview server stopped while starting")
            deadline.wait(0.005)
        else:
            raise RuntimeError("the preview server did not start in time")
        assert self.base_url is not None
        self.service.attach_preview(self.base_url)
        return self.base_url

    async def start_async(self) -> str:
        """Serve as a task of the running loop; returns the base URL once started."""
        server = self._bind()
        sock = self._sock
        assert sock is not None
        self._task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:
            if self._task.done():
                self._task.result()
                raise RuntimeError("the preview server stopped while starting")
            await asyncio.sleep(0.005)
        assert self.base_url is not None
        self.service.attach_preview(self.base_url)
        return self.base_url

    def stop(self, timeout: float = 5.0) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        self._close()

    async def stop_async(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._task is not None:
            await self._task
            self._task = None
        self._close()

    def _close(self) -> None:
        self.service.capabilities.revoke_all()
        self.service.attach_preview(None)
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self.base_url = None
        self.gate.base_host = None


__all__ = ["PreviewApp", "PreviewServer"]
