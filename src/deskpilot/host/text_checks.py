"""Is the typed text in the field? What a text action's result says of its effect.

An app may answer "done" to a semantic text call and change nothing (Firefox's EditableText:
atspi/gecko.py), keys may go where the focus is not, a field may refuse characters, and a
``set_value`` done by select-all and typing may add to the text instead of replacing it. So
the field is read before the action and again once it settled, and the result says what was
seen (``ActionResult.effect``): "confirmed" only when the field shows the text where it was
meant to be, else "unconfirmed" and why, in words for the agent that never repeat the typed
text (host/text_entry.py reads and waits; this module only compares).

* **insert** (type_text, paste_text): the field reads as the text typed at the caret (over
  the selection) would leave it, or at the end of a field that did not have the focus — so
  the typed text occurs once more than it did, where it was meant to go. A field too long
  to hold whole is checked by what stands before the caret; a secure field (its text is
  never read) by its character count.
* **replace** (set_value of text): the field's text is the value (a secure field: it has as
  many characters).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from deskpilot.host.atspi.model import ElementRef, FieldText

CheckKind = Literal["insert", "replace"]

GONE = (
    "the field could not be read back after the action (it may be gone, or the app did not "
    "answer): whether the text is in it is not known"
)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the field read after the action says: ``confirmed``; else ``final`` (waiting
    longer cannot change it: the text is there twice) and ``note`` (why not, for the
    agent)."""

    confirmed: bool
    note: str | None = None
    final: bool = False

    @property
    def unchanged(self) -> bool:
        return self.note == UNCHANGED


UNCHANGED = "the field's text did not change: the text is not in it"
#: a value read back that is not the value set (host/effect_checks.py says it of any value)
NOT_REPLACED = (
    "the value read back afterwards is not the value asked for: the field may have kept or "
    "added to its old text, cut the value short, or refused or changed it; the new state "
    "shows what it holds"
)


@dataclass(frozen=True, slots=True)
class TextCheck:
    """One text action's expected effect on one field, with the field as it was before."""

    element: ElementRef
    kind: CheckKind
    text: str
    before: FieldText

    def verdict(self, after: FieldText | None) -> Verdict:
        if after is None:
            return Verdict(False, GONE)
        if self.kind == "insert":
            return self._inserted(after)
        return self._replaced(after)

    def _inserted(self, after: FieldText) -> Verdict:
        before, text = self.before, self.text
        if not text:
            return Verdict(True)
        if _same(before, after):
            return Verdict(False, UNCHANGED)
        if after.text is not None and before.text is not None:
            grew = after.text.count(text) - before.text.count(text)
            if grew == 1 and after.text in _typed(before, before.text, text):
                return Verdict(True)
            if grew == 1:
                return Verdict(False, _ELSEWHERE)
            if grew > 1:
                return Verdict(
                    False, "the text is now in the field more than once (typed twice?)", True
                )
            return Verdict(False, _NOT_AS_TYPED)
        if after.before_caret is not None and not self.element.secure:
            if after.before_caret.endswith(text):
                return Verdict(True)
            return Verdict(False, _NOT_AS_TYPED)
        # a secure field: only its length can be compared (and is never told)
        if after.count == before.count + len(text):
            return Verdict(True)
        return Verdict(False, "the secure field's length is not what the typed text gives it")

    def _replaced(self, after: FieldText) -> Verdict:
        value = self.text
        if after.text is None:
            if after.count == len(value):
                return Verdict(True)
            return Verdict(False, f"the field has {after.count} characters, the value {len(value)}")
        if after.text == value:
            return Verdict(True)
        if _same(self.before, after):
            return Verdict(False, UNCHANGED)
        before = self.before.text
        if before and after.text == before + value:
            return Verdict(
                False,
                "the value was added to the text that was there instead of replacing it",
                True,
            )
        return Verdict(False, NOT_REPLACED)


_ELSEWHERE = (
    "the text is in the field, but not as typing it at the caret (or at the end of a field "
    "that did not have the focus) would leave it: the app may have moved the caret, or "
    "completed or reformatted the text"
)
_NOT_AS_TYPED = (
    "the field's text changed, but the text is not in it as typed (the field may have "
    "changed or refused some characters, or the keys went elsewhere)"
)


def _typed(before: FieldText, old: str, text: str) -> set[str]:
    """What the field may read after ``text`` went in: at the caret of a focused field (over
    its selection, as keys replace it; beside it, as InsertText leaves it), else at its end
    (where InsertText puts it, and where the keys go after ctrl+End)."""
    out: set[str] = set()
    if before.selection is not None:  # typing replaces it (the focus step keeps it)
        start, end = before.selection
        out.add(old[:start] + text + old[end:])
    if not (before.focused and 0 <= before.caret <= len(old)):
        return out | {old + text}
    c = before.caret
    out.add(old[:c] + text + old[c:])
    return out


def _same(a: FieldText, b: FieldText) -> bool:
    return a.count == b.count and a.text == b.text and a.before_caret == b.before_caret
