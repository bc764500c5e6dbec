"""Reading a chat request the way a model would: the goal, the tools offered, the tool results
and the element lines of the newest desktop state (deskpilot's outline format)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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


def norm_label(text: str) -> str:
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
                    schema = json.loads(m.group(2))
                except ValueError:  # cut by the prompt's schema budget
                    return None
                return schema if isinstance(schema, dict) else None
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
