"""A scripted OpenAI-compatible decision model for the operator tests.

A real HTTP server on 127.0.0.1 (stdlib ``ThreadingHTTPServer`` in a daemon thread) serving
``POST /v1/chat/completions`` the way deskpilot's provider calls it: non-streaming, the reply's
``choices[0].message.content`` being the one JSON object of deskpilot's local JSON action
protocol (``{"kind":"tool_call",...}`` or ``{"kind":"final",...}``), or deliberately not.

What to answer is decided by a *policy*: a function of a :class:`Request` (a read-only view of
the request body) returning the reply content object. The policies below answer like a simple
agent: they read the goal and the latest window state the operator sent (deskpilot's state
text inside a ``<dp_tool_result>`` block) and choose the next action from the element lines,
never from hard-coded element ids. Every request is recorded, so a test can assert on what the
operator really sent.

    with ScriptedModel(FormFiller({"Name": "Ada", "City": "Paris"})) as model:
        ...  # configure the decision model with model.base_url
        assert model.calls >= 1
"""

from __future__ import annotations

import ast
import json
import operator as _op
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# ----------------------------------------------------------------------------- replies

#: a reply dict carrying this key is sent as raw (non-JSON) message content
RAW = "__scripted_raw__"

Reply = dict[str, Any]


def call(name: str, /, **arguments: Any) -> Reply:
    """``{"kind":"tool_call","name":name,"arguments":{...}}``."""
    return {"kind": "tool_call", "name": name, "arguments": arguments}


def action(name: str, /, **arguments: Any) -> dict[str, Any]:
    """One entry of an ``act_batch``: ``{"name": ..., "arguments": {...}}``."""
    return {"name": name, "arguments": arguments}


def batch(actions: Iterable[Mapping[str, Any]]) -> Reply:
    """``act_batch`` over ``actions``: entries from :func:`action`, or :func:`call` replies."""
    entries = [{"name": a["name"], "arguments": dict(a.get("arguments") or {})} for a in actions]
    return call("act_batch", actions=entries)


def final(text: str) -> Reply:
    return {"kind": "final", "text": text}


def garbage(text: str = "I think the next step is to click the OK button.") -> Reply:
    """A reply whose content is ``text`` as is (prose, not a JSON object)."""
    return {RAW: text}


def reply_content(reply: Reply | str) -> str:
    """The message content the server sends for ``reply``."""
    if isinstance(reply, str):
        return reply
    if RAW in reply:
        return str(reply[RAW])
    return json.dumps(reply, ensure_ascii=False)


# ----------------------------------------------------------------------------- reading trees

_RESULT_BLOCK = re.compile(r"<dp_tool_result>\n(.*?)\n</dp_tool_result>", re.S)
_STR = r'"(?:[^"\\]|\\.)*"'
_ELEMENT = re.compile(
    rf"^(?P<indent>(?:  )*)- (?P<role>[A-Za-z][A-Za-z0-9_]*)"
    rf"(?: (?P<name>{_STR}))?(?: = (?P<value>{_STR}))?"
    r"(?P<brackets>(?: \[[^\]]*\])*) \[(?P<id>\d+)\]$"
)
_BRACKET = re.compile(r" \[([^\]]*)\]")
_HEADER_APP = re.compile(r"^App=\(", re.M)
_WINDOW_TITLE = re.compile(r'^Window=\(title="((?:[^"\\]|\\.)*)"', re.M)
_STATE_ID = re.compile(r"^state_id=(\S+)$", re.M)
_TOOL_LINE = re.compile(r"^- ([A-Za-z0-9_][A-Za-z0-9_.:-]*): .*\n  parameters: (.*)$", re.M)
#: result text that says the window is not there any more
GONE_HINTS = ("target_not_found", "window_not_found", "could not be observed", "has closed")
_GOAL = re.compile(r"^\s*Goal:\s*(.*)$", re.M)


def unquote(text: str) -> str:
    """Undo the tree renderer's escaping of names and values (``\\"``, ``\\n``, ``\\uXXXX``…)."""
    if "\\" not in text:
        return text
    out, i = [], 0
    simple = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in simple:
                out.append(simple[nxt])
                i += 2
                continue
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6]):
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
        out.append(ch)
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class Element:
    """One element line of the tree: ``- role "name" = "value" [state]… [id]``.

    ``name`` is ``""`` when the line shows none, ``value`` is ``None`` when it shows none;
    ``states`` are the bracket words (``focused``, ``readonly``…); ``actions`` the
    ``[actions: …]`` list; ``parent`` the id of the nearest less-indented line above.
    """

    id: int
    role: str
    name: str
    value: str | None
    states: tuple[str, ...]
    depth: int = 0
    parent: int | None = None
    actions: tuple[str, ...] = ()


def parse_elements(state: str) -> list[Element]:
    """Every element line of a state text, in order (header lines and markers are skipped)."""
    found: list[Element] = []
    stack: list[Element] = []
    for line in state.splitlines():
        m = _ELEMENT.match(line)
        if m is None:
            continue
        depth = len(m.group("indent")) // 2
        states: list[str] = []
        actions: tuple[str, ...] = ()
        for word in _BRACKET.findall(m.group("brackets") or ""):
            if word.startswith("actions: "):
                actions = tuple(a.strip() for a in word[len("actions: ") :].split(","))
            else:
                states.append(word)
        while stack and stack[-1].depth >= depth:
            stack.pop()
        el = Element(
            id=int(m.group("id")),
            role=m.group("role"),
            name=unquote((m.group("name") or '""')[1:-1]),
            value=unquote(m.group("value")[1:-1]) if m.group("value") is not None else None,
            states=tuple(states),
            depth=depth,
            parent=stack[-1].id if stack else None,
            actions=actions,
        )
        found.append(el)
        stack.append(el)
    return found


def has_tree(text: str) -> bool:
    return any(_ELEMENT.match(line) for line in text.splitlines())


def _norm_label(text: str) -> str:
    return " ".join(text.replace("_", "").strip().rstrip(":").split()).casefold()


@dataclass(frozen=True)
class Result:
    """One ``<dp_tool_result>`` block: tool name, error flag and content (``omitted`` when the
    provider's history budget dropped it)."""

    name: str
    is_error: bool
    text: str
    call_id: str = ""
    omitted: bool = False


def _parse_block(block: str) -> Result:
    head, sep, body = block.partition("\ncontent:\n")
    if not sep and block.startswith("content:\n"):
        head, body = "", block[len("content:\n") :]
    fields: dict[str, str] = {}
    for line in head.splitlines():
        key, _, value = line.partition(": ")
        fields[key.strip()] = value
    omitted = "is_error" not in fields and body.startswith("[omitted: ")
    return Result(
        name=fields.get("tool_name", ""),
        is_error=fields.get("is_error") == "true",
        text=body,
        call_id=fields.get("tool_call_id", ""),
        omitted=omitted,
    )


class Request:
    """A read-only view of one chat-completions request body, read the way a model would."""

    def __init__(self, body: Mapping[str, Any], index: int = 0) -> None:
        self.body = body
        self.index = index  #: 0-based position among the server's chat requests

    # -- raw messages
    @property
    def messages(self) -> list[dict[str, Any]]:
        return [m for m in self.body.get("messages") or [] if isinstance(m, dict)]

    def _texts(self, role: str) -> list[str]:
        return [str(m.get("content") or "") for m in self.messages if m.get("role") == role]

    @property
    def system(self) -> str:
        return "\n\n".join(self._texts("system"))

    @property
    def user_texts(self) -> list[str]:
        return self._texts("user")

    @property
    def goal(self) -> str | None:
        """The rest of the ``Goal:`` line of the first user message that has one."""
        for text in self.user_texts:
            head = text.split("<dp_tool_result>", 1)[0]
            m = _GOAL.search(head)
            if m:
                return m.group(1).strip()
        return None

    # -- tools offered
    def tools(self) -> list[str]:
        """The tool names the system prompt lists (``- name: description`` + parameters)."""
        return [m.group(1) for m in _TOOL_LINE.finditer(self.system)]

    def tool_schema(self, name: str) -> dict[str, Any] | None:
        for m in _TOOL_LINE.finditer(self.system):
            if m.group(1) == name:
                try:
                    return json.loads(m.group(2))
                except ValueError:  # cut by the prompt's schema budget
                    return None
        return None

    def offers(self, name: str) -> bool:
        return name in self.tools()

    @property
    def batching(self) -> bool:
        return self.offers("act_batch")

    # -- tool results and states
    def results(self) -> list[Result]:
        """Every tool-result block, oldest first."""
        out = []
        for text in self.user_texts:
            out += [_parse_block(b) for b in _RESULT_BLOCK.findall(text)]
        return out

    def last_result(self) -> Result | None:
        results = self.results()
        return results[-1] if results else None

    def states(self) -> list[str]:
        """The state text of every result that carries a tree (the last state of a result
        holding several), oldest first."""
        out = []
        for r in self.results():
            if not r.omitted and has_tree(r.text):
                out.append(_last_state_of(r.text))
        return out

    def last_state(self) -> str | None:
        states = self.states()
        return states[-1] if states else None

    def latest_has_tree(self) -> bool:
        """Whether the newest tool result carries a tree (False: the window may be gone, or
        the result is an error without a state)."""
        last = self.last_result()
        return last is not None and not last.omitted and has_tree(last.text)

    def window_gone(self) -> bool:
        """Whether the newest result says the window went away after a state was seen: no
        tree in it, and either no error or an error naming a vanished target."""
        last = self.last_result()
        if last is None or last.omitted or has_tree(last.text) or not self.states():
            return False
        return not last.is_error or any(hint in last.text for hint in GONE_HINTS)

    def elements(self, state: str | None = None) -> list[Element]:
        """The element lines of ``state`` (default: :meth:`last_state`)."""
        state = self.last_state() if state is None else state
        return parse_elements(state) if state else []

    def find(
        self,
        role: str | None = None,
        name: str | None = None,
        name_contains: str | None = None,
        *,
        state: str | None = None,
    ) -> list[Element]:
        """Elements of the state matching every given criterion (names exact / substring)."""
        return [
            e
            for e in self.elements(state)
            if (role is None or e.role == role)
            and (name is None or e.name == name)
            and (name_contains is None or name_contains in e.name)
        ]

    def window_title(self, state: str | None = None) -> str | None:
        state = self.last_state() if state is None else state
        m = _WINDOW_TITLE.search(state or "")
        return unquote(m.group(1)) if m else None

    def state_id(self, state: str | None = None) -> str | None:
        state = self.last_state() if state is None else state
        m = _STATE_ID.search(state or "")
        return m.group(1) if m else None


def _last_state_of(text: str) -> str:
    """From the last ``App=(`` header on (a batch result may hold several states)."""
    starts = [m.start() for m in _HEADER_APP.finditer(text)]
    return text[starts[-1] :] if starts else text


def children(elements: Sequence[Element], parent: int | None) -> list[Element]:
    return [e for e in elements if e.parent == parent]


def ancestors(elements: Sequence[Element], el: Element) -> list[Element]:
    by_id = {e.id: e for e in elements}
    out, cur = [], el.parent
    while cur is not None and cur in by_id:
        out.append(by_id[cur])
        cur = by_id[cur].parent
    return out


# ----------------------------------------------------------------------------- the server

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


# ----------------------------------------------------------------------------- policies

MAX_BATCH = 8


def _decide(request: Request, actions: Sequence[dict[str, Any]]) -> Reply:
    """One reply for a list of pending actions: a batch (2–8) when offered, else the first."""
    if len(actions) >= 2 and request.batching:
        return batch(actions[:MAX_BATCH])
    first = actions[0]
    return call(first["name"], **first["arguments"])


def _ready() -> Reply:
    return call("ready_for_verification")


class FormFiller:
    """Fills a form dialog (zenity --forms): each value typed into the text field labelled with
    its key, then a click on ``submit_label``, then ``ready_for_verification``.

    A field is the ``textField`` (or ``passwordField``) whose name is the label (GTK names an
    entry after its mnemonic label: zenity shows ``textField "City" = "" [3]`` next to
    ``label "City" [4]``); failing that, an unnamed text field next to a ``label`` of that
    name under the same parent. Fields whose value already reads as wanted are skipped; a
    field holding other text gets ``set_value``. With ``act_batch`` offered, the whole rest of
    the form and the click go in one batch. It answers ``ready_for_verification`` when the
    newest result has no tree after a state was seen (:meth:`Request.window_gone`: the dialog
    closed; a result without a tree that is an error must name a vanished target), or when a
    state showed the form filled and the newest tree has no such form any more. The model
    never sees its own earlier calls (the provider does not replay them), only results."""

    FIELD_ROLES = ("textField", "passwordField")

    def __init__(self, values: Mapping[str, str], submit_label: str = "OK") -> None:
        self.values = dict(values)
        self.submit_label = submit_label

    def field(self, elements: Sequence[Element], label: str) -> Element | None:
        want = _norm_label(label)
        named = [e for e in elements if e.role in self.FIELD_ROLES and _norm_label(e.name) == want]
        if named:
            return named[0]
        for lab in (e for e in elements if e.role == "label" and _norm_label(e.name) == want):
            siblings = children(elements, lab.parent)
            pos = siblings.index(lab)
            near = sorted(
                (abs(i - pos), i)
                for i, s in enumerate(siblings)
                if s.role in self.FIELD_ROLES and not s.name
            )
            if near:
                return siblings[near[0][1]]
        return None

    def submit(self, elements: Sequence[Element]) -> Element | None:
        want = _norm_label(self.submit_label)
        found = [e for e in elements if e.role == "button" and _norm_label(e.name) == want]
        return found[0] if found else None

    def pending(self, elements: Sequence[Element]) -> list[dict[str, Any]] | None:
        """The actions still needed on this tree (None: the form is not in it)."""
        actions = []
        for label, value in self.values.items():
            f = self.field(elements, label)
            if f is None:
                return None
            if f.value == value:
                continue
            if f.value:
                actions.append(action("set_value", element_id=f.id, value=value))
            else:
                actions.append(action("type_text", element_id=f.id, text=value))
        return actions

    def __call__(self, request: Request) -> Reply:
        states = request.states()
        if not states:
            return call("give_up", reason="no window state to read in the request")
        elements = parse_elements(states[-1])
        todo = self.pending(elements)
        if request.window_gone():
            return _ready()
        filled_before = any(self.pending(parse_elements(s)) == [] for s in states)
        if filled_before and todo is None:
            return _ready()
        if todo is None:
            missing = [k for k in self.values if self.field(elements, k) is None]
            return call("give_up", reason=f"no text field labelled {missing[0]!r}")
        button = self.submit(elements)
        if button is None:
            return call("give_up", reason=f"no {self.submit_label!r} button")
        return _decide(request, [*todo, action("click", element_id=button.id)])


_CALC_SYMBOLS = {
    "*": "×",
    "x": "×",
    "×": "×",
    "/": "÷",
    "÷": "÷",
    "-": "−",
    "−": "−",
    "+": "+",
    ".": ".",
    "(": "(",
    ")": ")",
    "%": "%",
    "=": "=",
}
_CALC_ALIASES = {
    "×": ("multiply", "times"),
    "÷": ("divide",),
    "−": ("subtract", "minus"),
    "+": ("add", "plus"),
    "=": ("equals", "calculate result", "calculate"),
    ".": ("decimal point", "point"),
}
_ARITH: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: _op.add,
    ast.Sub: _op.sub,
    ast.Mult: _op.mul,
    ast.Div: _op.truediv,
}


def _evaluate(expression: str) -> str:
    """The value gnome-calculator shows for a plain arithmetic expression."""
    ascii_expr = expression.replace("×", "*").replace("÷", "/").replace("−", "-").replace("x", "*")

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
            return _ARITH[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        raise ValueError(f"unsupported expression {expression!r}")

    value = ev(ast.parse(ascii_expr, mode="eval"))
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.9f}".rstrip("0").rstrip(".")


def _display_norm(text: str) -> str:
    return "".join(ch for ch in text if ch not in " \u2009\u202f\u00a0,").replace("-", "−")


class Calculator:
    """Computes ``expression`` on gnome-calculator by clicking its buttons, then
    ``ready_for_verification`` once the display shows the result.

    Buttons are found by name: gnome-calculator names them ``"7 7"``, ``"× ×"``, ``"= ="``
    (the glyph twice), so a button matches when its name is the glyph, starts with the glyph
    and a space, or is an alias (``Multiply``, ``Equals``…). The display is the editable
    (not ``readonly``) unnamed ``textField``; what it shows tells how much of the expression
    was entered (``"7×6"``), so a repeated request continues where the last batch stopped.
    Unexpected display text → ``Clear Display``.
    """

    def __init__(self, expression: str = "7*6") -> None:
        self.expression = expression
        self.symbols = [_CALC_SYMBOLS.get(ch, ch) for ch in expression if not ch.isspace()]
        self.result = _evaluate(expression)

    @staticmethod
    def button(elements: Sequence[Element], symbol: str) -> Element | None:
        buttons = [e for e in elements if e.role == "button"]
        for test in (
            lambda n: n == f"{symbol} {symbol}",
            lambda n: n == symbol,
            lambda n: n.startswith(symbol + " "),
            lambda n: n.casefold() in _CALC_ALIASES.get(symbol, ()),
        ):
            found = [b for b in buttons if test(b.name)]
            if found:
                return found[0]
        return None

    def in_history(self, elements: Sequence[Element]) -> bool:
        """Whether the history list shows this expression (gnome-calculator adds
        ``label "7×6"``, ``label "="``, ``label "42"`` under a ``listItem`` after ``=``)."""
        typed = _display_norm("".join(self.symbols))
        return any(
            e.role == "label"
            and _display_norm(e.name) == typed
            and any(a.role == "listItem" for a in ancestors(elements, e))
            for e in elements
        )

    @staticmethod
    def display(elements: Sequence[Element]) -> Element | None:
        fields = [e for e in elements if e.role == "textField" and "readonly" not in e.states]
        focused = [e for e in fields if "focused" in e.states]
        return (focused or fields or [None])[0]

    def __call__(self, request: Request) -> Reply:
        elements = request.elements()
        if not elements:
            return call("give_up", reason="no calculator state to read in the request")
        shown_el = self.display(elements)
        if shown_el is None:
            return call("give_up", reason="no calculator display in the tree")
        shown = _display_norm(shown_el.value or "")
        done = 0 if shown in ("", "0") else None
        for k in range(len(self.symbols), 0, -1):
            if shown == _display_norm("".join(self.symbols[:k])):
                done = k
                break
        if shown == _display_norm(self.result) and (done is None or self.in_history(elements)):
            return _ready()
        if done is None:
            clear = [e for e in elements if e.role == "button" and e.name.startswith("Clear")]
            if clear:
                return call("click", element_id=clear[0].id)
            return call("press_key", keys=["Escape"])
        actions = []
        for symbol in [*self.symbols[done:], "="]:
            b = self.button(elements, symbol)
            if b is None:
                return call("give_up", reason=f"no calculator button for {symbol!r}")
            actions.append(action("click", element_id=b.id))
        return _decide(request, actions)


class Typist:
    """Types ``text`` into a text editor's document (mousepad opened on a file), saves with
    ctrl+s, then ``ready_for_verification``.

    The document is the editable ``textField`` inside a ``tab`` (mousepad:
    ``tabList`` › ``tab [selected]`` › ``textField = "" [12]``), else the last editable text
    field. Typed = the document's value contains ``text`` (values longer than 200 characters
    are cut with "…" in the tree: the shown prefix must match). Unsaved = the window title
    starts with ``*`` (mousepad's modified mark). With ``act_batch``: type + ctrl+s at once.
    """

    def __init__(self, text: str, save: bool = True) -> None:
        self.text = text
        self.save = save

    @staticmethod
    def document(elements: Sequence[Element]) -> Element | None:
        fields = [e for e in elements if e.role == "textField" and "readonly" not in e.states]
        in_tab = [e for e in fields if any(a.role == "tab" for a in ancestors(elements, e))]
        return (in_tab or fields[-1:] or [None])[0]

    def typed(self, value: str | None) -> bool:
        if not value:
            return False
        if self.text in value:
            return True
        if value.endswith("…"):
            shown = value[:-1]
            return self.text.startswith(shown) or self.text in shown
        return False

    def __call__(self, request: Request) -> Reply:
        state = request.last_state()
        if state is None:
            return call("give_up", reason="no editor state to read in the request")
        elements = parse_elements(state)
        doc = self.document(elements)
        if doc is None:
            return call("give_up", reason="no text area in the tree")
        title = request.window_title(state) or (elements[0].name if elements else "")
        actions = []
        if not self.typed(doc.value):
            actions.append(action("type_text", element_id=doc.id, text=self.text))
        if self.save and (actions or title.startswith("*")):
            actions.append(action("press_key", keys=["ctrl+s"]))
        if not actions:
            return _ready()
        return _decide(request, actions)


class Noop:
    """Keeps clicking an element that changes nothing: a ``label`` not inside a button (or any
    static text), else the point (1, 1) of the image."""

    INERT = ("label", "staticText", "heading", "paragraph", "image")

    def __call__(self, request: Request) -> Reply:
        elements = request.elements()
        for role in self.INERT:
            for e in elements:
                if e.role == role and not any(
                    a.role in ("button", "toggleButton", "menuItem", "link")
                    for a in ancestors(elements, e)
                ):
                    return call("click", element_id=e.id)
        return call("click", x=1, y=1)


class GiveUp:
    def __init__(self, reason: str = "the goal cannot be reached") -> None:
        self.reason = reason

    def __call__(self, request: Request) -> Reply:
        return call("give_up", reason=self.reason)


class Handoff:
    def __init__(self, reason: str = "a person must decide this") -> None:
        self.reason = reason

    def __call__(self, request: Request) -> Reply:
        return call("need_handoff", reason=self.reason)


class Garbage:
    """Always the same unusable reply. The default is a cut JSON action (``invalid_json``,
    repairable: the provider repairs until its budget runs out, then the turn is an error).
    ``Garbage(Garbage.PROSE)``: plain prose — note the provider accepts plain prose as a
    *final answer*, not as an error. ``Garbage(Garbage.PSEUDO_CALL)``: ``click(element_id=1)``
    (``tool_call_like_final``, repairable)."""

    BROKEN_JSON = '{"kind": "tool_call", "name": "click", "arguments": {"element_id": '
    PROSE = "Sure! I will click the OK button now, then check that the form was sent."
    PSEUDO_CALL = "click(element_id=1)"

    def __init__(self, text: str = BROKEN_JSON) -> None:
        self.text = text

    def __call__(self, request: Request) -> Reply:
        return garbage(self.text)


class Scripted:
    """Replays ``replies`` in order, one per request (an entry may be a policy, called with
    the request), then answers ``then`` (default: a final text) forever."""

    def __init__(
        self, replies: Sequence[Reply | str | Policy], then: Reply | Policy | None = None
    ) -> None:
        self.replies = list(replies)
        self.then = then if then is not None else final("scripted replies exhausted")
        self._lock = threading.Lock()
        self.served = 0

    def __call__(self, request: Request) -> Reply | str:
        with self._lock:
            i = self.served
            self.served += 1
        item = self.replies[i] if i < len(self.replies) else self.then
        return item(request) if callable(item) else item
