"""The dashboard's gate, as one ASGI middleware in front of every route.

In order: the ``Host`` must be one this server is bound as (else 421, DNS rebinding); the
strict headers go on every response, errors included; ``/login``, ``/static/`` and
``/favicon.ico`` pass; any other request needs a live browser session cookie (else 401 with
the "open the login link" page); a state-changing request (not GET/HEAD/OPTIONS) needs the
dashboard's own ``Origin`` and the session's CSRF token (``X-CSRF-Token`` header, or the
``csrf`` field of a URL-encoded form body, which is read here and replayed to the route
unchanged); a browser on another machine needs ``remote.observe`` for anything at all (routes
check the finer capabilities through :meth:`DashboardContext.guard`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from deskpilot.oversight.i18n import pick_locale, translate
from deskpilot.oversight.remote import refusal
from deskpilot.store.settings import Settings
from deskpilot.web.auth import COOKIE, CSRF_FIELD, CSRF_HEADER, SAFE_METHODS, origin_ok, same
from deskpilot.web.context import DashboardContext

MAX_FORM_BYTES = 64 * 1024

#: the same strictness as the preview server, plus what a page with our own scripts needs
STRICT_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"cache-control", b"private, no-store"),
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
        b"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=()"),
)

PUBLIC_PREFIXES: tuple[str, ...] = ("/login", "/static/", "/favicon.ico")


def _header(scope: Scope, name: bytes) -> str | None:
    values = [v for k, v in scope.get("headers", []) if k == name]
    return values[0].decode("latin-1") if len(values) == 1 else None


def _cookie(scope: Scope, name: str) -> str | None:
    raw = _header(scope, b"cookie")
    if not raw:
        return None
    for part in raw.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


class Gate:
    def __init__(self, app: ASGIApp, ctx: DashboardContext) -> None:
        self.app = app
        self.ctx = ctx

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_strict(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in STRICT_HEADERS if k not in names]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        host = _header(scope, b"host")
        if host is None or host not in self.ctx.hosts:
            await _plain(send_strict, 421, "unknown host")
            return
        path = str(scope.get("path", ""))
        locale = pick_locale(_cookie(scope, "dp_lang"), _header(scope, b"accept-language"))
        peer = (scope.get("client") or (None, None))[0]
        if refusal(Settings.load(self.ctx.db).remote, peer, "observe") is not None:
            text = translate("denied.remote", locale, capability="remote.observe")
            await _plain(send_strict, 403, text)
            return
        if path.startswith(PUBLIC_PREFIXES):
            await self.app(scope, receive, send_strict)
            return
        session = self.ctx.access.session(_cookie(scope, COOKIE))
        if session is None:
            await _plain(send_strict, 401, translate("login.needed", locale))
            return
        scope.setdefault("state", {})
        scope["dp_session"] = session
        method = str(scope.get("method", "GET")).upper()
        if method in SAFE_METHODS:
            await self.app(scope, receive, send_strict)
            return
        if not origin_ok(_header(scope, b"origin"), self.ctx.origins) and not _own_form(scope):
            await _plain(send_strict, 403, translate("denied.csrf", locale))
            return
        token = _header(scope, CSRF_HEADER.encode())
        replay = receive
        content_type = (_header(scope, b"content-type") or "").split(";")[0].strip().lower()
        if token is None and content_type == "application/x-www-form-urlencoded":
            body, complete = await _read_body(receive, MAX_FORM_BYTES)
            if not complete:
                await _plain(send_strict, 413, "form too large")
                return
            fields = parse_qs(body.decode("latin-1"), keep_blank_values=True)
            values = fields.get(CSRF_FIELD) or []
            token = values[0] if len(values) == 1 else None
            replay = _replayer(body)
        if not same(token, session.csrf):
            await _plain(send_strict, 403, translate("denied.csrf", locale))
            return
        await self.app(scope, replay, send_strict)


def _own_form(scope: Scope) -> bool:
    """A form one of our own pages posted. Under ``Referrer-Policy: no-referrer`` a browser
    sends ``Origin: null`` for a form's POST, even to its own origin (Fetch, "append a request
    Origin header"); its ``Sec-Fetch-Site``, which no page can set, still tells that the
    request came from this origin. The CSRF token is checked after this all the same."""
    origin, site = _header(scope, b"origin"), _header(scope, b"sec-fetch-site")
    return origin == "null" and site == "same-origin"


async def _read_body(receive: Receive, limit: int) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), False
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return b"", False
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), True


def _replayer(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return receive


async def _plain(send: Any, status: int, text: str) -> None:
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
