"""Rendering a page: the template plus what every page needs (locale and ``t``, the CSRF
token, the navigation, the halt/takeover banner)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse

from deskpilot.oversight.banner import banner
from deskpilot.oversight.i18n import pick_locale, translate
from deskpilot.web.auth import BrowserSession
from deskpilot.web.context import DashboardContext

NAV: tuple[tuple[str, str], ...] = (
    ("/live", "nav.live"),
    ("/readiness", "nav.readiness"),
    ("/sessions", "nav.sessions"),
    ("/confirmations", "nav.confirmations"),
    ("/settings", "nav.settings"),
    ("/errors", "nav.errors"),
)


def wants_json(request: Request) -> bool:
    """A script's fetch asked for JSON (a plain form post gets a page or a redirect)."""
    return "application/json" in request.headers.get("accept", "")


def safe_next(value: object, default: str) -> str:
    """A same-site path to go back to (never another host, never ``//host``)."""
    text = str(value or "")
    if not text.startswith("/") or text.startswith("//") or "\\" in text:
        return default
    return text


def locale_of(request: Request) -> str:
    return pick_locale(request.cookies.get("dp_lang"), request.headers.get("accept-language"))


def browser_session(request: Request) -> BrowserSession | None:
    found = request.scope.get("dp_session")
    return found if isinstance(found, BrowserSession) else None


def page(
    ctx: DashboardContext,
    request: Request,
    template: str,
    values: dict[str, Any] | None = None,
    *,
    status_code: int = 200,
) -> HTMLResponse:
    """Render ``template`` (which extends ``base.html``) for this request."""
    locale = locale_of(request)
    session = browser_session(request)

    def t(key: str, **fields: object) -> str:
        return translate(key, locale, **fields)

    context: dict[str, Any] = {
        "t": t,
        "locale": locale,
        "csrf": session.csrf if session else "",
        "nav": NAV,
        "path": request.url.path,
        #: the path with its query, for the language switch to come back to the same view
        "full_path": request.url.path + (f"?{request.url.query}" if request.url.query else ""),
        "banner": banner(ctx.db, locale),
        **(values or {}),
    }
    return ctx.templates.TemplateResponse(request, template, context, status_code=status_code)
