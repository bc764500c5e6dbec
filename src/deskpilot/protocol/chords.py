"""Which kill-switch chords can ever be grabbed, shared by the settings store and the kernel.

The store validates the ``killSwitch`` setting when it is written and the kernel grabs it on
the X display; both read the spellings below so a chord the store accepts is one the kernel can
arm (a store that took any text would leave a kill switch that silently never arms). The
parse mirrors
``kernel.policy.signals.chord_parts``: modifiers and one key joined by ``+``, case-insensitive,
the key reduced to its letters and digits. The key names are the X keysyms python-xlib knows
whose name is already in that reduced form, plus the aliases and F1–F35; ``tests/protocol``
checks both tables against python-xlib and the kernel.
"""

from __future__ import annotations

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

FUNCTION_KEYS: Final = 35

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


def chord_problem(chord: str) -> str | None:
    """Why the kill switch could never arm ``chord`` (None: it can, "" included = disarmed)."""
    chord = chord.strip()
    if not chord:
        return None
    parts = chord.split("+")
    if any(not p.strip() for p in parts):
        return "a chord is modifiers and one key joined by '+', e.g. ctrl+shift+Escape"
    for mod in parts[:-1]:
        if mod.strip().lower() not in KILL_SWITCH_MODIFIERS:
            names = ", ".join(sorted(KILL_SWITCH_MODIFIERS))
            return f"unknown modifier {mod.strip()!r} (known: {names})"
    last = parts[-1]
    key = "".join(ch for ch in last.lower() if ch.isalnum()) or last
    if not _key_ok(key):
        return (
            f"unknown key {last.strip()!r}: use a letter, digit, F1-F35, "
            f"{', '.join(sorted(KEY_ALIASES))} or an X Latin-1 keysym name such as 'slash'"
        )
    return None
