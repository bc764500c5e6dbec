"""The live view page (being built for issue #16)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from deskpilot.web.context import DashboardContext
from deskpilot.web.render import page


def routes(ctx: DashboardContext) -> list[BaseRoute]:
    async def live(request: Request) -> Response:
        return page(ctx, request, "live.html")

    return [Route("/live", live)]
