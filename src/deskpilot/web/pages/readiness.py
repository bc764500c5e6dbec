"""The readiness page and Unhalt: HTTP in front of :mod:`deskpilot.oversight.readiness`.

* ``GET /readiness`` — the last report (with its time) and the live sections; never runs the
  diagnosis itself, so the page renders at once.
* ``POST /readiness/run`` (``mode`` = ``full`` | ``verify_host``) — starts the checks in the
  background (one at a time) and answers at once. The host-only check is read-only and open
  to whoever may look (``observe``); the full one opens a small dialog and acts on it to
  measure latencies, so a remote browser needs ``control`` for it.
* ``GET /readiness/status`` — JSON: is a run going, when did the last one finish (the page's
  script polls it while a run goes, then reloads).
* ``POST /unhalt`` — lifts the kill switch's halt exactly as ``deskpilot unhalt`` does
  (``Halt.lift``, recorded as lifted by ``dashboard``); only ever from this machine. Answers
  JSON to app.js (``Accept: application/json``), else redirects back to the page it came from.
"""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from deskpilot.kernel.halt import Halt
from deskpilot.oversight.banner import clock
from deskpilot.oversight.events import live_revision
from deskpilot.oversight.i18n import translate
from deskpilot.oversight.readiness import (
    MODES,
    Mode,
    ReadinessChecks,
    live_sections,
    report_sections,
    verdict,
)
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.web.context import DashboardContext
from deskpilot.web.render import locale_of, page, safe_next, wants_json

UNHALTED_BY = "dashboard"


def routes(ctx: DashboardContext) -> list[BaseRoute]:
    checks = ReadinessChecks()
    ctx.on_shutdown(checks.close)

    async def show(request: Request) -> Response:
        ctx.guard(request, "observe")
        locale = locale_of(request)
        report = checks.last
        # the revision is read before the sections: a change in between refreshes them again
        revision = await asyncio.to_thread(live_revision, ctx.db)
        live = await asyncio.to_thread(live_sections, ctx.db, locale)
        since = checks.running_since
        return page(
            ctx,
            request,
            "readiness.html",
            {
                "verdict": None if report is None else verdict(report, locale),
                "sections": [] if report is None else report_sections(report, locale),
                "live": live,
                "live_revision": revision,
                "running": checks.running,
                "running_since": "" if since is None else clock(since),
                "running_mode": checks.running_mode or "",
            },
        )

    async def run(request: Request) -> Response:
        form = await request.form()
        mode = str(form.get("mode", "full"))
        if mode not in MODES:
            raise DeskpilotError(
                ErrorCode.INVALID_REQUEST,
                f"unknown check mode {mode!r}; expected one of {', '.join(MODES)}",
            )
        chosen: Mode = "full" if mode == "full" else "verify_host"
        ctx.guard(request, "control" if chosen == "full" else "observe")
        started = checks.start(chosen)
        if wants_json(request):
            return JSONResponse({"started": started, **checks.status()})
        return RedirectResponse("/readiness", status_code=303)

    async def status(request: Request) -> Response:
        ctx.guard(request, "observe")
        return JSONResponse(checks.status())

    async def unhalt(request: Request) -> Response:
        ctx.guard(request, "local")
        form = await request.form()
        locale = locale_of(request)
        halt = Halt(ctx.db)
        lifted = halt.lift(UNHALTED_BY) if halt.active() is not None else 0
        message = translate("readiness.unhalted" if lifted else "readiness.not_halted", locale)
        if wants_json(request):
            return JSONResponse({"lifted": lifted, "message": message})
        return RedirectResponse(safe_next(form.get("next"), "/readiness"), status_code=303)

    return [
        Route("/readiness", show),
        Route("/readiness/run", run, methods=["POST"]),
        Route("/readiness/status", status),
        Route("/unhalt", unhalt, methods=["POST"]),
    ]
