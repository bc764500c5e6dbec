"""The Chinese locale in a real browser (Playwright on Debian's Chromium) against a real
``deskpilot ui``: a zh-CN browser (its Accept-Language) gets Chinese navigation and the Chinese
error table; the switch turns the dashboard to English and back, and the choice sticks across
pages; an en-US browser gets English. Screenshots of the errors page in both languages are
kept under artifacts/web/."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from deskpilot.oversight.error_table import TABLE
from deskpilot.oversight.i18n import TABLE as MESSAGES
from deskpilot.protocol.errors import ErrorCode

from .uikit import UiServer, shot, start_ui

pytestmark = pytest.mark.chromium


def _en(key: str) -> str:
    return MESSAGES[key][0]


def _zh(key: str) -> str:
    return MESSAGES[key][1]


@pytest.fixture()
def zh_page(ui_server: UiServer, browser: Any) -> Iterator[Any]:
    context = browser.new_context(locale="zh-CN", viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(ui_server.login_url)
    assert page.url.endswith("/live"), page.url
    yield page
    context.close()


def _shown(text: str) -> str:
    """An entry's text as the page shows it (`code` is set as code, without backticks)."""
    return text.replace("`", "")


def _nav(page: Any) -> list[str]:
    return [text.strip() for text in page.locator("header.top nav a").all_inner_texts()]


def _switch(page: Any) -> None:
    """Press the language switch and wait for the page it sends the browser back to."""
    with page.expect_navigation(url=lambda url: "/language" not in url):
        page.click("#lang-switch")


def _row(page: Any, code: ErrorCode) -> Any:
    return page.locator(f"tr#{code.value}")


def test_a_chinese_browser_gets_chinese_and_the_switch_sticks(zh_page: Any) -> None:
    page = zh_page
    # Playwright's locale sets the request's Accept-Language
    sent = page.evaluate("navigator.language")
    assert sent == "zh-CN"
    assert page.locator("html").get_attribute("lang") == "zh-CN"
    assert _zh("nav.errors") in _nav(page) and _zh("nav.sessions") in _nav(page)
    assert _en("nav.errors") not in _nav(page)

    page.goto(page.url.replace("/live", "/errors#focus_mismatch"))
    assert page.locator("h1").inner_text() == _zh("errors.title")
    row = _row(page, ErrorCode.FOCUS_MISMATCH)
    entry = TABLE[ErrorCode.FOCUS_MISMATCH].zh
    assert row.locator("td.sentence").inner_text() == _shown(entry.sentence)
    assert row.locator("td.next").inner_text() == _shown(entry.next_step)
    # the row the link points at is the :target (highlighted by errors.css)
    assert page.evaluate("document.querySelector(':target').id") == "focus_mismatch"
    assert page.locator("tr.error-row").count() == len(ErrorCode)
    timeout = _row(page, ErrorCode.ACTION_TIMEOUT).locator("td.flags").inner_text()
    assert _zh("errors.flag.drops") in timeout
    shot(page, "errors-zh")

    # the switch: English, on this page and on the next
    _switch(page)
    assert page.url.endswith("/errors"), page.url
    assert page.locator("html").get_attribute("lang") == "en"
    assert page.locator("h1").inner_text() == _en("errors.title")
    assert _row(page, ErrorCode.FOCUS_MISMATCH).locator("td.sentence").inner_text() == _shown(
        TABLE[ErrorCode.FOCUS_MISMATCH].en.sentence
    )
    shot(page, "errors-en")
    page.goto(page.url.replace("/errors", "/sessions"))
    assert _en("nav.sessions") in _nav(page) and _zh("nav.sessions") not in _nav(page)
    assert page.locator("#lang-switch").inner_text().strip() == _en("lang.switch")

    # and back to Chinese, which sticks too
    _switch(page)
    assert page.url.endswith("/sessions"), page.url
    assert _zh("nav.sessions") in _nav(page)
    page.goto(page.url.replace("/sessions", "/readiness"))
    assert page.locator("html").get_attribute("lang") == "zh-CN"
    assert _zh("nav.readiness") in _nav(page)
    assert page.locator("#lang-switch").inner_text().strip() == _zh("lang.switch")


def test_an_english_browser_gets_english(browser: Any) -> None:
    server = start_ui()  # a login link works once: this browser gets its own server
    context = browser.new_context(locale="en-US", viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(server.login_url)
        assert page.url.endswith("/live"), page.url
        assert page.locator("html").get_attribute("lang") == "en"
        assert _en("nav.errors") in _nav(page) and _zh("nav.errors") not in _nav(page)
        page.goto(server.base_url + "/errors")
        assert page.locator("h1").inner_text() == _en("errors.title")
        entry = TABLE[ErrorCode.KILL_SWITCH_ENGAGED].en
        row = _row(page, ErrorCode.KILL_SWITCH_ENGAGED)
        assert row.locator("td.sentence").inner_text() == _shown(entry.sentence)
        assert row.locator("td.next").inner_text() == _shown(entry.next_step)
        assert row.locator("td.next code").first.inner_text() == "deskpilot unhalt"
        # an unknown code asked for by a link is explained, not shown raw
        page.goto(server.base_url + "/errors?code=target_lost")
        asked = page.locator("#asked").inner_text()
        assert "target_lost" in asked and "not an error code" in asked
    finally:
        context.close()
        server.stop()


def test_a_form_post_from_our_own_page_passes_the_origin_check() -> None:
    """Why the switch works as a plain form: a browser sends ``Origin: null`` for a form POST
    under ``Referrer-Policy: no-referrer``; the gate accepts that only with the browser's own
    ``Sec-Fetch-Site: same-origin`` (and still the CSRF token)."""
    server = start_ui()
    try:
        client = httpx.Client(base_url=server.base_url, follow_redirects=False, timeout=10)
        assert client.get(server.login_url.replace(server.base_url, "")).status_code == 303
        html = client.get("/errors").text
        match = re.search(r'name="csrf-token" content="([^"]+)"', html)
        assert match
        form = {"lang": "zh", "next": "/errors", "csrf": match.group(1)}

        def post(headers: dict[str, str], data: dict[str, str] = form) -> int:
            return client.post("/language", data=data, headers=headers).status_code

        assert post({"Origin": "null", "Sec-Fetch-Site": "same-origin"}) == 303
        assert post({"Origin": "null"}) == 403
        assert post({"Origin": "null", "Sec-Fetch-Site": "cross-site"}) == 403
        assert post({"Origin": "null", "Sec-Fetch-Site": "same-site"}) == 403
        bad_token = {**form, "csrf": "x" * 43}
        assert post({"Origin": "null", "Sec-Fetch-Site": "same-origin"}, bad_token) == 403
    finally:
        server.stop()
