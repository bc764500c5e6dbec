"""Word lists and patterns that turn UI facts and text into policy signals.

Each list is deliberately short and English-first: it names the common controls of GTK, Qt and
web apps. A miss lowers a rating to the action's baseline, it never allows something the
contract forbids; the contract and the confirmation setting are the enforcement, these
signals are what make L3/L4 reachable from real screens.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Final

from deskpilot.protocol.chords import KILL_SWITCH_MODIFIERS

# -- roles (normalised keys, see tree.role_key)
PASSWORD_ROLES = frozenset(
    {"passwordtext", "password", "passwordfield", "passwordentry", "securetextfield", "secure"}
)
SECURE_STATES = frozenset({"secure", "password", "protected", "concealed", "sensitive"})
TEXT_ROLES = (
    frozenset(
        {
            "text",
            "entry",
            "textfield",
            "textarea",
            "textbox",
            "textinput",
            "searchfield",
            "searchbox",
            "editabletext",
            "spinbutton",
            "combobox",
            "terminal",
        }
    )
    | PASSWORD_ROLES
)
CONTROL_ROLES = frozenset(
    {
        "button",
        "pushbutton",
        "togglebutton",
        "menuitem",
        "link",
        "checkbox",
        "checkmenuitem",
        "radiobutton",
        "radiomenuitem",
        "listitem",
        "tab",
        "pagetab",
        "menubutton",
        "treeitem",
    }
)
DIALOG_ROLES = frozenset(
    {"dialog", "alert", "alertdialog", "filechooser", "messagebox", "messagedialog"}
)
DOCUMENT_ROLES = frozenset({"documentweb", "webarea", "webview", "document", "documentframe"})
FORM_ROLES = frozenset({"form"})

# -- control names
DESTRUCTIVE_WORDS = re.compile(
    r"\b(delete|remove|erase|format|wipe|discard|destroy|uninstall|purge|reset|overwrite|"
    r"replace|shred|truncate|revoke|terminate|empty trash|move to trash|don'?t save|"
    r"close without saving|clear all|drop)\b",
    re.IGNORECASE,
)
#: destructive even outside a confirmation dialog: there is no second step after these
IRREVERSIBLE_WORDS = re.compile(
    r"\b(permanently|erase|format|wipe|shred|factory reset|empty trash|purge|destroy)\b",
    re.IGNORECASE,
)
EXTERNAL_WORDS = re.compile(
    r"\b(send|submit|post|publish|pay|purchase|buy|order|checkout|check out|place order|"
    r"transfer|share|upload|reply|reply all|forward|tweet|comment|sign up|register|subscribe|"
    r"donate|book now|confirm payment|deploy|merge|push|invite|sign and send)\b",
    re.IGNORECASE,
)
#: AT-SPI action names that do not activate a control (they move focus, open, or select)
NON_ACTIVATING_ACTIONS = frozenset(
    {"focus", "grabfocus", "expand", "collapse", "expandorcontract", "showmenu", "select"}
)

# -- field names that tell what data a field holds
FIELD_CLASSES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "credential",
        re.compile(
            r"\b(password|passphrase|passcode|pin|otp|one[- ]time code|2fa|secret|api key|"
            r"token|private key)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "financial",
        re.compile(
            r"\b(card number|credit card|debit card|cvv|cvc|security code|iban|bic|swift|"
            r"account number|routing number|sort code|expiry|expiration)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "health",
        re.compile(
            r"\b(diagnosis|medical|medication|allerg(y|ies)|health insurance|patient|symptoms?)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "personal",
        re.compile(
            r"\b(e-?mail|phone|mobile|address|street|postcode|zip|date of birth|birthday|"
            r"first name|last name|full name|surname|passport|social security|ssn|national id)\b",
            re.IGNORECASE,
        ),
    ),
)

# -- text that looks like a secret
_SECRET_PATTERNS = (
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{40,}\b"),
    re.compile(r"\bsk-[A-Za-z0-9_-]{20,}\b"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b"),
    re.compile(r"\b(password|passwd|pwd|secret|api[_-]?key|token)\s*[:=]\s*\S{6,}", re.I),
)
_TOKEN = re.compile(r"[A-Za-z0-9_\-+/=.]{24,}")
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+\.[\w.-]+\b")
_PHONE = re.compile(r"(?<![\w.])\+?\d[\d ()-]{7,}\d(?![\w.])")
_CARD = re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")


def _entropy(token: str) -> float:
    counts = Counter(token)
    n = len(token)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def looks_like_secret(text: str) -> bool:
    if any(p.search(text) for p in _SECRET_PATTERNS):
        return True
    for token in _TOKEN.findall(text):
        classes = sum(
            (
                any(c.islower() for c in token),
                any(c.isupper() for c in token),
                any(c.isdigit() for c in token),
            )
        )
        if classes >= 3 and _entropy(token) >= 4.0:
            return True
    return False


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _iban_ok(candidate: str) -> bool:
    s = candidate.replace(" ", "")
    rearranged = s[4:] + s[:4]
    try:
        number = int("".join(str(int(ch, 36)) for ch in rearranged))
    except ValueError:
        return False
    return number % 97 == 1


def text_data_classes(text: str) -> set[str]:
    """Data classes the text itself reveals (never logged; only the class names leave)."""
    out: set[str] = set()
    if looks_like_secret(text):
        out.add("credential")
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group(0))
        if 13 <= len(digits) <= 19 and _luhn(digits):
            out.add("financial")
            break
    if any(_iban_ok(m.group(0)) for m in _IBAN.finditer(text)):
        out.add("financial")
    if _EMAIL.search(text) or _PHONE.search(text):
        out.add("personal")
    return out


def field_data_classes(label: str) -> set[str]:
    return {cls for cls, pattern in FIELD_CLASSES if pattern.search(label)}


# -- keys
ENTER_KEYS = frozenset({"return", "enter", "kpenter"})
ESCAPE_KEYS = frozenset({"escape", "esc"})
MODIFIERS = frozenset(
    {"ctrl", "control", "shift", "alt", "super", "meta", "mod1", "mod4", "cmd", "win", "hyper"}
)


def chord_parts(chord: str) -> tuple[frozenset[str], str]:
    """``"ctrl+Shift+Escape"`` → ({"ctrl", "shift"}, "escape"); a lone "+" is the plus key."""
    parts = [p for p in chord.split("+") if p] if chord != "+" else ["+"]
    if chord.endswith("++"):
        parts.append("+")
    mods = {_canon_mod(p) for p in parts[:-1]}
    key = "".join(ch for ch in parts[-1].lower() if ch.isalnum()) or parts[-1]
    return frozenset(mods), key


#: keys that move, confirm or erase rather than put a character into a field
NON_TEXT_KEYS: Final = frozenset(
    {
        "tab", "return", "enter", "kpenter", "isoenter", "escape", "esc", "backspace",
        "delete", "del", "insert", "left", "right", "up", "down", "home", "end", "pageup",
        "pagedown", "prior", "next", "menu", "shift", "shiftl", "shiftr", "ctrl", "control",
        "controll", "controlr", "alt", "altl", "altr", "super", "superl", "superr", "capslock",
        "numlock", "scrolllock", "print", "pause", "break",
        *(f"f{n}" for n in range(1, 36)),
    }
)  # fmt: skip


def writes_text(chord: str) -> bool:
    """Whether a key chord puts text into the focused field: a printable key without
    ctrl/alt/super, or a paste shortcut (ctrl+v, ctrl+shift+v, shift+insert)."""
    mods, key = chord_parts(chord)
    if key == "v" and "ctrl" in mods and not mods & {"alt", "super"}:
        return True
    if key == "insert" and mods == {"shift"}:
        return True
    if mods & {"ctrl", "alt", "super"}:
        return False
    return key not in NON_TEXT_KEYS


def _canon_mod(name: str) -> str:
    """One modifier spelling table for policy chords and the kill switch."""
    n = name.strip().lower()
    return KILL_SWITCH_MODIFIERS.get(n, n)


def role_key_like(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())
