"""Key names and characters → keysyms → keycodes, for any text on any layout.

A character the current layout produces at level 1 or 2 (plain or with Shift) is typed with
its own keycode. Anything else — "é" on a US layout, "✓", CJK — gets a spare keycode (one with
no symbols) remapped to its keysym with ``ChangeKeyboardMapping``; the X server sends
MappingNotify to every client before the key events that follow, so the target translates
the key with the new mapping. Spare keycodes are reused least-recently-used and restored to
NoSymbol when the host exits.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from dataclasses import dataclass

from Xlib import XK

from deskpilot.host.x11.connection import XConnection
from deskpilot.protocol.errors import DeskpilotError, ErrorCode

for _group in (
    "xkb",
    "xf86",
    "publishing",
    "latin2",
    "latin3",
    "latin4",
    "greek",
    "cyrillic",
    "technical",
):
    with contextlib.suppress(ImportError, ValueError):  # a group python-xlib lacks
        XK.load_keysym_group(_group)

NO_SYMBOL = 0

MODIFIER_KEYSYMS: dict[str, str] = {
    "ctrl": "Control_L",
    "control": "Control_L",
    "shift": "Shift_L",
    "alt": "Alt_L",
    "meta": "Super_L",
    "super": "Super_L",
    "win": "Super_L",
    "cmd": "Super_L",
    "altgr": "ISO_Level3_Shift",
}

KEY_ALIASES: dict[str, str] = {
    "enter": "Return",
    "return": "Return",
    "esc": "Escape",
    "escape": "Escape",
    "tab": "Tab",
    "space": "space",
    "spacebar": "space",
    "backspace": "BackSpace",
    "delete": "Delete",
    "del": "Delete",
    "insert": "Insert",
    "ins": "Insert",
    "home": "Home",
    "end": "End",
    "pageup": "Prior",
    "page_up": "Prior",
    "pgup": "Prior",
    "pagedown": "Next",
    "page_down": "Next",
    "pgdn": "Next",
    "up": "Up",
    "down": "Down",
    "left": "Left",
    "right": "Right",
    "arrowup": "Up",
    "arrowdown": "Down",
    "arrowleft": "Left",
    "arrowright": "Right",
    "menu": "Menu",
    "capslock": "Caps_Lock",
    "printscreen": "Print",
    "plus": "plus",
    "minus": "minus",
}

_LOWER_NAMES: dict[str, int] = {
    name[3:].lower(): int(getattr(XK, name)) for name in dir(XK) if name.startswith("XK_")
}

_CONTROL_KEYSYMS = {"\n": XK.XK_Return, "\r": XK.XK_Return, "\t": XK.XK_Tab}


def keysym_for_char(ch: str) -> int | None:
    """The keysym that types ``ch``; None for control characters that type nothing."""
    if ch in _CONTROL_KEYSYMS:
        return int(_CONTROL_KEYSYMS[ch])
    cp = ord(ch)
    if cp < 0x20 or cp == 0x7F or 0x80 <= cp < 0xA0:
        return None
    if cp < 0x100:
        return cp  # Latin-1 keysyms equal their code point
    return 0x01000000 | cp  # the Unicode keysym range


def keysym_for_name(name: str) -> int:
    """A key name as people write it ("Return", "enter", "F5", "a", "ä") → keysym."""
    if not name:
        raise DeskpilotError(ErrorCode.INVALID_REQUEST, "empty key name")
    alias = KEY_ALIASES.get(name.lower())
    if alias is not None:
        return int(XK.string_to_keysym(alias))
    if len(name) == 1:
        ks = keysym_for_char(name)
        if ks is not None:
            return ks
    exact = int(XK.string_to_keysym(name))
    if exact:
        return exact
    if name.startswith("XF86") and not name.startswith("XF86_"):
        xf86 = int(XK.string_to_keysym("XF86_" + name[4:]))
        if xf86:
            return xf86
    lowered = _LOWER_NAMES.get(name.lower())
    if lowered:
        return lowered
    raise DeskpilotError(ErrorCode.INVALID_REQUEST, "unknown key name", details={"key": name[:40]})


@dataclass(frozen=True, slots=True)
class Chord:
    """Modifier keysyms held while ``key`` is pressed, in press order."""

    modifiers: tuple[int, ...]
    key: int


def parse_chord(text: str) -> Chord:
    """ "ctrl+shift+s", "Return", "shift+Tab", "ctrl++" → a Chord; bad names are typed errors."""
    raw = text.strip()
    if not raw or len(raw) > 100:
        raise DeskpilotError(ErrorCode.INVALID_REQUEST, "a key chord must be 1–100 characters")
    if raw == "+":
        parts = ["+"]
    elif raw.endswith("++"):
        parts = [*raw[:-2].split("+"), "+"]
    else:
        parts = raw.split("+")
    if any(not p.strip() for p in parts):
        raise DeskpilotError(
            ErrorCode.INVALID_REQUEST, "malformed key chord", details={"chord": raw[:40]}
        )
    mods: list[int] = []
    for part in (p.strip() for p in parts[:-1]):
        mod = MODIFIER_KEYSYMS.get(part.lower())
        if mod is None:
            raise DeskpilotError(
                ErrorCode.INVALID_REQUEST,
                "only the last part of a chord may be a non-modifier key",
                details={"chord": raw[:40]},
            )
        mods.append(int(XK.string_to_keysym(mod)))
    last = parts[-1].strip()
    last_mod = MODIFIER_KEYSYMS.get(last.lower())
    if last_mod is not None:
        key = int(XK.string_to_keysym(last_mod))
    else:
        if mods and len(last) == 1 and last.isalpha():
            last = last.lower()  # "ctrl+S" means the S key, not ctrl+shift+s
        key = keysym_for_name(last)
    return Chord(tuple(mods), key)


class Keymap:
    """The server's current core keyboard mapping plus the spare keycodes the host may use."""

    def __init__(self, conn: XConnection) -> None:
        self.conn = conn
        info = conn.display.display.info
        self.min_keycode = int(info.min_keycode)
        self.max_keycode = int(info.max_keycode)
        self._rows: list[list[int]] = []
        self._spare: list[int] = []
        self._remapped: OrderedDict[int, int] = OrderedDict()  # keysym -> keycode, LRU
        self._touched: set[int] = set()
        self.refresh()

    def refresh(self) -> None:
        """Re-read the mapping (another client may have changed it since the last action)."""
        count = self.max_keycode - self.min_keycode + 1
        rows = self.conn.display.get_keyboard_mapping(self.min_keycode, count)
        self._rows = [[int(s) for s in row] for row in rows]
        remapped_codes = set(self._remapped.values())
        self._spare = [
            self.min_keycode + i
            for i, row in enumerate(self._rows)
            if self.min_keycode + i in remapped_codes or not any(row)
        ]
        # forget remaps another client overwrote
        for ks, code in list(self._remapped.items()):
            row = self._rows[code - self.min_keycode]
            if not row or row[0] != ks:
                del self._remapped[ks]

    def find(self, keysym: int) -> tuple[int, bool] | None:
        """(keycode, needs Shift) from levels 1–2 of the current mapping."""
        for level in (0, 1):
            for i, row in enumerate(self._rows):
                if len(row) > level and row[level] == keysym:
                    return self.min_keycode + i, level == 1
        return None

    def keycode_for(self, keysym: int) -> tuple[int, bool]:
        """A keycode that types ``keysym`` (remapping a spare one when the layout lacks it)."""
        found = self._remapped.get(keysym)
        if found is not None:
            self._remapped.move_to_end(keysym)
            return found, False
        existing = self.find(keysym)
        if existing is not None:
            return existing
        return self._remap(keysym), False

    def _remap(self, keysym: int) -> int:
        in_use = set(self._remapped.values())
        free = [c for c in self._spare if c not in in_use]
        if free:
            code = free[0]
        elif self._remapped:
            _, code = self._remapped.popitem(last=False)
        else:
            raise DeskpilotError(
                ErrorCode.UNSUPPORTED_ACTION,
                "no spare keycode to map a character the keyboard layout lacks",
            )
        self.conn.display.change_keyboard_mapping(code, [(keysym, keysym)])
        self.conn.sync()
        self._rows[code - self.min_keycode] = [keysym, keysym]
        self._remapped[keysym] = code
        self._touched.add(code)
        return code

    def touched_codes(self) -> list[int]:
        """Keycodes the host remapped (read by the exit guard on another thread)."""
        return list(self._touched)

    def restore(self) -> None:
        """Give the spare keycodes back (NoSymbol), as they were before the host touched them."""
        for code in sorted(self._touched):
            try:
                self.conn.display.change_keyboard_mapping(code, [(NO_SYMBOL, NO_SYMBOL)])
            except Exception:  # the server may be gone at exit
                return
        self._touched.clear()
        self._remapped.clear()
        with contextlib.suppress(Exception):
            self.conn.sync()
