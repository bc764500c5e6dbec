"""The text of documents and text views, the caret and the selection, read for the outline.

A document's words are where its text is: LibreOffice Writer's document node has one
paragraph child per paragraph on screen, with no name — its text is in the Text interface;
Firefox's paragraphs, headings and links hold theirs the same way; a status bar's labels too
(LibreOffice); a GTK 3/4 text view (mousepad, gnome-text-editor) is one node holding the whole
file. The outline showed none of it. These reads go into the two batches the snapshot's
details step sends anyway (``collect.enrich``): the text's length, the caret and the
selection in the first, the text itself in the second. Nothing is read for a node whose text
its children already show (Chromium's paragraphs hold static text children), so a web page
that showed its text costs no more.

What is read (docs/host-tree.md, "Documents and text"):

* **text as the name**: an unnamed label, static text, heading, link or caption with no
  children — its text (at most ``NAME_TEXT_MAX`` characters) stands for its name;
* **text as the value**: an unnamed paragraph (or block quote) with no children — at most
  ``PARAGRAPH_MAX`` characters; the render shows at most ``DOCUMENT_TEXT_MAX`` of a
  document's paragraphs and says what it left out;
* **a text view**: a multi-line text field — at most ``VIEW_MAX`` characters, the part
  around the caret when the text is longer, and how many characters lie before and after
  the part shown. (Which lines are on screen cannot be asked: GTK 4.8 never answers
  ``Text.GetOffsetAtPoint``, the call hangs until D-Bus gives up after 25 s.) A single-line
  field keeps its first ``VALUE_MAX_CHARS`` characters, as before;
* **the caret** of the focused text node (``CaretOffset``: an unfocused field's caret is
  wherever it was last left, GTK 4 reports 0 for every label);
* **the selection** (the first range, ``Text.GetSelection(0)``) of the focused text node, of
  every text view and of every paragraph read (Writer selects across paragraphs; each
  paragraph holds its part; a text view keeps its selection, greyed, when it loses the
  focus), with at most ``SELECTED_MAX`` characters of its text.

Never for a password field (its text is not even counted).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from deskpilot.host.atspi.bus import I_PROPERTIES, I_TEXT, AtspiCallError, Call
from deskpilot.host.atspi.vocab import (
    R_PASSWORD_TEXT,
    TEXT_CONTENT_ROLES,
    TEXT_LEAF_ROLES,
    TEXT_NAME_ROLES,
    TEXT_VALUE_ROLES,
    Iface,
    State,
    bit,
)

if TYPE_CHECKING:
    from deskpilot.host.atspi.collect import RawNode

#: characters of a field's value (single-line text fields, combo boxes, spin buttons)
VALUE_MAX_CHARS: Final = 200
#: characters of an unnamed text leaf's text that stand for its name
NAME_TEXT_MAX: Final = 200
#: characters read of one paragraph
PARAGRAPH_MAX: Final = 2000
#: characters of one document's paragraphs the outline shows (render.py applies it)
DOCUMENT_TEXT_MAX: Final = 4000
#: characters of a multi-line text field shown (the part around the caret when longer)
VIEW_MAX: Final = 4000
#: characters of a selection quoted
SELECTED_MAX: Final = 100

_IF_TEXT: Final = int(Iface.TEXT)
_B_FOCUSED: Final = bit(State.FOCUSED)
_B_MULTI_LINE: Final = bit(State.MULTI_LINE)


@dataclass(frozen=True, slots=True)
class TextState:
    """What the outline says of a text node beyond its text: where the caret is, what is
    selected, and how much of the text it does not show.

    ``before``/``after``: characters of the node's text before and after the part shown
    (0: none); -1 where the amount is not known — a document whose paragraphs are only
    the ones on screen (Writer), with more of it above or below."""

    caret: int | None = None
    selection: tuple[int, int] | None = None
    selected: str | None = None  # the selection's text, at most SELECTED_MAX characters
    before: int = 0
    after: int = 0


def embedded_paragraph(n: RawNode, nodes: list[RawNode]) -> bool:
    """An unnamed paragraph whose children are all embedded objects (links, images: no text
    leaves), so its own text holds words no other node has (see :func:`text_kind`)."""
    return (
        n.role in TEXT_CONTENT_ROLES
        and bool(n.children)
        and not n.name.strip()
        and not any(nodes[c].role in TEXT_LEAF_ROLES for c in n.children)
    )


def text_kind(n: RawNode, nodes: list[RawNode] | None = None) -> str | None:
    """How a node's text is shown: "name", "value" (a paragraph), "view" (a multi-line
    field), "field" (other fields' values, as before); None: its text is not read.

    A paragraph whose children are all embedded objects (``nodes`` given: Firefox's ``<p>``
    with a link in it holds "Read our \ufffc before you join." and the link as its child)
    is read too: its words around the link are on screen and in no other node (trial-6 saw
    only `link "club rules"`). One with text children (Chromium's static texts) is not: they
    show its text already."""
    if n.role == R_PASSWORD_TEXT or not n.ifaces & _IF_TEXT or n.ifaces < 0:
        return None
    if n.role in TEXT_VALUE_ROLES:
        return "view" if n.states & _B_MULTI_LINE else "field"
    if n.name.strip():
        return None
    if n.children:
        return "value" if nodes is not None and embedded_paragraph(n, nodes) else None
    if n.role in TEXT_NAME_ROLES:
        return "name"
    if n.role in TEXT_CONTENT_ROLES:
        return "value"
    return None


class TextReads:
    """The text reads of one details step: the calls it adds to the two batches, and what
    their answers make of the nodes (``RawNode.value`` and ``RawNode.text``)."""

    def __init__(self) -> None:
        self._count: dict[int, int] = {}
        self._caret: dict[int, int] = {}
        self._selection: dict[int, tuple[int, int]] = {}
        self._kind: dict[int, str] = {}
        # the second batch: (node, what) per call
        self._slots: list[tuple[int, str, int]] = []

    def first(
        self,
        i: int,
        n: RawNode,
        calls: list[Call],
        slots: list[tuple[int, str]],
        nodes: list[RawNode] | None = None,
    ) -> None:
        """Add node ``i``'s first-batch calls: its text's length, its caret (focused),
        its selection (focused, or a paragraph)."""
        kind = text_kind(n, nodes)
        if kind is None:
            return
        n.text = None  # read again below
        self._kind[i] = kind
        calls.append((n.bus, n.path, I_PROPERTIES, "Get", "ss", (I_TEXT, "CharacterCount")))
        slots.append((i, "count"))
        focused = bool(n.states & _B_FOCUSED)
        if focused:
            calls.append((n.bus, n.path, I_PROPERTIES, "Get", "ss", (I_TEXT, "CaretOffset")))
            slots.append((i, "caret"))
        if focused or kind in ("value", "view"):
            # GTK 4 answers InvalidArgs when there is none, LibreOffice (-1, -1), GTK 3 (0, 0)
            calls.append((n.bus, n.path, I_TEXT, "GetSelection", "i", (0,)))
            slots.append((i, "selection"))

    def took(self, i: int, kind: str, reply: list[Any]) -> bool:
        """Keep a first-batch answer; False when ``kind`` is not one of these reads."""
        if kind == "count":
            self._count[i] = int(reply[0].value)
        elif kind == "caret":
            self._caret[i] = int(reply[0].value)
        elif kind == "selection":
            start, end = int(reply[0]), int(reply[1])
            if 0 <= start < end:
                self._selection[i] = (start, end)
        else:
            return False
        return True

    def second(self, nodes: list[RawNode]) -> list[Call]:
        """The second batch's calls: each node's text (the part shown), and a selection's
        text where the part shown does not hold it. Nodes with no text get their empty
        value (or name) here."""
        self._one_focused(nodes)
        calls: list[Call] = []
        for i, kind in self._kind.items():
            n = nodes[i]
            count = self._count.get(i)
            if count is None:
                continue  # its length was not read (the call failed): nothing known
            caret = self._caret.get(i)
            start, end = _window(kind, count, caret)
            before, after = start, count - end
            sel = self._selection.get(i)
            if kind in ("view", "value") or caret is not None or sel is not None:
                n.text = TextState(
                    caret=caret if caret is not None and 0 <= caret <= count else None,
                    selection=sel,
                    before=before,
                    after=after if kind == "view" else 0,
                )
            if end > start:
                calls.append((n.bus, n.path, I_TEXT, "GetText", "ii", (start, end)))
                self._slots.append((i, "text", start))
            elif kind != "name":
                n.value = ""
            if sel is not None and not (start <= sel[0] and sel[1] <= end):
                s_end = min(sel[1], sel[0] + SELECTED_MAX + 1)
                calls.append((n.bus, n.path, I_TEXT, "GetText", "ii", (sel[0], s_end)))
                self._slots.append((i, "selected", sel[0]))
        return calls

    def _one_focused(self, nodes: list[RawNode]) -> None:
        """Of several text nodes that say they have the keyboard focus, the ones without a
        caret lose it when one has a caret: LibreOffice Writer leaves FOCUSED on a paragraph
        the caret has left (a paragraph made by Enter kept it while the caret was in
        another), and an agent would type where it is not."""
        focused = [i for i in self._caret if nodes[i].states & _B_FOCUSED]
        if len(focused) < 2:
            return
        count = self._count
        caret = [i for i in focused if 0 <= self._caret[i] <= count.get(i, -1)]
        if not caret:
            return
        for i in focused:
            if i not in caret:
                nodes[i].states &= ~_B_FOCUSED
                del self._caret[i]

    def apply(self, nodes: list[RawNode], replies: list[Any]) -> None:
        """Put the second batch's answers in place."""
        texts: dict[int, tuple[int, str]] = {}
        for (i, what, start), r in zip(self._slots, replies, strict=True):
            if isinstance(r, AtspiCallError):
                continue
            n = nodes[i]
            text = _with_embedded(str(r[0]), [nodes[c] for c in n.children] if start == 0 else [])
            if what == "selected":
                _with_selected(n, text)
                continue
            texts[i] = (start, text)
            kind = self._kind[i]
            count = self._count[i]
            if kind == "name":
                n.value = _cut(text, NAME_TEXT_MAX, count)
            elif kind == "field":
                n.value = _cut(text, VALUE_MAX_CHARS, count)
            elif kind == "value" and n.children and not str(r[0]).replace("\ufffc", "").strip():
                n.value = None  # only its links' words: the links say them (a link alone)
            elif kind == "value":
                n.value = _cut(text, PARAGRAPH_MAX, count)
            else:  # a text view: the part shown, never cut inside (its markers say the rest)
                n.value = text
        for i, sel in self._selection.items():
            n = nodes[i]
            got = texts.get(i)
            if got is None or n.text is None or n.text.selected is not None:
                continue
            start, text = got
            if start <= sel[0] and sel[1] <= start + len(text):
                _with_selected(n, text[sel[0] - start : sel[1] - start])


def _with_embedded(text: str, children: list[RawNode]) -> str:
    """``text`` with each object replacement character (an embedded child: a link, an
    image) put back as that child's name, in order — the words a person reads there — or
    dropped where there is no such child (a part read from the middle of the text)."""
    if "\ufffc" not in text:
        return text
    parts = text.split("\ufffc")
    out = [parts[0]]
    for k, rest in enumerate(parts[1:]):
        out.append(" ".join(children[k].name.split()) if k < len(children) else "")
        out.append(rest)
    return "".join(out)


def _window(kind: str, count: int, caret: int | None) -> tuple[int, int]:
    """The range of a node's text that is read: all of it up to the kind's bound; for a text
    view longer than ``VIEW_MAX``, the part with the caret in its middle."""
    if kind == "name":
        return 0, min(count, NAME_TEXT_MAX + 1)
    if kind == "field":
        return 0, min(count, VALUE_MAX_CHARS + 1)
    if kind == "value":
        return 0, min(count, PARAGRAPH_MAX + 1)
    if count <= VIEW_MAX:
        return 0, count
    at = caret if caret is not None and 0 <= caret <= count else 0
    start = max(0, min(at - VIEW_MAX // 2, count - VIEW_MAX))
    return start, start + VIEW_MAX


def _cut(text: str, limit: int, total: int) -> str:
    """Text read up to its bound + 1 character, cut with an ellipsis when there was more."""
    if total > limit or len(text) > limit:
        return text[:limit] + "…"
    return text


def _with_selected(n: RawNode, text: str) -> None:
    if n.text is None:
        return
    if len(text) > SELECTED_MAX:
        text = text[:SELECTED_MAX] + "…"
    n.text = dataclasses.replace(n.text, selected=text)
