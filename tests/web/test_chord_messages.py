"""The settings page words every kill-switch refusal the store would make, in both languages:
each rule of deskpilot.protocol.chords has its own message (a bare key is not "unknown key")."""

from __future__ import annotations

import pytest

from deskpilot.oversight.i18n import TABLE, translate
from deskpilot.oversight.settings_form import chord_refusal
from deskpilot.protocol.chords import chord_check

CASES = {
    "a": ("bare_key", "alone cannot be the kill switch"),
    "Escape": ("bare_key", "alone cannot be the kill switch"),
    "shift+a": ("shift_printable", "types a character"),
    "ctrl+ctrl+x": ("repeated_modifier", "given twice"),
    "ctrl+shift": ("no_key", "no key after the modifiers"),
    "ctrl+a+b": ("two_keys", "exactly one key"),
    "hyper+x": ("unknown_modifier", "Unknown modifier"),
    "ctrl+shift+F13": ("unknown_key", "Unknown key"),
    "ctrl++x": ("shape", "joined by"),
}


@pytest.mark.parametrize("chord", sorted(CASES))
def test_each_refusal_has_its_own_words(chord: str) -> None:
    code, words = CASES[chord]
    problem = chord_check(chord)
    assert problem is not None and problem.code == code
    shown = chord_refusal(chord)
    assert shown is not None and shown.key == f"settings.error.chord_{code}"
    assert shown.key in TABLE
    assert words in translate(shown.key, "en", **shown.fields)
    zh = translate(shown.key, "zh", **shown.fields)
    assert zh and zh != shown.key


def test_good_chords_pass_and_f13_is_refused_before_it_could_fail_to_arm() -> None:
    assert chord_refusal(" ctrl + alt + k ") is None
    assert chord_refusal("ctrl+shift+Escape") is None
    assert chord_refusal("ctrl+alt+F12") is None
    assert chord_refusal("ctrl+alt+F13") is not None
