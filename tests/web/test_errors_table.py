"""The error table: every code of the project's enum has a readable sentence and a next step in
English and Chinese, retryable and connection-dropping codes say so, unknown codes get a
clear entry instead of a crash, and the errors page (a real ``deskpilot ui``) shows every code
under its own anchor."""

from __future__ import annotations

import re
import urllib.parse

import httpx
import pytest

from deskpilot.oversight.error_table import GROUPS, TABLE, code_spans, describe, grouped, link
from deskpilot.oversight.i18n import TABLE as MESSAGES
from deskpilot.protocol.errors import ErrorCode

from .uikit import UiServer, start_ui

CJK = re.compile(r"[\u4e00-\u9fff]")


def test_every_code_has_an_entry_in_both_languages() -> None:
    missing = [code.value for code in ErrorCode if code not in TABLE]
    assert not missing, f"error codes without an entry in oversight/error_table.py: {missing}"
    assert set(TABLE) == set(ErrorCode)
    for code, entry in TABLE.items():
        for words in (entry.en, entry.zh):
            assert words.sentence.strip() and words.next_step.strip(), code
            assert words.sentence != words.next_step, code
        # English is English, Chinese is Chinese (not a copy of the English)
        assert not CJK.search(entry.en.sentence + entry.en.next_step), code
        assert CJK.search(entry.zh.sentence) and CJK.search(entry.zh.next_step), code
        # a sentence for a person, not the code read aloud
        assert code.value not in entry.en.sentence, code
        assert entry.group in GROUPS, code


def test_retryable_and_dropping_codes_say_so_in_their_next_step() -> None:
    for code, entry in TABLE.items():
        if code.retryable:
            assert "retr" in entry.en.next_step.lower(), code
            assert "重试" in entry.zh.next_step, code
        if code.drops_connection:
            assert "connection" in entry.en.next_step.lower(), code
            assert "连接" in entry.zh.next_step, code


def test_no_two_codes_share_a_sentence() -> None:
    for lang in ("en", "zh"):
        sentences = [getattr(e, lang).sentence for e in TABLE.values()]
        assert len(set(sentences)) == len(sentences), lang


def test_describe_a_known_code() -> None:
    en = describe(ErrorCode.FOCUS_MISMATCH, "en")
    zh = describe("focus_mismatch", "zh")
    assert en.known and zh.known and en.code == zh.code == "focus_mismatch"
    assert en.sentence == TABLE[ErrorCode.FOCUS_MISMATCH].en.sentence
    assert zh.next_step == TABLE[ErrorCode.FOCUS_MISMATCH].zh.next_step
    assert en.anchor == "focus_mismatch"
    # the flags come from the enum, not from a second list
    assert describe("stale_frame", "en").retryable
    assert not describe("focus_mismatch", "en").retryable
    assert describe("action_timeout", "en").drops_connection
    # any case and stray spaces name the same code
    assert describe(" FOCUS_MISMATCH ", "en").code == "focus_mismatch"


@pytest.mark.parametrize(
    "raw, shown",
    [
        ("permission_denied", "permission_denied"),  # seed 003 §12.2: names the enum never had
        ("native_host_not_found", "native_host_not_found"),
        ("target_lost", "target_lost"),
        ("", "(empty)"),
        ("x" * 500, "x" * 63 + "…"),
        ("bad\x00code\nhere", "bad?code?here"),
    ],
)
def test_describe_an_unknown_code(raw: str, shown: str) -> None:
    for locale in ("en", "zh"):
        text = describe(raw, locale)
        assert not text.known and text.code == shown
        assert shown in text.sentence
        assert text.next_step
        assert not text.retryable and not text.drops_connection
        assert text.anchor == "unknown"
    assert "not an error code" in describe(raw, "en").sentence
    assert "不是当前版本" in describe(raw, "zh").sentence


def test_describe_refuses_an_unknown_locale() -> None:
    with pytest.raises(ValueError, match="unknown locale 'fr'"):
        describe("focus_mismatch", "fr")
    with pytest.raises(ValueError, match="unknown locale"):
        grouped("zh-CN")


def test_grouped_lists_every_code_once_in_enum_order() -> None:
    sections = grouped("zh")
    codes = [e.code for _, entries in sections for e in entries]
    assert sorted(codes) == sorted(c.value for c in ErrorCode)
    assert len(codes) == len(set(codes))
    assert [g for g, _ in sections] == [g for g in GROUPS if any(g == gg for gg, _ in sections)]
    for _, entries in sections:
        order = [list(ErrorCode).index(ErrorCode(e.code)) for e in entries]
        assert order == sorted(order)


def test_every_group_has_a_title_in_the_message_table() -> None:
    for group in GROUPS:
        en, zh = MESSAGES[f"errors.group.{group}"]
        assert en and CJK.search(zh)


def test_code_spans() -> None:
    assert code_spans("run `deskpilot doctor` now") == (
        ("run ", False),
        ("deskpilot doctor", True),
        (" now", False),
    )
    assert code_spans("`a` and `b`") == (("a", True), (" and ", False), ("b", True))
    assert code_spans("no code") == (("no code", False),)
    assert code_spans("one ` stray") == (("one ` stray", False),)
    assert code_spans("`x` then ` stray") == (("x", True), (" then ` stray", False))
    assert code_spans("") == ()
    # every entry's backticks pair up
    for entry in TABLE.values():
        for words in (entry.en, entry.zh):
            for text in (words.sentence, words.next_step):
                assert text.count("`") % 2 == 0, text


def test_link() -> None:
    assert link(ErrorCode.STALE_TREE) == "/errors#stale_tree"
    assert link("Stale_Tree") == "/errors#stale_tree"
    odd = link("no such code&x=1")
    assert odd.startswith("/errors?code=")
    assert urllib.parse.parse_qs(odd.split("?", 1)[1]) == {"code": ["no such code&x=1"]}


# -- the page, over real HTTP ----------------------------------------------------------------


@pytest.fixture(scope="module")
def client() -> httpx.Client:
    server: UiServer = start_ui()
    http = httpx.Client(base_url=server.base_url, follow_redirects=False, timeout=10)
    r = http.get(server.login_url.replace(server.base_url, ""))
    assert r.status_code == 303
    yield http  # type: ignore[misc]
    http.close()
    server.stop()


def test_the_page_shows_every_code_under_its_anchor(client: httpx.Client) -> None:
    r = client.get("/errors", headers={"Accept-Language": "en-US,en;q=0.9"})
    assert r.status_code == 200
    html = r.text
    for code in ErrorCode:
        assert f'<tr id="{code.value}"' in html, code
    entry = TABLE[ErrorCode.KILL_SWITCH_ENGAGED].en
    assert _escaped(entry.sentence) in html and _escaped(entry.next_step) in html
    assert 'href="/static/errors.css"' in html
    assert "style=" not in html and "onclick" not in html  # the CSP allows neither


def test_the_page_in_chinese(client: httpx.Client) -> None:
    r = client.get("/errors", headers={"Accept-Language": "zh-CN,zh;q=0.9"})
    assert r.status_code == 200
    assert '<html lang="zh-CN">' in r.text
    entry = TABLE[ErrorCode.HANDOFF_REQUIRED].zh
    assert _escaped(entry.sentence) in r.text
    assert MESSAGES["errors.col.next"][1] in r.text


def test_the_page_explains_an_asked_code_known_or_not(client: httpx.Client) -> None:
    r = client.get("/errors", params={"code": "target_lost"})
    assert r.status_code == 200
    asked = r.text.split('id="asked"', 1)[1].split("</section>", 1)[0]
    assert "target_lost" in asked and "not an error code" in asked
    r = client.get("/errors", params={"code": "<script>alert(1)</script>"})
    assert r.status_code == 200 and "<script>alert(1)" not in r.text  # escaped, not run
    r = client.get("/errors", params={"code": "stale_frame"})
    asked = r.text.split('id="asked"', 1)[1].split("</section>", 1)[0]
    assert _escaped(TABLE[ErrorCode.STALE_FRAME].en.sentence) in asked
    assert 'href="#stale_frame"' in asked


def test_the_page_needs_a_login() -> None:
    server = start_ui()
    try:
        r = httpx.get(server.base_url + "/errors", timeout=10)
        assert r.status_code == 401
    finally:
        server.stop()


def _escaped(text: str) -> str:
    """``text`` as the errors page writes it: autoescaped, `code` in <code>."""

    def esc(part: str) -> str:
        return (
            part.replace("&", "&amp;")
            .replace("<", "&lt;")
            .replace(">", "&gt;")
            .replace('"', "&#34;")
            .replace("'", "&#39;")
        )

    return "".join(f"<code>{esc(p)}</code>" if c else esc(p) for p, c in code_spans(text))
