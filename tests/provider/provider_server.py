"""A real OpenAI-compatible chat-completions server on 127.0.0.1, scripted per test.

It speaks raw HTTP/1.1 over asyncio sockets in its own thread so tests can make it misbehave
the ways real endpoints do: late headers, a body that stalls after the headers, non-JSON,
oversize bodies, 429 with Retry-After, 5xx, and dropped connections.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


def completion(
    content: str | None = "",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    finish: str = "stop",
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


@dataclass
class Reply:
    status: int = 200
    body: bytes | str | dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # before anything is sent
    stall_after_headers_s: float = 0.0  # headers + part of the body, then silence
    chunked: bool = False  # no Content-Length; body sent in chunks
    drop: bool = False  # close the socket without answering

    @classmethod
    def chat(cls, content: str | None, **kw: Any) -> Reply:
        tool_calls = kw.pop("tool_calls", None)
        return cls(body=completion(content, tool_calls=tool_calls), **kw)

    def payload(self) -> bytes:
        if isinstance(self.body, dict):
            return json.dumps(self.body).encode()
        if isinstance(self.body, str):
            return self.body.encode()
        return self.body or b""


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


_REASONS = {200: "OK", 401: "Unauthorized", 429: "Too Many Requests", 500: "Server Error"}


class ScriptedServer:
    def __init__(self) -> None:
        self.replies: deque[Reply | Callable[[Recorded], Reply]] = deque()
        self.requests: list[Recorded] = []
        self.default: Reply = Reply(status=500, body={"error": {"message": "script exhausted"}})
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._server: asyncio.AbstractServer | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait(5)
        assert self._server is not None
        self.port: int = self._server.sockets[0].getsockname()[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *replies: Reply | Callable[[Recorded], Reply]) -> None:
        self.replies.extend(replies)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def start() -> None:
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
            self._ready.set()

        self._loop.run_until_complete(start())
        self._loop.run_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    k, v = line.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            recorded = Recorded(method, path, headers, body)
            self.requests.append(recorded)
            item = self.replies.popleft() if self.replies else self.default
            reply = item(recorded) if callable(item) else item
            await self._respond(reply, writer)
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def _respond(self, reply: Reply, writer: asyncio.StreamWriter) -> None:
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        if reply.drop:
            return
        payload = reply.payload()
        head = [f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Status')}"]
        headers = {"Content-Type": "application/json", "Connection": "close", **reply.headers}
        if reply.chunked:
            headers["Transfer-Encoding"] = "chunked"
        else:
            headers.setdefault("Content-Length", str(len(payload)))
        head += [f"{k}: {v}" for k, v in headers.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        await writer.drain()
        if reply.stall_after_headers_s:
            writer.write(payload[: max(1, len(payload) // 3)])
            await writer.drain()
            await asyncio.sleep(reply.stall_after_headers_s)
            return
        if reply.chunked:
            step = 64 * 1024
            for i in range(0, len(payload), step):
                part = payload[i : i + step]
                writer.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                await writer.drain()
            writer.write(b"0\r\n\r\n")
        else:
            writer.write(payload)
        await writer.drain()

    def close(self) -> None:
        async def stop() -> None:
            if self._server is not None:
                self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        fut = asyncio.run_coroutine_threadsafe(stop(), self._loop)
        try:
            fut.result(5)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
