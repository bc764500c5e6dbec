"""The dashboard's Starlette application: the gate, login, the language switch, static files,
and each page's routes (``web/pages/<page>.py``, each ``routes(ctx) -> list[BaseRoute]``).

Handlers only translate: they read the request, call :mod:`deskpilot.oversight` (or the
kernel's control channel) and render the answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from deskpilot.oversight.i18n import LOCALES, translate
from deskpilot.protocol.errors import DeskpilotError
from deskpilot.web.auth import COOKIE, SESSION_TTL_S
from deskpilot.web.context import STATIC_DIR, DashboardContext, Refused
from deskpilot.web.middleware import Gate
from deskpilot.web.pages import confirmations, errors, events, live, readiness, sessions, settings
from deskpilot.web.render import locale_of, page, safe_next


def _auth_routes(ctx: DashboardContext) -> list[BaseRoute]:
    async def login(request: Request) -> Response:
        token = request.query_params.get("token")
        session = ctx.access.exchange(token)
        if session is None:
            if ctx.access.session(request.cookies.get(COOKIE)) is not None:
                # a spent link opened again in a browser that is logged in already: the
                # link stays spent, the browser simply goes on
                return RedirectResponse("/live", status_code=303)
            locale = locale_of(request)

            def t(key: str, **fields: object) -> str:
                return translate(key, locale, **fields)

            values = {"t": t, "locale": locale, "message": translate("login.used", locale)}
            return ctx.templates.TemplateResponse(
                request, "login_refused.html", values, status_code=403
            )
        response = RedirectResponse("/live", status_code=303)
        response.set_cookie(
            COOKIE,
            session.cookie,
            max_age=int(SESSION_TTL_S),
            httponly=True,
            samesite="strict",
            secure=False,  # loopback http; the cookie never leaves this origin (SameSite)
            path="/",
        )
        return response

    async def logout(request: Request) -> Response:
        ctx.access.logout(request.cookies.get(COOKIE))
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response

    async def set_language(request: Request) -> Response:
        form = await request.form()
        lang = str(form.get("lang", ""))
        if lang not in LOCALES:
            return PlainTextResponse(f"unknown language {lang!r}", status_code=400)
        response = RedirectResponse(safe_next(form.get("next"), "/live"), status_code=303)
        response.set_cookie(
            "dp_lang", lang, max_age=365 * 86400, httponly=True, samesite="strict", path="/"
        )
        return response

    async def index(request: Request) -> Response:
        return RedirectResponse("/live", status_code=303)

    async def favicon(request: Request) -> Response:
        return FileResponse(STATIC_DIR / "favicon.png", media_type="image/png")

    return [
        Route("/", index),
        Route("/favicon.ico", favicon),
        Route("/login", login),
        Route("/logout", logout, methods=["POST"]),
        Route("/language", set_language, methods=["POST"]),
    ]


def create_app(ctx: DashboardContext) -> Starlette:
    routes: list[BaseRoute] = [
        *_auth_routes(ctx),
        Mount("/static", app=StaticFiles(directory=str(STATIC_DIR)), name="static"),
    ]
    for module in (live, readiness, sessions, confirmations, settings, errors, events):
        routes.extend(module.routes(ctx))

    async def refused(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, Refused)
        locale = locale_of(request)
        if exc.reason == "local_only":
            text = translate("denied.local_only", locale)
        else:
            text = translate("denied.remote", locale, capability=exc.reason)
        return page(ctx, request, "denied.html", {"message": text}, status_code=403)

    async def typed_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, DeskpilotError)
        status = 400 if exc.code.value in _CLIENT_CODES else 409
        values = {"message": exc.message, "code": exc.code.value, "title_key": error_title(exc)}
        return page(ctx, request, "denied.html", values, status_code=status)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return PlainTextResponse(str(exc.detail), status_code=exc.status_code)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await ctx.shutdown()

    return Starlette(
        routes=routes,
        middleware=[Middleware(Gate, ctx=ctx)],
        exception_handlers={
            Refused: refused,
            DeskpilotError: typed_error,
            HTTPException: http_error,
        },
        lifespan=lifespan,
    )


_CLIENT_CODES = frozenset({"invalid_request", "unsupported_action"})
_NOT_FOUND_CODES = frozenset({"session_not_found", "snapshot_not_found"})


def error_title(exc: DeskpilotError) -> str:
    """The heading of a typed error's page: "Not allowed" is only for a refusal (the guard's
    :class:`Refused`); a missing thing is "Not found", a bad request "Not understood"."""
    code = exc.code.value
    if code in _NOT_FOUND_CODES:
        return "error.title.not_found"
    if code in _CLIENT_CODES:
        return "error.title.bad_request"
    return "error.title.not_possible"
