"""Which kill-switch chords can ever be grabbed, shared by the settings store and the kernel.

The store validates the ``killSwitch`` setting when it is written and the kernel grabs it on
the X display; both read the spellings below so a chord the store accepts is one the kernel can
arm (a store that took any text would leave a kill switch that silently never arms). The
parse mirrors
``kernel.policy.signals.chord_parts``: modifiers and one key joined by ``+``, case-insensitive,
the key reduced to its letters and digits. The key names are the X keysyms python-xlib knows
whose name is already in that reduced form, plus the aliases and F1–F12; ``tests/protocol``
checks both tables against python-xlib and the kernel.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

#: modifier spelling (lower case) → the X modifier the kill switch grabs with
KILL_SWITCH_MODIFIERS: Final[dict[str, str]] = {
    "ctrl": "ctrl",
    "control": "ctrl",
    "commandorcontrol": "ctrl",
    "shift": "shift",
    "alt": "alt",
    "mod1": "alt",
    "meta": "alt",
    "super": "super",
    "mod4": "super",
    "cmd": "super",
    "win": "super",
}

#: our key spelling → the X keysym name
KEY_ALIASES: Final[dict[str, str]] = {
    "escape": "Escape",
    "esc": "Escape",
    "return": "Return",
    "enter": "Return",
    "space": "space",
    "tab": "Tab",
    "delete": "Delete",
    "backspace": "BackSpace",
    "pause": "Pause",
    "break": "Break",
    "home": "Home",
    "end": "End",
}

#: F1–F12 only: every PC keyboard map has them; F13 and above exist as keysyms but are
#: usually on no key, so a chord with one would be saved and never armed
FUNCTION_KEYS: Final = 12

#: X keysym names (Latin-1 and digits) that survive the key reduction unchanged
_PLAIN_KEYSYM_NAMES = """
    0 1 2 3 4 5 6 7 8 9 a b c d e f g h i j k l m n o p q r s t u v w x y z
    aacute acircumflex acute adiaeresis ae agrave ampersand apostrophe aring asciicircum
    asciitilde asterisk at atilde backslash bar braceleft braceright bracketleft bracketright
    brokenbar ccedilla cedilla cent colon comma copyright currency degree diaeresis division
    dollar eacute ecircumflex ediaeresis egrave equal eth exclam exclamdown grave greater
    guillemotleft guillemotright hyphen iacute icircumflex idiaeresis igrave less macron
    masculine minus mu multiply nobreakspace notsign ntilde numbersign oacute ocircumflex
    odiaeresis ograve onehalf onequarter onesuperior ordfeminine oslash otilde paragraph
    parenleft parenright percent period periodcentered plus plusminus question questiondown
    quotedbl quoteleft quoteright registered section semicolon slash space ssharp sterling
    thorn threequarters threesuperior twosuperior uacute ucircumflex udiaeresis ugrave
    underscore yacute ydiaeresis yen
"""
PLAIN_KEYSYMS: Final = frozenset(_PLAIN_KEYSYM_NAMES.split())


def keysym_name(key: str) -> str:
    """A reduced key spelling → the X keysym name the kernel looks up."""
    if key in KEY_ALIASES:
        return KEY_ALIASES[key]
    if len(key) > 1 and key[0] == "f" and key[1:].isdigit():
        return key.upper()
    return key


def _key_ok(key: str) -> bool:
    if key in KEY_ALIASES or key in PLAIN_KEYSYMS:
        return True
    if len(key) > 1 and key[0] == "f" and key[1:].isdigit():
        return 1 <= int(key[1:]) <= FUNCTION_KEYS and not key[1:].startswith("0")
    return False


#: the order modifiers are stored in (``ctrl+shift+Escape``, the default, is in it)
MODIFIER_ORDER: Final = ("ctrl", "alt", "shift", "super")

#: keys that put no character into a field: the only ones shift alone may modify
_NON_PRINTING_KEYS: Final = frozenset(
    {"Escape", "Return", "Tab", "Delete", "BackSpace", "Pause", "Break", "Home", "End"}
)

_SHAPE = "a chord is modifiers and one key joined by '+', e.g. ctrl+shift+Escape"


def _reduce(part: str) -> str:
    return "".join(ch for ch in part.lower() if ch.isalnum()) or part


@dataclass(frozen=True)
class ChordProblem:
    """Why a chord is refused: a stable ``code`` (for a page to say it in its own words, with
    ``fields``) and the English ``text`` the store and the CLI show."""

    code: str
    text: str
    fields: dict[str, str] = field(default_factory=dict)


def _parse(chord: str) -> tuple[ChordProblem | None, str]:
    """(why the chord is refused or None, its stored spelling)."""
    chord = chord.strip()
    if not chord:
        return None, ""
    parts = [p.strip() for p in chord.split("+")]
    if any(not p for p in parts):
        return ChordProblem("shape", _SHAPE), chord
    *mod_parts, last = parts
    # ``ctrl+shift``: every part is a modifier
    if all(p.lower() in KILL_SWITCH_MODIFIERS for p in parts):
        return ChordProblem("no_key", f"no key after the modifiers in {chord!r}: {_SHAPE}"), chord
    mods: list[str] = []
    for part in mod_parts:
        canonical = KILL_SWITCH_MODIFIERS.get(part.lower())
        if canonical is None:
            if _key_ok(_reduce(part)):
                text = (
                    f"a chord has exactly one key, after its modifiers: {part!r} is a key, "
                    f"not a modifier ({_SHAPE})"
                )
                return ChordProblem("two_keys", text, {"name": part}), chord
            names = ", ".join(sorted(KILL_SWITCH_MODIFIERS))
            text = f"unknown modifier {part!r} (known: {names})"
            return ChordProblem("unknown_modifier", text, {"name": part, "known": names}), chord
        if canonical in mods:
            text = f"the modifier {canonical} is given twice in {chord!r}"
            return ChordProblem("repeated_modifier", text, {"name": canonical}), chord
        mods.append(canonical)
    key = _reduce(last)
    if not _key_ok(key):
        text = (
            f"unknown key {last!r}: use a letter, digit, F1-F12, "
            f"{', '.join(sorted(KEY_ALIASES))} or an X Latin-1 keysym name such as 'slash'"
        )
        return ChordProblem("unknown_key", text, {"name": last}), chord
    name = keysym_name(key)
    if not mods:
        text = (
            f"{last!r} alone cannot be the kill switch: it needs at least one modifier "
            "(ctrl, alt, shift or super) before the key, or every press of that key would be "
            "taken from the person and halt computer use (e.g. ctrl+shift+Escape)"
        )
        return ChordProblem("bare_key", text, {"name": last}), chord
    if mods == ["shift"] and name not in _NON_PRINTING_KEYS and not name.startswith("F"):
        text = (
            f"shift+{name} types a character: as the kill switch it would take that character "
            "from the person every time they type it and halt computer use; add ctrl, alt or "
            "super (e.g. ctrl+shift+Escape)"
        )
        return ChordProblem("shift_printable", text, {"name": name}), chord
    ordered = [m for m in MODIFIER_ORDER if m in mods]
    return None, "+".join([*ordered, name])


def chord_problem(chord: str) -> str | None:
    """Why ``chord`` cannot be the kill switch (None: it can; "" = disarmed, allowed).

    A chord is at least one modifier (each once) and exactly one key that is not a modifier;
    shift alone does not make a key that types a character safe to grab (``shift+a`` would
    take every capital A from the person), nor does a bare key."""
    problem = _parse(chord)[0]
    return None if problem is None else problem.text


def chord_check(chord: str) -> ChordProblem | None:
    """:func:`chord_problem` with its code and fields, for a page that words it itself."""
    return _parse(chord)[0]


def normalise_chord(chord: str) -> str:
    """The stored spelling of an accepted chord: no spaces, modifiers in
    :data:`MODIFIER_ORDER` with their canonical names, the key as its X keysym name
    (``" Control + alt + delete "`` → ``"ctrl+alt+Delete"``); raises ValueError for a chord
    :func:`chord_problem` refuses."""
    problem, normal = _parse(chord)
    if problem:
        raise ValueError(problem.text)
    return normal
