"""A real HTTP server on loopback standing in for a multimodal Chat Completions endpoint.

It answers from a script (one step per request: JSON, raw bytes, a delay or a dropped
connection) and records every request it got, so a test can check what was sent."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Step:
    status: int = 200
    json_body: Any = None
    raw: bytes | None = None
    delay_s: float = 0.0
    drop: bool = False


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class Endpoint:
    url: str
    steps: list[Step]
    received: list[Received] = field(default_factory=list)


def answer(text: Any) -> Step:
    return Step(json_body={"choices": [{"message": {"role": "assistant", "content": text}}]})


@contextmanager
def endpoint(*steps: Step) -> Iterator[Endpoint]:
    state = Endpoint(url="", steps=list(steps))
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            with lock:
                state.received.append(Received(self.path, dict(self.headers.items()), body))
                step = state.steps.pop(0) if state.steps else Step(status=599)
            if step.delay_s:
                time.sleep(step.delay_s)
            if step.drop:
                self.close_connection = True
                self.connection.close()
                return
            data = step.raw if step.raw is not None else json.dumps(step.json_body).encode()
            try:
                self.send_response(step.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test): nothing to answer

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
