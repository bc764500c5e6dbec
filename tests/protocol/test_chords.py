"""The store's kill-switch chord table agrees with what the kernel can grab.

``protocol.chords`` is what ``deskpilot settings set killSwitch`` validates against; the kernel
grabs with its own modifier masks and python-xlib's keysym table. If these drift apart a chord
is stored that never arms (or a good one is refused), so the tables are compared here.
"""

from __future__ import annotations

import pytest
from Xlib import XK
from Xlib.keysymdef import latin1, miscellany

from deskpilot.kernel.killswitch import MODIFIER_MASKS, _keysym_name
from deskpilot.kernel.policy.signals import _canon_mod, chord_parts
from deskpilot.protocol.chords import (
    FUNCTION_KEYS,
    KEY_ALIASES,
    KILL_SWITCH_MODIFIERS,
    PLAIN_KEYSYMS,
    chord_problem,
)


def test_every_modifier_spelling_reaches_a_mask_the_kernel_grabs() -> None:
    assert set(KILL_SWITCH_MODIFIERS.values()) == set(MODIFIER_MASKS)
    for spelling, canonical in KILL_SWITCH_MODIFIERS.items():
        assert _canon_mod(spelling) == canonical


def test_plain_key_names_are_exactly_xlibs_reduced_keysyms() -> None:
    # the groups XK loads by default (others, loaded on demand by other code, would make the
    # comparison depend on test order)
    names = [n[3:] for m in (latin1, miscellany) for n in dir(m) if n.startswith("XK_")]
    reduced = {n for n in names if n == "".join(c for c in n.lower() if c.isalnum())}
    assert reduced == PLAIN_KEYSYMS


@pytest.mark.parametrize(
    "key", [*KEY_ALIASES, *sorted(PLAIN_KEYSYMS), *(f"F{n}" for n in range(1, FUNCTION_KEYS + 1))]
)
def test_every_accepted_key_has_a_keysym(key: str) -> None:
    chord = f"ctrl+{key}"
    assert chord_problem(chord) is None
    _, reduced = chord_parts(chord)
    assert XK.string_to_keysym(_keysym_name(reduced)) != 0


@pytest.mark.parametrize(
    "chord", ["hyper+q", "ctrl+shift+nonsense", "ctrl+PageUp", "ctrl+F36", "ctrl+F0", "ctrl++"]
)
def test_refused_chords_are_ones_the_kernel_could_not_grab(chord: str) -> None:
    assert chord_problem(chord)
    mods, key = chord_parts(chord)
    grabbable = all(m in MODIFIER_MASKS for m in mods) and (
        XK.string_to_keysym(_keysym_name(key)) != 0
    )
    assert not grabbable


def test_an_empty_chord_disarms_and_is_allowed() -> None:
    assert chord_problem("") is None
    assert chord_problem("  ") is None


@pytest.mark.parametrize(
    ("chord", "words"),
    [
        ("a", "needs at least one modifier"),
        ("Escape", "needs at least one modifier"),
        ("ctrl+ctrl+x", "ctrl is given twice"),
        ("control+ctrl+x", "ctrl is given twice"),
        ("ctrl+shift", "no key after the modifiers"),
        ("ctrl+a+b", "exactly one key"),
        ("shift+a", "types a character"),
        ("shift+slash", "types a character"),
    ],
)
def test_chords_that_would_take_keys_from_the_person_are_refused(chord: str, words: str) -> None:
    # a bare "a" armed as the kill switch swallowed every "a" the person typed and halted
    # everything (issue 16's trial)
    problem = chord_problem(chord)
    assert problem is not None and words in problem
    assert "Unknown key" not in problem


@pytest.mark.parametrize(
    ("chord", "stored"),
    [
        ("ctrl+shift+Escape", "ctrl+shift+Escape"),
        (" ctrl + alt + Delete ", "ctrl+alt+Delete"),
        ("Control+Shift+Escape", "ctrl+shift+Escape"),
        ("shift+ctrl+esc", "ctrl+shift+Escape"),
        ("meta+slash", "alt+slash"),
        ("super+f12", "super+F12"),
        ("shift+F5", "shift+F5"),
        ("", ""),
    ],
)
def test_the_settings_store_keeps_one_spelling_of_a_chord(chord: str, stored: str) -> None:
    from deskpilot.protocol.chords import normalise_chord
    from deskpilot.store.settings import SettingsModel

    assert normalise_chord(chord) == stored
    assert SettingsModel(killSwitch=chord).kill_switch == stored
    assert SettingsModel().kill_switch == "ctrl+shift+Escape"


def test_the_settings_store_refuses_a_bare_key() -> None:
    from pydantic import ValidationError

    from deskpilot.store.settings import SettingsModel

    with pytest.raises(ValidationError, match="at least one modifier"):
        SettingsModel(killSwitch="a")
