"""Read the host's rendered element tree back into elements (for the policy and the runtime).

The host renders one element per line, ``- role "name" = "value" [state]… [id]``, indented two
spaces per level, the id always last. The policy needs roles, names, states and ancestry
(is this button inside a dialog? is this field a password field?), never values; the
verification engine (``value_equals``, text checks) reads the values too. Roles are compared
by a normalised key (lower case, letters and digits only) so the host's camelCase vocabulary
and raw AT-SPI role names both match.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

_LINE = re.compile(
    r"""^(?P<indent>\s*)-\s+(?P<role>[^\s"\[]+)
        (?:\s+"(?P<name>(?:[^"\\]|\\.)*)")?
        (?:\s+=\s+(?:"(?P<value>(?:[^"\\]|\\.)*)"|(?P<bare>[^\s\[]+)))?
        (?P<tags>(?:\s+\[[^\]]*\])*)\s*$""",
    re.VERBOSE,
)
_TAG = re.compile(r"\[([^\]]*)\]")
#: how a line that stands for no element starts (children elided or unread, what is on screen
#: of a virtual container): it has no id, and ids are not line numbers; it is parsed under a
#: negative id (its line number, negated), role "…"
MARKER = "- … "
_ID_ONLY = re.compile(r"\[(\d+)\]\s*$")
#: the first id of the text the kernel reads off the screenshot into a host's tree (``[ocr]``
#: items: kernel/opaque_text.py): a block the host's id book never gives (host/atspi/
#: element_ids.py), so such an item's id never names a host element, before or after
SCREEN_TEXT_IDS: Final = 1_000_000


def role_key(role: str) -> str:
    return "".join(ch for ch in role.lower() if ch.isalnum())


@dataclass(frozen=True, slots=True)
class TreeElement:
    id: int
    depth: int
    role: str
    key: str  # role_key(role)
    name: str
    states: frozenset[str]
    parent: int | None
    #: the rendered value (unescaped; cut at 200 characters with "…" by the host), None when
    #: the line has none (a password field's value is never rendered)
    value: str | None = None


@dataclass(frozen=True, slots=True)
class ElementTree:
    elements: dict[int, TreeElement]

    def get(self, element_id: int | None) -> TreeElement | None:
        return None if element_id is None else self.elements.get(element_id)

    def ancestors(self, element: TreeElement) -> list[TreeElement]:
        out: list[TreeElement] = []
        parent = element.parent
        while parent is not None:
            node = self.elements.get(parent)
            if node is None:
                break
            out.append(node)
            parent = node.parent
        return out

    def focused(self) -> TreeElement | None:
        found = [e for e in self.elements.values() if "focused" in e.states]
        # the deepest focused node is the one that receives keys
        return max(found, key=lambda e: e.depth) if found else None

    def __len__(self) -> int:
        return len(self.elements)


_UNESCAPES = {"n": "\n", "r": "\r", "t": "\t"}
_ESCAPED = re.compile(r"\\(?:u(?P<hex>[0-9a-fA-F]{4})|(?P<ch>.))")


def _unescape_one(m: re.Match[str]) -> str:
    if m.group("hex"):
        return chr(int(m.group("hex"), 16))
    ch = m.group("ch")
    return _UNESCAPES.get(ch, ch)


def _unescape(text: str) -> str:
    """Undo the renderer's escapes (quote, backslash, \\n \\r \\t, \\uXXXX)."""
    return _ESCAPED.sub(_unescape_one, text)


@lru_cache(maxsize=64)
def parse_tree(text: str) -> ElementTree:
    """Parse a rendered tree; lines that are not element lines (markers, notes) are skipped.

    Cached: the broker evaluates several actions against one observation's text.
    """
    elements: dict[int, TreeElement] = {}
    stack: list[tuple[int, int]] = []  # (depth, id)
    value: str | None
    for lineno, line in enumerate(text.splitlines(), start=1):
        marker = line.lstrip().startswith(MARKER)
        if not line.strip().startswith("- "):
            continue
        m = _LINE.match(line)
        if m is not None:
            indent = len(m.group("indent").expandtabs(2))
            role = m.group("role")
            name = _unescape(m.group("name") or "")
            tags = [t.strip() for t in _TAG.findall(m.group("tags") or "")]
            raw_value = m.group("value")
            value = _unescape(raw_value) if raw_value is not None else m.group("bare")
        else:  # tolerate an unexpected shape: keep at least the role and the id
            indent = len(line) - len(line.lstrip())
            body = line.strip()[2:]
            role = body.split(" ", 1)[0]
            name = ""
            value = None
            idm = _ID_ONLY.search(line)
            tags = [idm.group(1)] if idm else []
        element_id = lineno
        if tags and tags[-1].isdigit():
            element_id = int(tags.pop())
        if marker:
            # a line that stands for children not shown (role "…") has no id: it is kept
            # under one no element can have, so that it never shadows the element whose id
            # is its line number (ids stay put: they are not line numbers)
            element_id = -lineno
        depth = indent // 2
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parent = stack[-1][1] if stack else None
        states = frozenset(role_key(t) for t in tags if t)
        elements[element_id] = TreeElement(
            element_id, depth, role, role_key(role), name, states, parent, value
        )
        stack.append((depth, element_id))
    return ElementTree(elements)
