"""The one message table of the dashboard, English and Chinese side by side.

Each page keeps its own messages in a module of this package (``common``, ``live``,
``sessions``, …) as ``MESSAGES: dict[key, (english, chinese)]`` so the people working on one
page do not edit another's lines; :data:`TABLE` merges them once at import and refuses a key
defined twice. A key missing from the table renders as the key itself, and a test fails when
any key lacks either language (tests/web/test_i18n.py).

Locale choice: an explicit choice (the ``dp_lang`` cookie set by the switch) wins; otherwise
the browser's ``Accept-Language`` decides by its q-ordered list; otherwise English.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

LOCALES: tuple[str, ...] = ("en", "zh")
DEFAULT_LOCALE = "en"

#: the page modules whose MESSAGES make up the table; add a module here to add a page
PAGE_MODULES: tuple[str, ...] = (
    "common",
    "live",
    "readiness",
    "sessions",
    "confirmations",
    "settings",
    "errors",
)


def _merge() -> dict[str, tuple[str, str]]:
    table: dict[str, tuple[str, str]] = {}
    for name in PAGE_MODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        messages: Mapping[str, tuple[str, str]] = module.MESSAGES
        for key, pair in messages.items():
            if key in table:
                raise RuntimeError(f"i18n key {key!r} is defined twice ({name})")
            table[key] = pair
    return table


TABLE: dict[str, tuple[str, str]] = _merge()


def translate(key: str, locale: str, **values: object) -> str:
    """The message for ``key`` in ``locale`` with ``{name}`` fields filled in."""
    pair = TABLE.get(key)
    if pair is None:
        return key
    text = pair[1] if locale == "zh" else pair[0]
    return text.format(**values) if values else text


def pick_locale(cookie: str | None, accept_language: str | None) -> str:
    """``zh`` or ``en``: the switch's cookie first, then the browser's preference order."""
    if cookie in LOCALES:
        return str(cookie)
    ranked: list[tuple[float, int, str]] = []
    for index, part in enumerate((accept_language or "").split(",")):
        tag, _, params = part.strip().partition(";")
        tag = tag.strip().lower()
        if not tag:
            continue
        q = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        ranked.append((-q, index, tag))
    for neg_q, _, tag in sorted(ranked):
        if neg_q >= 0:
            continue  # q=0 means "not this one"
        primary = tag.split("-")[0]
        if primary in LOCALES:
            return primary
    return DEFAULT_LOCALE
