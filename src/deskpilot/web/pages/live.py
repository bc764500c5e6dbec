"""The live view: the page, its server-sent frames and the capture counter.

* ``GET /live?target=screen|0x…&fps=N`` — the page: the frame, the target chooser (the whole
  desktop or one window; a plain GET form) and the frame rate;
* ``GET /live/stream?target=…&fps=…`` — server-sent events: ``frame`` (a JPEG in base64 with
  its capture time, number, pointer and outlines; oversight/live.py ``LiveFrame.wire``) and
  ``problem`` (a frame that could not be taken, worded for the browser's language). The
  stream is a viewer for as long as it is open; its permission and the browser session are
  checked again every few seconds, so turning ``remote.observe`` off or logging out ends it;
* ``GET /live/stats`` — JSON: captures so far, viewers, running loops (the proof that
  nothing is captured while nobody watches).

All three need ``observe``. The frames' source is one :class:`~deskpilot.oversight.live.LiveHub`
per server, closed at shutdown.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from deskpilot.oversight.live import (
    DEFAULT_FPS,
    MAX_FPS,
    SCREEN,
    LiveFrame,
    LiveHub,
    LiveProblem,
    parse_fps,
    parse_target,
)
from deskpilot.protocol.errors import DeskpilotError
from deskpilot.protocol.wire import WindowInfo
from deskpilot.web.auth import COOKIE
from deskpilot.web.context import DashboardContext, Refused
from deskpilot.web.render import locale_of, page

#: how often an open stream re-checks that its browser may still watch (seconds)
RECHECK_S = 2.0
FPS_CHOICES = (1, 2, 5, 10)


def routes(ctx: DashboardContext) -> list[BaseRoute]:
    hub = LiveHub(ctx.db, ctx.host)
    ctx.on_shutdown(hub.close)

    async def live(request: Request) -> Response:
        ctx.guard(request, "observe")
        target = parse_target(request.query_params.get("target"))
        fps = parse_fps(request.query_params.get("fps"))
        windows: list[WindowInfo] = []
        code: str | None = None
        try:
            windows = await hub.windows()
        except DeskpilotError as exc:
            code = exc.code.value
        if target != SCREEN and all(w.window_id != target for w in windows):
            code = code or "target_not_found"
        problem = LiveProblem(code).wire(locale_of(request))["text"] if code else None
        choices = sorted({*FPS_CHOICES, fps})
        query = f"target={target}&fps={fps}"
        return page(
            ctx,
            request,
            "live.html",
            {
                "target": target,
                "fps": fps,
                "fps_choices": choices,
                "max_fps": MAX_FPS,
                "default_fps": DEFAULT_FPS,
                "windows": windows,
                "problem": problem,
                "stream_url": f"/live/stream?{query}",
            },
        )

    def still_allowed(request: Request) -> bool:
        if ctx.access.session(request.cookies.get(COOKIE)) is None:
            return False
        try:
            ctx.guard(request, "observe")
        except Refused:
            return False
        return True

    async def stream(request: Request) -> Response:
        ctx.guard(request, "observe")
        target = parse_target(request.query_params.get("target"))
        fps = parse_fps(request.query_params.get("fps"))
        locale = locale_of(request)

        async def events() -> AsyncIterator[ServerSentEvent]:
            checked = time.monotonic()
            async with hub.watch(target, fps) as viewer:
                while True:
                    item = await viewer.next()
                    now = time.monotonic()
                    if now - checked >= RECHECK_S:
                        checked = now
                        if not still_allowed(request):
                            yield ServerSentEvent(data="{}", event="end")
                            return
                    if isinstance(item, LiveFrame):
                        yield ServerSentEvent(data=json.dumps(item.wire()), event="frame")
                    else:
                        yield ServerSentEvent(data=json.dumps(item.wire(locale)), event="problem")

        return EventSourceResponse(events(), ping=15, send_timeout=10)

    async def stats(request: Request) -> Response:
        ctx.guard(request, "observe")
        return JSONResponse(hub.stats())

    return [
        Route("/live", live),
        Route("/live/stream", stream),
        Route("/live/stats", stats),
    ]
