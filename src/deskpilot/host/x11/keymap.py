"""Key names and characters → keysyms → keycodes, for any text on any layout.

A character the current layout produces at level 1 or 2 (plain or with Shift) is typed with
its own keycode. Anything else — "é" on a US layout, "✓", CJK — gets a spare keycode (one with
no symbols) remapped to its keysym with ``ChangeKeyboardMapping``.

MappingNotify carries no symbols: a client re-reads the mapping when it *processes* the
notify and decodes later keys with what it read. Chromium reads its X events well behind the
server (~2–4 ms a key on a loaded machine) and translates text through GTK's keymap on a
second connection, so a keycode remapped while its earlier keys are still queued is decoded
with the newer symbol ("Привет" → "Пршпет"), and a key sent right after a remap can be decoded
with the older one. Hence two barriers (``XInput`` passes a ``_NET_WM_PING`` round trip through
the focused app; without one, a pause stands in): the remaps for the next pool-full of missing
characters are made together, *before* that a barrier if any reused keycode's earlier keys may
be unread, *after* it one so the app takes in the new mapping before the first key that needs
it. Text the layout covers never waits. Spare keycodes are reused least-recently-used and
restored to NoSymbol when the host exits.
"""

from __future__ import annotations

import contextlib
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
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

# With no way to ask the app, a reused keycode waits after its last key event for a base time
# plus a share per key sent since the last barrier: an app's backlog grows with the keys it has
# not read yet (Chromium on a loaded 2-core machine reads ~4 ms per key). Best effort only:
# the _NET_WM_PING barrier is what typing relies on.
REUSE_PAUSE_S = 0.3
REUSE_PAUSE_PER_KEY_S = 0.01
# ... and after remapping, before the first key that needs the new mapping.
SETTLE_PAUSE_S = 0.05

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


def modifier_keysym(name: str) -> int:
    """The keysym of a modifier named as a chord names it ("ctrl", "shift", "alt", "super")."""
    found = MODIFIER_KEYSYMS.get(name.lower())
    if found is None:
        raise DeskpilotError(
            ErrorCode.INVALID_REQUEST, "not a modifier key", details={"modifier": name[:20]}
        )
    return int(XK.string_to_keysym(found))


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

    def __init__(self, conn: XConnection, barrier: Callable[[], bool] | None = None) -> None:
        self.conn = conn
        # returns True once the target app has read every event sent so far (or raises);
        # False when the app cannot be asked, and then a pause stands in (pause_barrier)
        self.barrier = barrier
        info = conn.display.display.info
        self.min_keycode = int(info.min_keycode)
        self.max_keycode = int(info.max_keycode)
        self._rows: list[list[int]] = []
        self._layout: dict[int, tuple[int, bool]] = {}  # keysym → (keycode, Shift), layout only
        self._spare: list[int] = []
        self._remapped: OrderedDict[int, int] = OrderedDict()  # keysym -> keycode, LRU
        self._touched: set[int] = set()
        # remapped keycodes sent since the last barrier → when: the app may not have read them
        self._unconfirmed: dict[int, float] = {}
        self._keys_since_barrier = 0
        self.barriers = 0  # barriers before reusing a keycode (figures and tests)
        self.settles = 0  # barriers after remapping, before the first key that needs it
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
        spare = set(self._spare)
        self._layout = {}
        for level in (1, 0):  # level 1 (plain) wins over Shift, the first keycode over later
            for i in range(len(self._rows) - 1, -1, -1):
                row = self._rows[i]
                if len(row) > level and row[level] and self.min_keycode + i not in spare:
                    self._layout[row[level]] = (self.min_keycode + i, level == 1)

    def find(self, keysym: int) -> tuple[int, bool] | None:
        """(keycode, needs Shift) from levels 1–2 of the layout (not the host's remaps)."""
        return self._layout.get(keysym)

    def lookup(self, keysym: int) -> tuple[int, bool] | None:
        """A keycode that types ``keysym`` right now, without remapping; None if there is none.

        Counts as a use: the caller sends the key next.
        """
        self._keys_since_barrier += 1
        found = self._remapped.get(keysym)
        if found is not None:
            self._remapped.move_to_end(keysym)
            self._unconfirmed[found] = time.monotonic()
            return found, False
        return self._layout.get(keysym)

    def keycode_for(self, keysym: int) -> tuple[int, bool]:
        """A keycode that types ``keysym`` (remapping a spare one when the layout lacks it)."""
        found = self.lookup(keysym)
        if found is None:
            self.prepare([keysym])
            found = self.lookup(keysym)
            assert found is not None
        return found

    def prepare(self, upcoming: Sequence[int]) -> None:
        """Map the next distinct keysyms of ``upcoming`` the layout lacks, a pool-full at once.

        Keysyms already mapped for this stretch of text keep their keycodes; the others are
        taken from free spare keycodes first, then least-recently-used ones. Reusing a keycode
        whose key events the app may not have read yet waits for a barrier first; after the
        remaps, one more barrier lets the app take in the new mapping on every connection it
        decodes keys with (Chromium translates through GTK's keymap on a second connection)
        before the first key that needs it.
        """
        pool = len(self._spare)
        if not pool:
            raise DeskpilotError(
                ErrorCode.UNSUPPORTED_ACTION,
                "no spare keycode to map a character the keyboard layout lacks",
            )
        keep: set[int] = set()
        needed: list[int] = []
        for ks in upcoming:
            if ks in keep or ks in self._layout:
                continue
            if len(keep) >= pool:
                break
            keep.add(ks)
            if ks not in self._remapped:
                needed.append(ks)
        if not needed:
            return
        in_use = set(self._remapped.values())
        free = [c for c in self._spare if c not in in_use]
        for ks in needed:
            if free:
                code = free.pop(0)
            else:
                victim = next(k for k in self._remapped if k not in keep)
                code = self._remapped.pop(victim)
                if code in self._unconfirmed:
                    # the app may still hold unread key events that mean the old symbol
                    self._wait_consumed()
            self.conn.display.change_keyboard_mapping(code, [(ks, ks)])
            self._rows[code - self.min_keycode] = [ks, ks]
            self._remapped[ks] = code
            self._touched.add(code)
        self.conn.sync()
        self._settle()

    def _wait_consumed(self) -> None:
        """Return once every key event sent so far has been read by the app it went to."""
        newest = max(self._unconfirmed.values())
        if self.barrier is None or not self.barrier():
            self.pause_barrier(newest)
        self.barriers += 1
        self._unconfirmed.clear()
        self._keys_since_barrier = 0

    def _settle(self) -> None:
        """Return once the app has taken in the mappings just changed."""
        if self.barrier is None or not self.barrier():
            time.sleep(SETTLE_PAUSE_S)
        self.settles += 1

    def pause_barrier(self, newest: float) -> None:
        """The barrier when the app cannot be asked: let the server deliver, then wait."""
        self.conn.sync()
        wait = REUSE_PAUSE_S + REUSE_PAUSE_PER_KEY_S * self._keys_since_barrier
        rest = wait - (time.monotonic() - newest)
        if rest > 0:
            time.sleep(rest)

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
        self._unconfirmed.clear()
        with contextlib.suppress(Exception):
            self.conn.sync()
