"""``GET /events``: the page-wide live state as server-sent events (every page's app.js
listens).

A ``state`` event carries the pending confirmations, the halt, the takeover hold and the
sessions revision (oversight/events.py); one is sent on connect and then whenever something
changed, in the browser's language. One poller per dashboard process serves every open
page; the stream ends when the page goes away or the server stops.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from deskpilot.oversight.events import LivePoller, render_state
from deskpilot.web.context import DashboardContext
from deskpilot.web.render import locale_of

#: a comment line this often keeps proxies and the browser from timing the stream out
PING_S = 15


def routes(ctx: DashboardContext) -> list[BaseRoute]:
    poller = LivePoller(ctx.db)
    ctx.on_shutdown(poller.close)

    async def events(request: Request) -> Response:
        ctx.guard(request, "observe")
        locale = locale_of(request)

        async def stream() -> AsyncIterator[dict[str, Any]]:
            async with poller.subscribe() as states:
                async for state in states:
                    data = render_state(state, poller.view, locale)
                    yield {"event": "state", "data": json.dumps(data, ensure_ascii=False)}

        return EventSourceResponse(stream(), ping=PING_S, headers={"X-Accel-Buffering": "no"})

    return [Route("/events", events)]
