"""Fixtures for the dashboard's tests (helpers in uikit.py): ``ui_server`` (a real
``deskpilot ui`` process on the session's data dir), ``browser`` (Playwright on Debian's
Chromium via ``executable_path``) and ``logged_in`` (a page that spent the login link)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .uikit import CHROMIUM, UiServer, start_ui


@pytest.fixture(scope="module")
def ui_server() -> Iterator[UiServer]:
    server = start_ui()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def logged_in(ui_server: UiServer, browser: Any) -> Iterator[Any]:
    context = browser.new_context(locale="en-US", viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(ui_server.login_url)
    assert page.url.endswith("/live"), page.url
    yield page
    context.close()
