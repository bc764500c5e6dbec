"""How the outline shows text: the caret, the selection, a document's bound and what it does
not show (docs/host-tree.md, "Documents and text"; the reads are :mod:`.doc_text`).

* ``[caret N]`` — the caret is before character N of the element's text (0-based, the
  offsets ``select_text`` takes);
* ``[selection S-E: "…"]`` — characters S to E (end excluded) are selected, and the first
  ``doc_text.SELECTED_MAX`` of them;
* ``[more above: N characters]`` / ``[more below: N characters]`` — a text view shows part of
  its text (at most ``doc_text.VIEW_MAX`` characters, around the caret) and N characters
  before or after it are not shown;
* a document shows at most ``doc_text.DOCUMENT_TEXT_MAX`` characters of its paragraphs; one
  that reaches the bound is cut with "…" and the ones after it are left out, and a line after
  the document's last child says so. A document whose children are only the paragraphs on
  screen (Writer) gets a line before them when more of it lies above and one after them
  when more lies below.

Pure: no D-Bus here (render.py calls it while it renders).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deskpilot.host.atspi.doc_text import DOCUMENT_TEXT_MAX

if TYPE_CHECKING:
    from deskpilot.host.atspi.collect import RawNode


def text_words(n: RawNode, quote: str) -> list[str]:
    """The bracketed words for a text element's caret, selection and hidden text.
    ``quote``: the selected text already escaped for the line."""
    t = n.text
    if t is None:
        return []
    out: list[str] = []
    if t.caret is not None:
        out.append(f"caret {t.caret}")
    if t.selection is not None:
        s, e = t.selection
        said = f'selection {s}-{e}: "{quote}"' if t.selected is not None else f"selection {s}-{e}"
        out.append(said)
    if t.before > 0:
        out.append(f"more above: {t.before:,} characters")
    if t.after > 0:
        out.append(f"more below: {t.after:,} characters")
    return out


def above_line(n: RawNode) -> str | None:
    """The line before a scrolled document's children when more of it lies above."""
    t = n.text
    if t is not None and t.before == -1:
        return "- … more of the document above (scroll up to show it)"
    return None


def below_line(n: RawNode, cut: int) -> str | None:
    """The line after a document's children: more of it below the screen, or ``cut``
    paragraphs the document's text bound cut or left out."""
    t = n.text
    off_screen = t is not None and t.after == -1
    if cut:
        more = "; more of the document lies below the screen" if off_screen else ""
        kids = "paragraph" if cut == 1 else "paragraphs"
        return (
            f"- … {cut:,} {kids} not shown in full (the outline shows "
            f"{DOCUMENT_TEXT_MAX:,} characters of a document){more}"
        )
    if off_screen:
        return "- … more of the document below (scroll down to show it)"
    return None


class DocumentBounds:
    """How much of each document's paragraph text the outline has shown so far."""

    def __init__(self) -> None:
        self._used: dict[int, int] = {}
        self.cut: dict[int, int] = {}  # document → paragraphs cut or left out

    def take(self, doc: int, value: str, keep: bool) -> str | None:
        """The part of a paragraph's ``value`` that is shown under the bound of document
        ``doc``; None: none (left out). ``keep``: shown even past the bound (it has the
        caret), with no text then."""
        used = self._used.get(doc, 0)
        room = DOCUMENT_TEXT_MAX - used
        if len(value) <= room:
            self._used[doc] = used + len(value)
            return value
        self.cut[doc] = self.cut.get(doc, 0) + 1
        self._used[doc] = DOCUMENT_TEXT_MAX
        if room > 0:
            return value[:room] + "…"
        return "…" if keep else None
