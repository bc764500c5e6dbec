"""The errors page: every error code with what it means and what to do next, in the page's
language (``oversight/error_table.py`` holds the words). Each code's row has the code as its
id, so any page links a code to its explanation with ``/errors#<code>``
(``error_table.link``); ``/errors?code=<anything>`` explains one code on top, an unknown one
included, which is how a page links a code it cannot vouch for."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from deskpilot.oversight.error_table import describe, grouped
from deskpilot.protocol.errors import ErrorCode
from deskpilot.web.context import DashboardContext
from deskpilot.web.render import locale_of, page


def routes(ctx: DashboardContext) -> list[BaseRoute]:
    async def errors(request: Request) -> Response:
        ctx.guard(request, "observe")
        locale = locale_of(request)
        asked = request.query_params.get("code")
        values = {
            "groups": grouped(locale),
            "count": len(ErrorCode),
            "asked": describe(asked, locale) if asked is not None else None,
        }
        return page(ctx, request, "errors.html", values)

    return [Route("/errors", errors)]
