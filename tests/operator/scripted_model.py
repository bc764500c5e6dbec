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
operator really sent. The server, the replies and the request reader live in
``deskpilot.smoke.fake_model`` (``deskpilot smoke --self-test`` uses them too); this module adds
the operator tests' policies.

    with ScriptedModel(FormFiller({"Name": "Ada", "City": "Paris"})) as model:
        ...  # configure the decision model with model.base_url
        assert model.calls >= 1
"""

from __future__ import annotations

import ast
import operator as _op
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from deskpilot.smoke.fake_model.desktop_policies import form_field
from deskpilot.smoke.fake_model.reading import (  # noqa: F401  (re-exported for the tests)
    GONE_HINTS,
    Element,
    Request,
    Result,
    ancestors,
    children,
    has_tree,
    norm_label,
    parse_elements,
    unquote,
)
from deskpilot.smoke.fake_model.replies import (  # noqa: F401
    RAW,
    Reply,
    action,
    batch,
    call,
    final,
    garbage,
    reply_content,
)
from deskpilot.smoke.fake_model.server import Policy, Recorded, ScriptedModel  # noqa: F401

_norm_label = norm_label


def provider_env(model: ScriptedModel) -> dict[str, str]:
    """The environment that makes a ``deskpilot`` process decide with ``model`` (its
    ``DESKPILOT_PROVIDER_*`` profile: the URL, a model name, a throwaway key)."""
    return {
        "DESKPILOT_PROVIDER_BASE_URL": model.base_url,
        "DESKPILOT_PROVIDER_MODEL": "scripted",
        "DESKPILOT_PROVIDER_API_KEY": "test",
    }


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

    def __init__(self, values: Mapping[str, str], submit_label: str = "OK") -> None:
        self.values = dict(values)
        self.submit_label = submit_label

    def field(self, elements: Sequence[Element], label: str) -> Element | None:
        return form_field(elements, label)  # the smoke suite's form solver finds fields alike

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
