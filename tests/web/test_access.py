"""Access to the dashboard over real HTTP against a real ``deskpilot ui`` process: the
one-time login link, the cookie's flags, CSRF and Origin on every state change, the Host check
and the strict headers."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from .uikit import UiServer, shot, start_ui


@pytest.fixture(scope="module")
def server() -> Any:
    s = start_ui()
    yield s
    s.stop()


def _login(server: UiServer) -> httpx.Client:
    client = httpx.Client(base_url=server.base_url, follow_redirects=False, timeout=10)
    r = client.get(server.login_url.replace(server.base_url, ""))
    assert r.status_code == 303, r.text
    return client


def test_login_link_works_once_and_sets_a_strict_cookie(server: UiServer) -> None:
    client = httpx.Client(base_url=server.base_url, follow_redirects=False, timeout=10)
    path = server.login_url.replace(server.base_url, "")
    assert client.get("/live").status_code == 401
    first = client.get(path)
    assert first.status_code == 303 and first.headers["location"] == "/live"
    cookie = first.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
    # the same link again, from a fresh browser: refused, and it grants nothing
    again = httpx.Client(base_url=server.base_url, follow_redirects=False, timeout=10)
    reused = again.get(path)
    assert reused.status_code == 403
    assert "set-cookie" not in reused.headers
    assert again.get("/live").status_code == 401
    # a made-up token is refused too
    assert again.get("/login?token=" + "A" * 43).status_code == 403
    assert client.get("/errors").status_code in (200, 404)


def test_state_changes_need_origin_and_csrf(server: UiServer) -> None:
    s2 = start_ui()
    try:
        client = _login(s2)
        page = client.get("/live", follow_redirects=True)
        match = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
        assert match, page.text[:500]
        csrf = match.group(1)
        origin = s2.base_url
        form = {"lang": "zh", "next": "/live"}
        # no Origin
        assert client.post("/language", data={**form, "csrf": csrf}).status_code == 403
        # another site's Origin
        bad = client.post(
            "/language", data={**form, "csrf": csrf}, headers={"Origin": "http://evil.test"}
        )
        assert bad.status_code == 403
        # right Origin, wrong or missing token
        for token in ("", "x" * 43):
            r = client.post("/language", data={**form, "csrf": token}, headers={"Origin": origin})
            assert r.status_code == 403
        # right Origin and token: accepted (form field, then header)
        ok = client.post("/language", data={**form, "csrf": csrf}, headers={"Origin": origin})
        assert ok.status_code == 303 and "dp_lang=zh" in ok.headers["set-cookie"]
        ok2 = client.post("/language", data=form, headers={"Origin": origin, "X-CSRF-Token": csrf})
        assert ok2.status_code == 303
    finally:
        s2.stop()


def test_unknown_host_is_refused_and_headers_are_strict(server: UiServer) -> None:
    port = server.base_url.rsplit(":", 1)[1]
    r = httpx.get(f"http://127.0.0.1:{port}/live", headers={"Host": f"evil.test:{port}"})
    assert r.status_code == 421
    r = httpx.get(server.login_url.replace("token=", "token=zz"))
    assert r.status_code == 403
    csp = r.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["cache-control"] == "private, no-store"
    assert r.headers["referrer-policy"] == "no-referrer"


def test_login_in_a_real_browser_and_a_reused_link_is_refused(browser: Any) -> None:
    s3 = start_ui()
    try:
        ctx = browser.new_context()
        page = ctx.new_page()
        page.goto(s3.login_url)
        assert page.url.endswith("/live")
        cookies = {c["name"]: c for c in ctx.cookies()}
        assert cookies["dp_session"]["httpOnly"] is True
        assert cookies["dp_session"]["sameSite"] == "Strict"
        assert page.evaluate("document.cookie").find("dp_session") == -1
        # the same link again in the browser that is logged in: no dead end, it goes on
        again = page.goto(s3.login_url)
        assert again is not None and page.url.endswith("/live"), page.url
        other = browser.new_context()
        page2 = other.new_page()
        response = page2.goto(s3.login_url)
        assert response is not None and response.status == 403
        # a small page of our own (styled, no navigation: not logged in), in words
        assert "text/html" in response.headers["content-type"]
        assert "already used or has expired" in page2.locator("#login-message").inner_text()
        assert page2.locator("header nav").count() == 0
        assert page2.locator("link[rel=stylesheet]").count() == 1
        shot(page2, "login-reused")
        # the link stays spent: the logged-in browser's visit did not revive it
        third = browser.new_context()
        response = third.new_page().goto(s3.login_url)
        assert response is not None and response.status == 403
        third.close()
        ctx.close()
        other.close()
    finally:
        s3.stop()
