"""A scripted OpenAI-compatible model server for driving real agent CLIs (pi) in tests.

A real HTTP server on 127.0.0.1 (stdlib ``ThreadingHTTPServer`` in a daemon thread) serving
``POST /v1/chat/completions`` with streaming SSE chunks, the way OpenAI streams them: the
assistant's reply is either text or one native ``tool_calls`` entry whose arguments arrive in
pieces. What to answer is decided by a *policy*: a function of the request body (the whole
conversation the agent sent) returning a :class:`ToolCall` or a :class:`Text`. Every request
is recorded, so a test can assert on what the agent really sent.

:class:`CalculatorAgent` is such a policy: it reads tool results the way a model would
(the ``state_id=…`` line and the ``"7 7" [N]`` element lines of deskpilot's text part) and
computes 7 × 6 in gnome-calculator, each action reusing the state the previous one returned.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# ----------------------------------------------------------------------------- replies


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Text:
    text: str


Reply = ToolCall | Text
Policy = Callable[[dict[str, Any]], Reply]


# ----------------------------------------------------------------------------- reading requests


def content_text(content: Any) -> str:
    """The text of a chat message's ``content`` (a string or a list of parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(
        str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"
    )


def image_parts(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every image part in the request's messages (``image_url`` parts, any role)."""
    found = []
    for m in body.get("messages", []):
        c = m.get("content")
        if isinstance(c, list):
            found += [p for p in c if isinstance(p, dict) and p.get("type") == "image_url"]
    return found


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or [] if t.get("type") == "function"]


def tool_results(body: dict[str, Any]) -> list[str]:
    """The text of every ``role: tool`` message, in order."""
    return [
        content_text(m.get("content")) for m in body.get("messages", []) if m.get("role") == "tool"
    ]


# ----------------------------------------------------------------------------- the server


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    reply: Reply | None = None


@dataclass
class ScriptedOpenAI:
    """``with ScriptedOpenAI(policy) as model:`` → ``model.base_url`` (ends in ``/v1``)."""

    policy: Policy
    model_id: str = "scripted"
    requests: list[Recorded] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def chat_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def __enter__(self) -> ScriptedOpenAI:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_CONNECT(self) -> None:
                # set as HTTP(S)_PROXY, the server also catches any outbound request
                outer._record(f"CONNECT {self.path}", dict(self.headers), {})
                self._json(403, {"error": {"message": "no network in tests"}})

            def do_GET(self) -> None:
                outer._record(self.path, dict(self.headers), {})
                if self.path.rstrip("/").endswith("/models"):
                    self._json(
                        200, {"object": "list", "data": [{"id": outer.model_id, "object": "model"}]}
                    )
                else:
                    self._json(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_unparsed": raw.decode(errors="replace")}
                rec = outer._record(self.path, dict(self.headers), body)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._json(404, {"error": {"message": f"no route {self.path}"}})
                    return
                try:
                    reply = outer.policy(body)
                except Exception as e:  # the test asserts on outer.errors
                    outer.errors.append(f"policy failed: {e!r}")
                    reply = Text(f"scripted model error: {e!r}")
                rec.reply = reply
                if not body.get("stream"):
                    self._json(200, outer._completion(reply))
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                for chunk in outer._chunks(reply, body):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

            def _json(self, status: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    # ------------------------------------------------------------------------- internals

    def _record(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Recorded:
        rec = Recorded(path, {k.lower(): v for k, v in headers.items()}, body)
        with self._lock:
            self.requests.append(rec)
        return rec

    def _base(self, n: int) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-scripted-{n}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": self.model_id,
        }

    def _chunks(self, reply: Reply, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        n = len(self.requests)
        base = self._base(n)
        if isinstance(reply, Text):
            yield {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
            words = reply.text.split(" ")
            for i, w in enumerate(words):
                piece = w if i == 0 else " " + w
                yield {**base, "choices": [{"index": 0, "delta": {"content": piece}}]}
            finish = "stop"
        else:
            args = json.dumps(reply.arguments)
            call_id = f"call_{n}"
            head = {
                "index": 0,
                "id": call_id,
                "type": "function",
                "function": {"name": reply.name, "arguments": ""},
            }
            yield {
                **base,
                "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [head]}}],
            }
            # the arguments in a few pieces, as real endpoints stream them
            step = max(1, len(args) // 3)
            for i in range(0, len(args), step):
                piece = {"index": 0, "function": {"arguments": args[i : i + step]}}
                yield {**base, "choices": [{"index": 0, "delta": {"tool_calls": [piece]}}]}
            finish = "tool_calls"
        yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
            yield {**base, "choices": [], "usage": usage}

    def _completion(self, reply: Reply) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": "assistant", "content": None}
        if isinstance(reply, Text):
            msg["content"] = reply.text
            finish = "stop"
        else:
            msg["tool_calls"] = [
                {
                    "id": f"call_{len(self.requests)}",
                    "type": "function",
                    "function": {"name": reply.name, "arguments": json.dumps(reply.arguments)},
                }
            ]
            finish = "tool_calls"
        return {
            **self._base(len(self.requests)),
            "object": "chat.completion",
            "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
        }


# ----------------------------------------------------------------------------- the calculator agent

STATE_ID = re.compile(r"^state_id=(\S+)$", re.M)
DISPLAY = re.compile(r'textField = "([^"]*)"[^\n]*\[\d+\]$', re.M)


def element_id(text: str, label: str) -> int | None:
    """The element id of the one tree line naming ``"<label>"``, as a model would read it."""
    found = [
        int(m.group(1))
        for line in text.splitlines()
        if f'"{label}"' in line and (m := re.search(r"\[(\d+)\]\s*$", line))
    ]
    return found[0] if len(found) == 1 else None


class CalculatorAgent:
    """Computes 7 × 6 in gnome-calculator through deskpilot, through whichever surface pi shows.

    * direct tools (the request declares ``<server>_get_app_state`` …, or pi's built-in MCP
      ``mcp__<server>__get_app_state`` …): call them by name.
    * only the adapter's gateway ``mcp`` is declared: first list the server's tools with
      ``mcp({server})`` and read the tool names from that listing, then call
      ``mcp({tool: "<name>", args: {…}})``.

    Then: get_app_state, a click on 7, ×, 6, = (each with the state_id and element id read
    from the latest tool result), and a final text answer quoting the display. A result
    without a state_id or without the button ends the run with a text saying so (the test
    then fails on its assertions instead of looping).
    """

    LABELS = ("7 7", "× ×", "6 6", "= =")

    def __init__(self, server: str = "deskpilot", app: str = "gnome-calculator") -> None:
        self.server = server
        self.app = app

    def __call__(self, body: dict[str, Any]) -> Reply:
        declared = tool_names(body)
        results = tool_results(body)
        direct = {
            tool: name
            for tool in ("get_app_state", "click")
            for name in declared
            # the adapter's direct tools, or pi's built-in MCP (mcp__<server>__<tool>)
            if name in (f"{self.server}_{tool}", f"mcp__{self.server}__{tool}")
        }
        gateway = len(direct) < 2
        if not gateway:
            names = direct
        elif "mcp" in declared:
            if not results:
                return ToolCall("mcp", {"server": self.server})
            listing, results = results[0], results[1:]
            names = {}
            for tool in ("get_app_state", "click"):
                m = re.search(rf"^- (\S+_{tool}) - ", listing, re.M)
                if m is None:
                    return Text(f"STOPPED: no {tool} tool in the listing: {listing}")
                names[tool] = m.group(1)
        else:
            return Text(f"STOPPED: no deskpilot tools and no mcp gateway among {declared}")

        def call(tool: str, args: dict[str, Any]) -> ToolCall:
            if gateway:
                return ToolCall("mcp", {"tool": names[tool], "args": args})
            return ToolCall(names[tool], args)

        step = len(results)
        if step == 0:
            return call("get_app_state", {"app": self.app})
        last = results[-1]
        if step <= len(self.LABELS):
            label = self.LABELS[step - 1]
            sid, eid = STATE_ID.search(last), element_id(last, label)
            if sid is None or eid is None:
                return Text(f"STOPPED before clicking {label!r}: no state_id or element in: {last}")
            return call("click", {"state_id": sid.group(1), "element_id": eid})
        display = DISPLAY.search(last)
        return Text(f"The calculator shows {display.group(1) if display else '?'}.")
