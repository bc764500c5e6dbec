"""Turning raw accessible nodes into the outline the agent reads.

Pure and synchronous (no D-Bus here), so it is tested and benchmarked on synthetic trees.
Rules (docs/host-tree.md is the long form):

* one line per element: ``- role "name" = "value" [state]… [actions: …] [id]``, two spaces of
  indent per rendered depth, the id always last: here the line number (1-based), which the
  window's id book then replaces with the id the element keeps (atspi/element_ids.py);
* hidden subtrees (neither VISIBLE nor SHOWING, or with no area on screen where the states
  do not say: ``RawNode.empty``, areas.py) are not shown;
* a checkable node says ``[checked]``, ``[mixed]``, ``[pressed]`` or ``[unchecked]``;
* a text node's caret, selection and what it does not show of its text follow its states,
  and a document shows a bounded amount of its paragraphs' text, with a line for the rest
  (text_render.py; docs/host-tree.md "Documents and text");
* a closed combo box names its options on its line and hides its list; an open list that
  lives elsewhere (Firefox's) is shown under its combo box (atspi/combo_view.py);
* noise is dropped: a node with no name, no value, no usable action, not focused, and nothing
  shown below it; a text leaf that only repeats its parent's name; list bullets;
* unnamed generic containers (panel, filler, section …) with something below them are
  flattened: their children take their place;
* a tree view's cell of several renderers is one cell named by their text (cells.py);
* a container with more than ``max_children`` children shows the first ones and a line
  ``- … N more items``;
* a virtual container (never asked for its children: atspi/on_screen.py) has a line
  ``- … on screen: …`` first under it, saying what of it is on screen and what was left
  out; its children are what is on screen of it;
* children a deadline-bounded read did not get to (``RawNode.unread``) are one line
  ``- … [unread: N children — deadline]`` where they would have been (after the children
  that were read), so an incomplete tree never looks complete;
* the element cap and the text budget (UTF-16 units, like the decision layer counts) end the
  outline with ``[truncated: N elements omitted]``, never silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from deskpilot.host.atspi.cells import R_TABLE_CELL, merged_renderers, shown_cell_actions, toggles
from deskpilot.host.atspi.collect import RawNode, is_hidden
from deskpilot.host.atspi.combo_view import ComboView, combo_view
from deskpilot.host.atspi.stale_cells import stale_words
from deskpilot.host.atspi.text_render import DocumentBounds, above_line, below_line, text_words
from deskpilot.host.atspi.vocab import (
    ALWAYS_SHOWN_ROLES,
    CHECKABLE_ROLES,
    CLICK_ACTIONS,
    DOCUMENT_ROLES,
    GENERIC_CONTAINER_ROLES,
    INTERACTIVE_ROLES,
    R_PASSWORD_TEXT,
    ROLE_NUMBER,
    ROLE_VOCAB,
    TEXT_CONTENT_ROLES,
    TEXT_LEAF_ROLES,
    TEXT_NAME_ROLES,
    State,
    bit,
    is_noise_action,
    window_role,
)

NAME_MAX_CHARS: Final = 200
#: options named on a closed combo box's line; the rest are counted
MAX_OPTIONS_SHOWN: Final = 40
#: UTF-16 units the option names of one line may take (a long list is counted, not listed)
OPTIONS_BUDGET: Final = 800
#: values are bounded where they are read (doc_text.py: a text view's part, a paragraph);
#: this only guards against one that is not
VALUE_QUOTE_MAX: Final = 8000
SCREEN_MAX_CHARS: Final = 400  # a virtual container's on-screen summary line
MARKER_RESERVE: Final = 64  # UTF-16 units kept free for the truncation marker
BULLETS: Final = frozenset({"•", "◦", "▪", "▫", "‣", "⁃", "-", "*", "·", "●", "○", "■", "□"})
_TYPE_NAME: Final = re.compile(r"^(?:[A-Z][a-z0-9]+){2,}$")
_WS: Final = re.compile(r"\s+")

KEEP, FLATTEN, NOISE, HIDDEN = 0, 1, 2, 3
# stack items of render() that are lines, not nodes: an elision, unread children, the end of
# a document's children (what it did not show of its text), what is on screen of a virtual
# container (its summary, before the children)
_ELISION, _UNREAD, _DOC_END, _SCREEN = -1, -2, -3, -4

_B_FOCUSED = bit(State.FOCUSED)
_B_SELECTED = bit(State.SELECTED)
_B_CHECKED = bit(State.CHECKED)
_B_MIXED = bit(State.INDETERMINATE)
_B_PRESSED = bit(State.PRESSED)
_B_EXPANDABLE = bit(State.EXPANDABLE)
_B_EXPANDED = bit(State.EXPANDED)
_B_SENSITIVE = bit(State.SENSITIVE)
_B_ENABLED = bit(State.ENABLED)
_B_EDITABLE = bit(State.EDITABLE)
_R_PARAGRAPH = ROLE_NUMBER["paragraph"]
_B_READ_ONLY = bit(State.READ_ONLY)
_B_REQUIRED = bit(State.REQUIRED)
_B_INVALID = bit(State.INVALID_ENTRY)
_B_MODAL = bit(State.MODAL)
_B_BUSY = bit(State.BUSY)
_B_ICONIFIED = bit(State.ICONIFIED)
_B_CHECKABLE = bit(State.CHECKABLE)
_R_LIST_ITEM: Final = ROLE_NUMBER["list item"]
_TEXT_FIELD_ROLES: Final = frozenset(
    i for i, r in enumerate(ROLE_VOCAB) if r in ("textField", "passwordField")
)
_TOGGLE_ROLES: Final = frozenset(i for i, r in enumerate(ROLE_VOCAB) if r == "toggleButton")


@dataclass(frozen=True, slots=True)
class RenderOptions:
    max_elements: int = 2000
    text_budget: int = 48_000  # UTF-16 code units
    max_children: int = 500  # per container; the rest is elided with a count
    gtk4_names: bool = False  # GTK4 falls back to the widget type name ("GtkButton")


@dataclass(slots=True)
class Rendered:
    text: str
    element_count: int
    # id -> (node index, parent id)
    elements: dict[int, tuple[int, int | None]] = field(default_factory=dict)
    focused_id: int | None = None
    secure_ids: list[int] = field(default_factory=list)
    omitted: int = 0
    elided: int = 0
    noise: int = 0
    cap_hit: bool = False
    budget_hit: bool = False
    unread: int = 0  # ``[unread: …]`` marker lines shown


def utf16_len(s: str) -> int:
    if s.isascii():
        return len(s)
    return len(s) + sum(1 for c in s if ord(c) > 0xFFFF)


def clean_name(n: RawNode, gtk4_names: bool) -> str:
    name = n.name
    if name:
        if "\n" in name or "\t" in name or "  " in name:
            name = _WS.sub(" ", name)
        name = name.strip()
        if gtk4_names and _TYPE_NAME.match(name):
            name = ""
    if not name and n.desc and (n.role in INTERACTIVE_ROLES or n.children == []):
        name = _WS.sub(" ", n.desc).strip()
    if not name and n.value and text_named(n):
        name = _WS.sub(" ", n.value).strip()
    return name


def text_named(n: RawNode) -> bool:
    """A text leaf named by its own text (doc_text.py: LibreOffice's status bar labels,
    Firefox's headings and links); its value is shown as its name."""
    return n.role in TEXT_NAME_ROLES and not n.name.strip() and not n.children


def usable_actions(n: RawNode) -> bool:
    if n.actions is None:
        return n.role in INTERACTIVE_ROLES
    return any(not is_noise_action(a) for a in n.actions)


def shown_actions(actions: tuple[str, ...] | None) -> list[str]:
    """Action names worth printing: what invoke_element can name beyond a plain click."""
    if not actions:
        return []
    names = [a for a in actions if a and not is_noise_action(a)]
    if len(names) == 1 and names[0].lower() in CLICK_ACTIONS:
        return []
    return names


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\x7f\u2028\u2029]')


def _escape_char(m: re.Match[str]) -> str:
    ch = m.group(0)
    return _ESCAPES.get(ch) or f"\\u{ord(ch):04x}"


def _quote(s: str, limit: int = NAME_MAX_CHARS) -> str:
    """A name or value inside double quotes on one line: quotes, backslashes and control
    characters (newlines above all: one element is one line, and the line's last ``[id]``
    is its id) are escaped, so text in the UI can never look like another element."""
    if len(s) > limit:
        s = s[:limit] + "…"
    if _NEEDS_ESCAPE.search(s):
        s = _NEEDS_ESCAPE.sub(_escape_char, s)
    return s


def state_words(n: RawNode, expanded: bool | None = None) -> list[str]:
    """The ``[state]`` words of a line; ``expanded``: whether the element is open, where
    the host knows better than its states (a combo box: atspi/combo_view.py)."""
    st = n.states
    role = n.role
    out: list[str] = []
    if st & _B_FOCUSED:
        out.append("focused")
    if st & _B_SELECTED:
        out.append("selected")
    if st & _B_MIXED:
        out.append("mixed")
    elif st & _B_CHECKED:
        out.append("checked")
    if st & _B_PRESSED and role in _TOGGLE_ROLES:
        out.append("pressed")
    elif not st & (_B_MIXED | _B_CHECKED) and (
        role in CHECKABLE_ROLES or st & _B_CHECKABLE or toggles(n)
    ):
        out.append("unchecked")
    if expanded is None:
        if st & _B_EXPANDED:
            out.append("expanded")
        elif st & _B_EXPANDABLE:
            out.append("collapsed")
    else:
        out.append("expanded" if expanded else "collapsed")
    if role in INTERACTIVE_ROLES and not st & (_B_SENSITIVE | _B_ENABLED | _B_READ_ONLY):
        # Chromium leaves a read-only field neither enabled nor sensitive: it is read only
        # (a click on it still does what the page says: a date picker opens), not disabled
        out.append("disabled")
    if role in _TEXT_FIELD_ROLES:
        if st & _B_READ_ONLY or not st & _B_EDITABLE:
            out.append("readonly")
    elif st & _B_EDITABLE:
        out.append("editable")
    if st & _B_REQUIRED:
        out.append("required")
    if st & _B_INVALID:
        out.append("invalid")
    if st & _B_MODAL:
        out.append("modal")
    if st & _B_BUSY:
        out.append("busy")
    if st & _B_ICONIFIED:
        out.append("minimized")
    if role == R_PASSWORD_TEXT:
        out.append("secure")
    return out


def classify(
    nodes: list[RawNode], opts: RenderOptions, combos: ComboView | None = None
) -> tuple[list[int], list[str]]:
    """Decide KEEP / FLATTEN / NOISE / HIDDEN per node, and each node's display name
    (``combos``: the lists of closed combo boxes are hidden, atspi/combo_view.py)."""
    n = len(nodes)
    kind = [KEEP] * n
    names = [""] * n
    # the nearest named ancestor's name, looking at most 3 generations up
    context = [""] * n
    context_age = [0] * n
    cells: list[int] = []  # cells with children: maybe a tree view's renderers (cells.py)
    gtk4 = opts.gtk4_names
    closed = combos.hidden if combos is not None else None
    # forward: hidden-ness and names (a parent precedes its children in preorder)
    for i, node in enumerate(nodes):
        p = node.parent
        if p >= 0 and (
            kind[p] == HIDDEN or is_hidden(node, nodes[p]) or node.empty or (closed and i in closed)
        ):
            kind[i] = HIDDEN
            continue
        names[i] = clean_name(node, gtk4)
        if node.role == R_TABLE_CELL and node.children:
            cells.append(i)
        if p >= 0:
            if names[p]:
                context[i], context_age[i] = names[p], 1
            elif context_age[p] and context_age[p] < 3:
                context[i], context_age[i] = context[p], context_age[p] + 1
    # a tree view's cell of several renderers is one cell named by their text (cells.py)
    if cells:
        for c in merged_renderers(nodes, names, cells, lambda c: kind[c] != HIDDEN, state_words):
            kind[c] = NOISE
    # backward: what is shown below each node decides containers
    shown_below = [False] * n
    for i in range(n - 1, -1, -1):
        if kind[i] >= NOISE:  # hidden, or a renderer its cell stands for
            continue
        node = nodes[i]
        # its marker or its on-screen summary is shown below it
        below = shown_below[i] or node.unread > 0 or node.screen is not None
        if i == 0:
            kind[i] = KEEP
            continue
        name = names[i]
        focused = bool(node.states & _B_FOCUSED)
        if not below and not focused and node.role in TEXT_LEAF_ROLES:
            pname = context[i]
            if (
                (not name and not node.value and not _blank_line(node))
                or (name and pname and name in pname)
                or (name.strip() in BULLETS and _in_list_item(nodes, i))
            ):
                kind[i] = NOISE
                continue
        own = (
            bool(name)
            or focused
            or bool(node.value)
            or node.role in ALWAYS_SHOWN_ROLES
            or _blank_line(node)
        )
        if not own:
            own = usable_actions(node)
        if not own:
            if not below:
                kind[i] = NOISE
                continue
            kind[i] = FLATTEN if node.role in GENERIC_CONTAINER_ROLES else KEEP
        if node.parent >= 0:
            shown_below[node.parent] = True
    return kind, names


def _blank_line(node: RawNode) -> bool:
    """An empty paragraph of an editable document whose text was read: a blank line a
    person sees and can type into (Writer's empty paragraphs were left out unless the caret
    was in one: trial-6 could fill "the blank line under the title" only by guessing)."""
    return node.role == _R_PARAGRAPH and node.value == "" and bool(node.states & _B_EDITABLE)


def _in_list_item(nodes: list[RawNode], i: int) -> bool:
    """Whether node ``i`` is within a list item (two levels up at most): a bullet there is
    the list's decoration, elsewhere it says something (gnome-text-editor's "•" before the
    title of a file with unsaved changes)."""
    p = nodes[i].parent
    for _ in range(2):
        if p < 0:
            return False
        if nodes[p].role == _R_LIST_ITEM:
            return True
        p = nodes[p].parent
    return False


def render(nodes: list[RawNode], opts: RenderOptions | None = None) -> Rendered:
    opts = opts or RenderOptions()
    if not nodes:
        return Rendered(text="", element_count=0)
    combos = combo_view(nodes)
    kind, names = classify(nodes, opts, combos)
    # most windows have no combo box: these stay empty and cost a truth test per line
    moved, adopted = combos.moved, combos.adopted
    expanded_of, options_of = combos.expanded, combos.options
    lines: list[str] = []
    out = Rendered(text="", element_count=0, noise=kind.count(NOISE))
    budget = opts.text_budget - MARKER_RESERVE
    used = 0
    stopped = False
    max_children = max(1, opts.max_children)
    docs = DocumentBounds()

    def note(line: str) -> bool:
        """Add a line that stands for something not shown (no element); False: no room."""
        nonlocal used, stopped
        if stopped:
            return False
        cost = utf16_len(line) + 1
        if used + cost > budget:
            stopped = out.budget_hit = True
            return False
        used += cost
        lines.append(line)
        return True

    # stack items: (node index, rendered depth, parent id), or (_ELISION | _UNREAD, depth,
    # count) and (_DOC_END, depth, document index) for the lines that stand for what is not
    # shown
    stack: list[tuple[int, int, int | None]] = [(0, 0, None)]
    while stack:
        i, depth, parent_id = stack.pop()
        if i == _UNREAD:
            count = parent_id or 0
            kids = "child" if count == 1 else "children"
            if note(f"{'  ' * depth}- … [unread: {count:,} {kids} — deadline]"):
                out.unread += 1
            continue
        if i == _DOC_END:
            doc = parent_id or 0
            below = below_line(nodes[doc], docs.cut.get(doc, 0))
            if below is not None:
                note("  " * depth + below)
            continue
        if i == _SCREEN:
            summary = nodes[parent_id or 0].screen or ""
            note(f"{'  ' * depth}- … {_quote(summary, SCREEN_MAX_CHARS)}")
            continue
        if i < 0:  # an elision line: parent_id carries the count
            count = parent_id or 0
            out.elided += count
            note(f"{'  ' * depth}- … {count:,} more items")
            continue
        k = kind[i]
        if k in (HIDDEN, NOISE) or (moved and i in moved):
            continue
        node = nodes[i]
        child_depth = depth
        my_id = parent_id
        value = node.value
        if value and node.role in TEXT_CONTENT_ROLES:
            value = docs.take(_document_of(nodes, i), value, bool(node.states & _B_FOCUSED))
            if value is None:
                continue  # past its document's text bound: the line after it says so
        if k == KEEP:
            if stopped:
                out.omitted += 1
            elif out.element_count >= opts.max_elements:
                stopped = out.cap_hit = True
                out.omitted += 1
            else:
                role = window_role(node.role) if i == 0 else node.role
                line = _line(
                    node,
                    role,
                    names[i],
                    value,
                    depth,
                    len(lines) + 1,
                    expanded_of.get(i) if expanded_of else None,
                    options_of.get(i) if options_of else None,
                )
                cost = utf16_len(line) + 1
                if used + cost > budget:
                    stopped = out.budget_hit = True
                    out.omitted += 1
                else:
                    used += cost
                    lines.append(line)
                    my_id = len(lines)
                    out.element_count += 1
                    out.elements[my_id] = (i, parent_id)
                    if out.focused_id is None and node.states & _B_FOCUSED:
                        out.focused_id = my_id
                    if node.role == R_PASSWORD_TEXT:
                        out.secure_ids.append(my_id)
            child_depth = depth + 1
        if node.role in DOCUMENT_ROLES:
            stack.append((_DOC_END, child_depth, i))
            above = above_line(node)
            if above is not None:
                note("  " * child_depth + above)
        if node.unread:
            stack.append((_UNREAD, child_depth, node.unread))
        children = node.children
        if adopted and i in adopted:  # its open list, read elsewhere (Firefox), shown here
            children = [adopted[i]]
        if len(children) > max_children:
            stack.append((_ELISION, child_depth, len(children) - max_children))
            children = children[:max_children]
        for c in reversed(children):
            stack.append((c, child_depth, my_id))
        if node.screen is not None:
            stack.append((_SCREEN, child_depth, i))  # before the children: what they are
    if out.omitted:
        lines.append(f"[truncated: {out.omitted:,} elements omitted]")
    out.text = "\n".join(lines)
    return out


def _document_of(nodes: list[RawNode], i: int) -> int:
    """The nearest document at or above node ``i`` (the root when there is none): the text
    bound is per document."""
    p = nodes[i].parent
    while p > 0 and nodes[p].role not in DOCUMENT_ROLES:
        p = nodes[p].parent
    return max(p, 0)


def _line(
    node: RawNode,
    role: int,
    name: str,
    value: str | None,
    depth: int,
    line_no: int,
    expanded: bool | None = None,
    options: tuple[str, ...] | None = None,
) -> str:
    """One element's line; ``value``: its value as shown (a paragraph's may be cut by its
    document's text bound), bounded where it was read (doc_text.py); ``expanded`` and
    ``options``: a combo box's, by the rules of atspi/combo_view.py (None: its own states
    say)."""
    parts = ["  " * depth, "- ", ROLE_VOCAB[role] if 0 <= role < len(ROLE_VOCAB) else "generic"]
    if name:
        parts.append(f' "{_quote(name)}"')
    if value is not None and node.role != R_PASSWORD_TEXT and not text_named(node):
        parts.append(f' = "{_quote(value, VALUE_QUOTE_MAX)}"')
    for w in state_words(node, expanded):
        parts.append(f" [{w}]")
    if node.formula:
        parts.append(f' [formula: "{_quote(node.formula)}"]')
    if node.stale is not None:
        parts.append(f" [{stale_words(node.stale)}]")
    if options:
        parts.append(_options_text(options))
    if node.text is not None:
        quoted = _quote(node.text.selected or "", VALUE_QUOTE_MAX)
        for w in text_words(node, quoted):
            parts.append(f" [{w}]")
    acts = shown_actions(shown_cell_actions(node))
    if acts:
        parts.append(f" [actions: {', '.join(_quote(a, 40) for a in acts)}]")
    parts.append(f" [{line_no}]")
    return "".join(parts)


def _options_text(names: tuple[str, ...]) -> str:
    """`` [options: "Red", "Green", … 3 more]``: a closed combo box's options, each quoted
    and escaped like a name (an option's text can never look like another element); a long
    list names its first ones and counts the rest."""
    shown: list[str] = []
    used = 0
    for name in names[:MAX_OPTIONS_SHOWN]:
        text = f'"{_quote(name)}"'
        used += utf16_len(text) + 2
        if used > OPTIONS_BUDGET and shown:
            break
        shown.append(text)
    more = len(names) - len(shown)
    if more:
        shown.append(f"… {more:,} more")
    return f" [options: {', '.join(shown)}]"
