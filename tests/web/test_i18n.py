"""The dashboard's message table: every key in English and Chinese with the same fields, every
key the templates and page modules use exists (a scan of their sources, so a missing key fails
CI instead of rendering as the bare key), and how the locale is chosen."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest

from deskpilot.oversight.i18n import LOCALES, PAGE_MODULES, TABLE, pick_locale, translate
from deskpilot.web.render import NAV

SRC = Path(__file__).resolve().parents[2] / "src" / "deskpilot"
TEMPLATES = SRC / "web" / "templates"
CJK = re.compile(r"[\u4e00-\u9fff]")

#: ``t('key'`` / ``t("key"`` in a template or module, ``translate('key'`` in a module; a key
#: built at run time (``t('errors.group.' ~ g)``) is not matched and is tested where it is built
_CALL = re.compile(r"""(?<![\w.])(?:t|translate)\(\s*(['"])([A-Za-z0-9_.]+)\1\s*[,)]""")


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def _used_keys() -> dict[str, set[str]]:
    """key -> the files using it, from every template and every dashboard module."""
    files = [*TEMPLATES.rglob("*.html"), *(SRC / "web").rglob("*.py")]
    files += [p for p in (SRC / "oversight").rglob("*.py") if "i18n" not in p.parts]
    used: dict[str, set[str]] = {}
    for path in files:
        for match in _CALL.finditer(path.read_text(encoding="utf-8")):
            used.setdefault(match.group(2), set()).add(str(path.relative_to(SRC)))
    return used


def test_every_key_has_english_and_chinese() -> None:
    assert len(TABLE) > 20
    for key, pair in TABLE.items():
        assert isinstance(pair, tuple) and len(pair) == 2, key
        en, zh = pair
        assert en.strip() and zh.strip(), key
        # a key's prefix is its page (common keys are the lead's: app., nav., lang., …)
        assert "." in key, key


def _words(text: str) -> bool:
    """Whether ``text`` has English words outside `code`, {fields} and product names."""
    rest = re.sub(r"`[^`]*`|\{[^}]*\}|deskpilot|MCP|AT-SPI|D-Bus|X11|URL", "", text)
    return re.search(r"[A-Za-z]{3}", rest) is not None


def test_chinese_is_not_a_copy_of_the_english() -> None:
    for key, (en, zh) in TABLE.items():
        # a name or a command may be the same in both; "lang.switch" names the other
        # language in its own script ("中文" / "English")
        if _words(en) and key != "lang.switch":
            assert CJK.search(zh), f"{key}: the Chinese text has no Chinese in it: {zh!r}"


def test_both_languages_fill_the_same_fields() -> None:
    for key, (en, zh) in TABLE.items():
        assert _fields(en) == _fields(zh), f"{key}: {_fields(en)} vs {_fields(zh)}"


def test_every_key_used_by_a_template_or_a_page_exists() -> None:
    used = _used_keys()
    # the scan really reads the sources (else this test would pass on nothing)
    assert {"lang.switch", "lang.label", "errors.title", "login.used"} <= set(used)
    missing = {key: sorted(files) for key, files in used.items() if key not in TABLE}
    assert not missing, f"keys used but not in the message table: {missing}"


def test_navigation_keys_exist() -> None:
    for _, key in NAV:
        assert key in TABLE, key


def test_each_page_module_keeps_its_own_prefix() -> None:
    import importlib

    owners: dict[str, str] = {}
    for name in PAGE_MODULES:
        module = importlib.import_module(f"deskpilot.oversight.i18n.{name}")
        for key in module.MESSAGES:
            owners[key] = name
    assert set(owners) == set(TABLE)
    for key, owner in owners.items():
        if owner != "common":
            assert key.startswith(f"{owner}."), f"{key} is defined in i18n/{owner}.py"


def test_translate() -> None:
    assert translate("nav.errors", "en") == "Error codes"
    assert translate("nav.errors", "zh") == "错误码"
    when, cause = "2030-01-02 03:04:05", "chord"
    assert when in translate("readiness.halt.row_active", "zh", when=when, cause=cause)
    assert cause in translate("readiness.halt.row_active", "en", when=when, cause=cause)
    assert translate("no.such.key", "zh") == "no.such.key"


@pytest.mark.parametrize(
    "header, expected",
    [
        ("zh-CN", "zh"),
        ("zh-TW;q=0.8", "zh"),
        ("zh-Hant-HK", "zh"),
        ("ZH-cn", "zh"),
        ("en;q=0.9,zh;q=0.8", "en"),
        ("zh;q=0.8,en;q=0.9", "en"),  # the q values rank, not the order
        ("zh-CN,zh;q=0.9,en;q=0.8", "zh"),
        ("en-US,en;q=0.9,zh-CN;q=0.8", "en"),
        ("fr-FR,fr;q=0.9,zh;q=0.5", "zh"),  # an unsupported language is skipped
        ("de,fr", "en"),
        ("zh;q=0", "en"),  # q=0 means "not this one"
        ("zh;q=0,en", "en"),
        ("zh;q=0.0, fr", "en"),
        (" zh-CN ; q=0.9 , en ; q=0.8", "zh"),
        ("zh, en", "zh"),  # equal q: the first one listed
        ("en, zh", "en"),
        ("*", "en"),
        ("", "en"),
        (None, "en"),
        # garbage: never an exception, English unless a real zh survives
        (";;;,,,", "en"),
        ("q=abc", "en"),
        ("zh;q=abc", "en"),  # an unreadable q counts as 0
        ("\x00\xff, ,zh;;q=", "en"),
        ("😀,zh-CN;q=0.4", "zh"),
        ("x" * 10_000, "en"),
    ],
)
def test_pick_locale_from_accept_language(header: str | None, expected: str) -> None:
    assert pick_locale(None, header) == expected


def test_the_switch_cookie_wins_over_the_browser() -> None:
    assert pick_locale("en", "zh-CN") == "en"
    assert pick_locale("zh", "en-US") == "zh"
    # a cookie that is not one of ours is ignored, not trusted
    assert pick_locale("fr", "zh-CN") == "zh"
    assert pick_locale("ZH", "en") == "en"
    assert pick_locale("", None) == "en"
    assert set(LOCALES) == {"en", "zh"}
