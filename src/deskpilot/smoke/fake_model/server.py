"""A scripted OpenAI-compatible chat-completions server on loopback.

A real HTTP server on 127.0.0.1 (stdlib ``ThreadingHTTPServer`` in a daemon thread) serving
``POST /v1/chat/completions`` non-streaming, the way deskpilot's provider calls it. What it
answers is a *policy*: a function of a :class:`Request` returning a reply. Every request is
recorded. ``deskpilot smoke --self-test`` runs the suite against it; the tests use it too.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from deskpilot.smoke.fake_model.reading import Request
from deskpilot.smoke.fake_model.replies import Reply, final, reply_content

Policy = Callable[[Request], "Reply | str"]


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    reply: Reply | str | None = None


@dataclass
class ScriptedModel:
    """``with ScriptedModel(policy) as model:`` → ``model.base_url`` (ends in ``/v1``).

    ``delay`` (seconds, or a function of the 0-based request index) is slept before each
    reply. :meth:`fail_next` queues HTTP errors answered instead of the policy.
    """

    policy: Policy = field(default_factory=lambda: _no_policy)
    model_id: str = "scripted-operator"
    delay: float | Callable[[int], float] = 0.0
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._recorded: list[Recorded] = []
        self._http_errors: list[tuple[int, dict[str, Any]]] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- public
    @property
    def base_url(self) -> str:
        assert self._server is not None, "the server is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def recorded(self) -> list[Recorded]:
        with self._lock:
            return list(self._recorded)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every chat-completions request body, in arrival order."""
        return [r.body for r in self.recorded if r.path.endswith("/chat/completions")]

    @property
    def replies(self) -> list[Reply | str | None]:
        return [r.reply for r in self.recorded if r.path.endswith("/chat/completions")]

    @property
    def calls(self) -> int:
        """How many chat-completions requests arrived."""
        return len(self.requests)

    def request(self, index: int = -1) -> Request:
        bodies = self.requests
        return Request(bodies[index], index if index >= 0 else len(bodies) + index)

    def set_policy(self, policy: Policy) -> None:
        with self._lock:
            self.policy = policy

    def fail_next(
        self, status: int = 500, count: int = 1, body: dict[str, Any] | None = None
    ) -> None:
        """The next ``count`` chat requests get HTTP ``status`` instead of a completion."""
        with self._lock:
            err = body or {"error": {"message": f"scripted HTTP {status}", "type": "scripted"}}
            self._http_errors += [(status, err)] * count

    def start(self) -> ScriptedModel:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                outer._record(self.path, dict(self.headers), {})
                if self.path.rstrip("/").endswith("/models"):
                    listing = {
                        "object": "list",
                        "data": [{"id": outer.model_id, "object": "model"}],
                    }
                    self._json(200, listing)
                else:
                    self._json(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_unparsed": raw.decode(errors="replace")}
                if not isinstance(body, dict):
                    body = {"_unparsed": body}
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    outer._record(self.path, dict(self.headers), body)
                    self._json(404, {"error": {"message": f"no route {self.path}"}})
                    return
                status, payload = outer._answer(self.path, dict(self.headers), body)
                self._json(status, payload)

            def _json(self, status: int, obj: Any) -> None:
                data = json.dumps(obj, ensure_ascii=False).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client went away (a pause or stop cut the request off)

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="scripted-model", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = None

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals
    def _record(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Recorded:
        rec = Recorded(path, {k.lower(): v for k, v in headers.items()}, body)
        with self._lock:
            self._recorded.append(rec)
        return rec

    def _answer(
        self, path: str, headers: dict[str, str], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        rec = Recorded(path, {k.lower(): v for k, v in headers.items()}, body)
        with self._lock:
            self._recorded.append(rec)
            index = sum(1 for r in self._recorded if r.path.endswith("/chat/completions")) - 1
            policy = self.policy
            http_error = self._http_errors.pop(0) if self._http_errors else None
        wait = self.delay(index) if callable(self.delay) else self.delay
        if wait > 0:
            time.sleep(wait)
        if http_error is not None:
            rec.reply = f"HTTP {http_error[0]}"
            return http_error
        try:
            reply = policy(Request(body, index))
        except Exception as e:  # a test asserts on .errors (the fixture does at teardown)
            with self._lock:
                self.errors.append(f"policy failed on request {index}: {e!r}")
            reply = final(f"scripted policy error: {e!r}")
        rec.reply = reply
        return 200, self._completion(reply_content(reply), index)

    def _completion(self, content: str, index: int) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-scripted-{index}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model_id,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": 100,
                "completion_tokens": max(1, len(content) // 4),
                "total_tokens": 100 + max(1, len(content) // 4),
            },
        }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default 5 resets bursts of parallel requests


def _no_policy(request: Request) -> Reply:
    return final("scripted model: no policy set")
