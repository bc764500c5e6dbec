"""A scripted Anthropic-Messages-compatible server for driving Claude Code without a model.

A real HTTP server on 127.0.0.1 (stdlib ``ThreadingHTTPServer`` in a daemon thread) that
implements ``POST /v1/messages`` (JSON, or server-sent events when the request says
``"stream": true``) and ``POST /v1/messages/count_tokens``; anything else is a 404 with an
Anthropic-shaped error body. Every request is recorded.

The requests of the agent loop (the ones that offer the ``mcp__deskpilot__get_app_state``
tool) are answered by :class:`CalculatorAgent`, which plays the model: it reads the
conversation it is sent, exactly as a model would, and decides the next step from it alone
(no ids are known in advance). Claude Code's side requests (a title, a summary, a quota
probe: no deskpilot tools offered) get a short plain text answer.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

GET_APP_STATE = "mcp__deskpilot__get_app_state"
CLICK = "mcp__deskpilot__click"
TOOL_SEARCH = "ToolSearch"
FINAL_PREFIX = "The calculator display reads "


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    kind: str = ""  # "agent", "side", "count_tokens", "not_found"
    reply: list[dict[str, Any]] = field(default_factory=list)  # content blocks answered


# ------------------------------------------------------------------ reading the conversation


def block_text(block: dict[str, Any]) -> str:
    """The text of a tool_result block (its content is a string or a list of blocks)."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text"
        )
    return ""


def blocks(messages: list[dict[str, Any]], role: str, kind: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for m in messages:
        if m.get("role") != role or not isinstance(m.get("content"), list):
            continue
        found.extend(b for b in m["content"] if isinstance(b, dict) and b.get("type") == kind)
    return found


def tool_names(body: dict[str, Any]) -> set[str]:
    return {t.get("name", "") for t in body.get("tools") or [] if isinstance(t, dict)}


def state_id_in(text: str) -> str | None:
    m = re.search(r"^state_id=(\S+)$", text, re.M)
    return m.group(1) if m else None


def element_in(text: str, label: str) -> int | None:
    """The id of the one tree line naming ``label`` (``- button "7 7" [13]``)."""
    found = [
        int(m.group(1))
        for line in text.splitlines()
        if f'"{label}"' in line and (m := re.search(r"\[(\d+)\]\s*$", line))
    ]
    return found[0] if len(found) == 1 else None


def display_in(text: str) -> str | None:
    m = re.search(r'textField = "([^"]*)"[^\n]*\[\d+\]$', text, re.M)
    return m.group(1) if m else None


# ------------------------------------------------------------------ the scripted "model"


class CalculatorAgent:
    """Computes 7 × 6 on gnome-calculator through deskpilot's tools, one step per request.

    Step 0: get_app_state. Then one click per label, each on the element id read from the
    latest tool_result and with the state_id that result carried. After the last click,
    a final text with the display it read. Any error result, or a result without the ids
    it needs, ends the run with a text that says so (the test then fails on it)."""

    LABELS = ("7 7", "× ×", "6 6", "= =")

    def __init__(self, app: str = "gnome-calculator") -> None:
        self.app = app

    def next_blocks(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        messages = body.get("messages") or []
        uses = blocks(messages, "assistant", "tool_use")
        results = {b.get("tool_use_id"): b for b in blocks(messages, "user", "tool_result")}
        offered = tool_names(body)
        if GET_APP_STATE not in offered or CLICK not in offered:
            # Claude Code defers MCP tools behind ToolSearch: load the two schemas first,
            # as the system prompt tells the model to.
            if TOOL_SEARCH in offered and not any(u.get("name") == TOOL_SEARCH for u in uses):
                return [self._use(TOOL_SEARCH, {"query": f"select:{GET_APP_STATE},{CLICK}"})]
            return [self._text(f"STOP: the deskpilot tools are not offered: {sorted(offered)}")]
        last = uses[-1] if uses else None
        if last is not None:
            result = results.get(last.get("id"))
            if result is None:
                return [self._text(f"STOP: no tool_result for {last.get('id')}")]
            if result.get("is_error"):
                return [self._text(f"STOP: {last.get('name')} failed: {block_text(result)[:2000]}")]
        if not any(u.get("name") == GET_APP_STATE for u in uses):
            return [self._use(GET_APP_STATE, {"app": self.app})]
        assert last is not None
        text = block_text(results[last.get("id")])
        clicks = sum(1 for u in uses if u.get("name") == CLICK)
        if clicks == len(self.LABELS):
            return [self._text(f"{FINAL_PREFIX}{display_in(text)}.")]
        label = self.LABELS[clicks]
        sid, eid = state_id_in(text), element_in(text, label)
        if sid is None or eid is None:
            return [self._text(f"STOP: no state_id/{label!r} in the result: {text[:2000]}")]
        return [self._use(CLICK, {"state_id": sid, "element_id": eid})]

    @staticmethod
    def _use(name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "tool_use",
            "id": f"toolu_{uuid.uuid4().hex[:24]}",
            "name": name,
            "input": args,
        }

    @staticmethod
    def _text(text: str) -> dict[str, Any]:
        return {"type": "text", "text": text}


# ------------------------------------------------------------------ wire format


def message(model: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 10},
    }


def sse_events(msg: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The event sequence of a streamed message (as the Messages API sends it)."""
    start = {
        **msg,
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    yield "message_start", {"type": "message_start", "message": start}
    for i, b in enumerate(msg["content"]):
        if b["type"] == "tool_use":
            head = {**b, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}
        else:
            head = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": b["text"]}
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": i, "content_block": head},
        )
        yield "content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": i}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": 10},
        },
    )
    yield "message_stop", {"type": "message_stop"}


class ScriptedAnthropic:
    """The server; use as a context manager. ``base_url`` goes into ANTHROPIC_BASE_URL."""

    def __init__(self, agent: CalculatorAgent | None = None) -> None:
        self.agent = agent or CalculatorAgent()
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> ScriptedAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)

    def agent_requests(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.kind == "agent"]

    def summary(self) -> str:
        """One line per request, for failure messages."""
        with self._lock:
            rows = list(self.requests)
        lines = []
        for r in rows:
            body = r.body if isinstance(r.body, dict) else {}
            reply = [b.get("name") or b.get("text", "")[:80] for b in r.reply]
            lines.append(
                f"{r.method} {r.path} kind={r.kind} model={body.get('model')} "
                f"stream={body.get('stream')} tools={len(body.get('tools') or [])} reply={reply}"
            )
        return "\n".join(lines)

    # -------------------------------------------------------------- request handling

    def _record(self, rec: Recorded) -> None:
        with self._lock:
            self.requests.append(rec)

    def _answer(self, rec: Recorded) -> tuple[int, dict[str, Any] | None]:
        """Classify and answer one request: (status, message or body); None = 404."""
        path = rec.path.split("?", 1)[0]
        body = rec.body if isinstance(rec.body, dict) else {}
        if rec.method == "POST" and path == "/v1/messages/count_tokens":
            rec.kind = "count_tokens"
            return 200, {"input_tokens": 100}
        if rec.method == "POST" and path == "/v1/messages":
            model = str(body.get("model", "claude-scripted"))
            if tool_names(body) & {GET_APP_STATE, TOOL_SEARCH}:
                rec.kind = "agent"
                rec.reply = self.agent.next_blocks(body)
            else:
                rec.kind = "side"
                rec.reply = [{"type": "text", "text": "Calculator task"}]
            return 200, message(model, rec.reply)
        rec.kind = "not_found"
        return 404, None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                rec = Recorded(self.command, self.path, dict(self.headers.items()), body)
                server._record(rec)
                try:
                    status, answer = server._answer(rec)
                except Exception as e:  # a bug in the script: tell the client, keep serving
                    status, answer = 500, None
                    rec.kind = f"error: {e!r}"
                if answer is None:
                    kind = "not_found_error" if status == 404 else "api_error"
                    err = {"type": "error", "error": {"type": kind, "message": self.path}}
                    self._send(status, "application/json", json.dumps(err).encode())
                elif (
                    isinstance(body, dict) and body.get("stream") and rec.kind in ("agent", "side")
                ):
                    chunks = [
                        f"event: {ev}\ndata: {json.dumps(data)}\n\n".encode()
                        for ev, data in sse_events(answer)
                    ]
                    self._send(status, "text/event-stream", b"".join(chunks))
                else:
                    self._send(status, "application/json", json.dumps(answer).encode())

            def _send(self, status: int, ctype: str, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(payload)))
                self.send_header("request-id", f"req_{uuid.uuid4().hex[:24]}")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            do_POST = _serve
            do_GET = _serve
            do_HEAD = _serve
            do_PUT = _serve
            do_DELETE = _serve

        return Handler
