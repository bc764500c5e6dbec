"""Who may use the dashboard, and how a request proves it (docs/dashboard.md, "Access").

* **One-time login URL.** ``deskpilot ui`` prints ``http://127.0.0.1:PORT/login?token=…``
  once; the token (32 random bytes, base64url) is exchanged at most once, within
  :data:`LOGIN_TTL_S`, for a browser session. A reused or expired link answers 403 and starts
  nothing. ``deskpilot ui`` can mint a fresh link while running (``--new-login`` in a second
  terminal is not needed: restart prints a new one).
* **The browser session** is a second random token in an ``HttpOnly; SameSite=Strict`` cookie
  (``Path=/``), sliding :data:`SESSION_TTL_S`. Server-side only: the cookie value is looked up,
  never decoded.
* **CSRF.** Each browser session has its own CSRF token, rendered into every page (a ``<meta>``
  and each form's hidden field). A state-changing request (any method but GET/HEAD) must carry
  it (form field ``csrf`` or header ``X-CSRF-Token``) *and* an ``Origin`` equal to the
  dashboard's own origin; both are compared in constant time.
* **Host.** Every request's ``Host`` must be one the server was bound as (DNS rebinding).

Tokens never reach logs: uvicorn's access log is off and nothing here logs a value.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field

TOKEN_BYTES = 32
LOGIN_TTL_S = 15 * 60.0
SESSION_TTL_S = 12 * 3600.0
COOKIE = "dp_session"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def same(a: str | None, b: str | None) -> bool:
    """Constant-time equality of two optional strings (None never equals anything)."""
    if a is None or b is None:
        return False
    return hmac.compare_digest(a.encode(), b.encode())


@dataclass
class BrowserSession:
    """One logged-in browser: its cookie value, CSRF token and sliding expiry."""

    cookie: str
    csrf: str
    expires_at: float
    created_at: float = field(default_factory=time.time)


class Access:
    """Login links and browser sessions of one dashboard process (in memory: a restart logs
    everyone out, which is what a person who restarts it expects)."""

    def __init__(self, *, clock: Callable[[], float] | None = None) -> None:
        self._clock = clock or time.monotonic
        self._logins: dict[str, float] = {}  # login token -> expiry
        self._used: set[str] = set()
        self._sessions: dict[str, BrowserSession] = {}

    def new_login(self) -> str:
        """A fresh one-time login token (the URL ``deskpilot ui`` prints)."""
        token = secrets.token_urlsafe(TOKEN_BYTES)
        self._logins[token] = self._clock() + LOGIN_TTL_S
        return token

    def exchange(self, token: str | None) -> BrowserSession | None:
        """Trade a login token for a browser session, once; None when unknown/used/expired."""
        if not token:
            return None
        now = self._clock()
        match = next((t for t in self._logins if same(t, token)), None)
        if match is None:
            return None
        expiry = self._logins.pop(match)
        self._used.add(match)
        if now >= expiry:
            return None
        session = BrowserSession(
            cookie=secrets.token_urlsafe(TOKEN_BYTES),
            csrf=secrets.token_urlsafe(TOKEN_BYTES),
            expires_at=now + SESSION_TTL_S,
        )
        self._sessions[session.cookie] = session
        return session

    def was_used(self, token: str | None) -> bool:
        return token is not None and any(same(t, token) for t in self._used)

    def session(self, cookie: str | None) -> BrowserSession | None:
        """The browser session behind a cookie (the TTL slides), or None."""
        if not cookie:
            return None
        now = self._clock()
        match = next((s for c, s in self._sessions.items() if same(c, cookie)), None)
        if match is None:
            return None
        if now >= match.expires_at:
            self._sessions.pop(match.cookie, None)
            return None
        match.expires_at = now + SESSION_TTL_S
        return match

    def logout(self, cookie: str | None) -> None:
        if cookie:
            self._sessions.pop(cookie, None)


def origin_ok(origin: str | None, allowed: frozenset[str]) -> bool:
    """A state-changing request's ``Origin`` must be exactly one of the dashboard's own."""
    return origin is not None and origin in allowed
