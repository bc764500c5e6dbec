"""Is the typed text in the field? The comparisons behind a text action's ``effect``
(host/text_checks.py), on field readings as the host takes them (the real apps:
test_atspi_firefox.py, test_atspi_gtk.py)."""

from __future__ import annotations

from deskpilot.host.atspi.model import ElementRef, FieldText, NodeRef
from deskpilot.host.text_checks import GONE, UNCHANGED, CheckKind, TextCheck


def _field(secure: bool = False) -> ElementRef:
    return ElementRef(
        id=3,
        ref=NodeRef(":1.5", "/f"),
        pid=1,
        role="passwordField" if secure else "textField",
        atspi_role=0,
        name="Name",
        states=frozenset({"editable"}),
        interfaces=frozenset({"Text", "EditableText"}),
        actions=(),
        extents=None,
        secure=secure,
    )


def _text(
    text: str, *, caret: int = -1, focused: bool = False, sel: tuple[int, int] | None = None
) -> FieldText:
    return FieldText(len(text), caret, text, focused=focused, selection=sel)


def check(kind: CheckKind, typed: str, before: FieldText, secure: bool = False) -> TextCheck:
    return TextCheck(_field(secure), kind, typed, before)


def test_typing_into_a_field_without_the_focus_lands_at_its_end() -> None:
    c = check("insert", "X", _text("Paris"))
    assert c.verdict(_text("ParisX")).confirmed
    # in it, but before the old text (the caret went to the start): not what was asked
    wrong = c.verdict(_text("XParis"))
    assert not wrong.confirmed and "not as typing it at the caret" in (wrong.note or "")
    assert c.verdict(_text("Paris")).note == UNCHANGED
    assert c.verdict(None).note == GONE


def test_typing_at_the_caret_and_over_a_selection() -> None:
    at_caret = check("insert", "ee", _text("grn", caret=2, focused=True))
    assert at_caret.verdict(_text("green")).confirmed
    over = check("insert", "blue", _text("a red car", caret=5, focused=True, sel=(2, 5)))
    assert over.verdict(_text("a blue car")).confirmed
    assert over.verdict(_text("a redblue car")).confirmed  # InsertText leaves the selection


def test_typed_twice_or_changed_is_never_confirmed() -> None:
    c = check("insert", "ab", _text(""))
    twice = c.verdict(_text("abab"))
    assert not twice.confirmed and twice.final
    changed = c.verdict(_text("AB"))  # a field that changes what is typed
    assert not changed.confirmed and not changed.final
    assert "ab" not in (twice.note or "") + (changed.note or "")  # never the typed text


def test_set_value_replaces_or_says_it_did_not() -> None:
    c = check("replace", "Rome", _text("Paris"))
    assert c.verdict(_text("Rome")).confirmed
    appended = c.verdict(_text("ParisRome"))
    assert not appended.confirmed and appended.final
    assert appended.note == (
        "the value was added to the text that was there instead of replacing it"
    )
    assert c.verdict(_text("Paris")).note == UNCHANGED
    assert check("replace", "", _text("old")).verdict(_text("")).confirmed


def test_secure_fields_are_checked_by_their_length_only() -> None:
    before = FieldText(4, 4, None, focused=True)
    c = check("insert", "pass", before, secure=True)
    assert c.verdict(FieldText(8, 8, None)).confirmed
    short = c.verdict(FieldText(6, 6, None))
    assert not short.confirmed and "6" not in (short.note or "") and "8" not in (short.note or "")
    assert check("replace", "pw", before, secure=True).verdict(FieldText(2, 2, None)).confirmed


def test_long_fields_are_checked_before_the_caret() -> None:
    before = FieldText(50_000, 100, None, before_caret="end of")
    c = check("insert", " it", before)
    assert c.verdict(FieldText(50_003, 103, None, before_caret=" it")).confirmed
    assert not c.verdict(FieldText(50_003, 3, None, before_caret="xyz")).confirmed
