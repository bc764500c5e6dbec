"""The confirmations page and the answers: HTTP in front of
:mod:`deskpilot.oversight.confirmations_view`.

* ``GET /confirmations`` — pending ones (one-time summary, expiry counting down) and the
  recently answered ones below.
* ``POST /confirmations/{id}/approve`` and ``…/deny`` — the same one-time answer as
  ``deskpilot confirm approve|deny``. Guarded as ``approve`` at the confirmation's own risk
  level, so a browser on another machine may answer only ≤ L2 (and only with
  ``remote.approveL2`` on). app.js asks for JSON (``Accept: application/json``) and shows the
  outcome in the notification; a plain form post is redirected back to the page, which says
  what happened. A refused answer (already answered, expired, unknown) is 409 / 404 with the
  sentence the person reads, never a bare error.
"""

from __future__ import annotations

import asyncio
import re

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from deskpilot.oversight.confirmations_view import AnswerRefused, ConfirmationsView
from deskpilot.oversight.i18n import translate
from deskpilot.web.context import DashboardContext
from deskpilot.web.render import locale_of, page, wants_json

#: what the kernel's ids look like (kernel/confirmation.py); anything else is unknown
CONFIRMATION_ID = re.compile(r"cf_[0-9a-f]{12}")
VERBS = ("approve", "deny")


def routes(ctx: DashboardContext) -> list[BaseRoute]:
    view = ConfirmationsView(ctx.db)

    def render(
        request: Request, *, message: str = "", error: bool = False, status_code: int = 200
    ) -> Response:
        locale = locale_of(request)
        return page(
            ctx,
            request,
            "confirmations.html",
            {
                "pending": view.pending(locale),
                "recent": view.recent(locale),
                "message": message,
                "message_is_error": error,
            },
            status_code=status_code,
        )

    async def show(request: Request) -> Response:
        ctx.guard(request, "observe")
        message = ""
        answered = request.query_params.get("answered", "")
        if CONFIRMATION_ID.fullmatch(answered):
            row = view.repo.get(answered)
            if row is not None and row.status != "pending":
                message = view.answered_text(row, locale_of(request))
        return render(request, message=message)

    async def answer(request: Request) -> Response:
        cid = str(request.path_params["cid"])
        verb = str(request.path_params["verb"])
        locale = locale_of(request)
        known = CONFIRMATION_ID.fullmatch(cid) is not None
        # the guard first: a remote browser learns nothing about an L3 confirmation
        ctx.guard(request, "approve", risk=view.risk_of(cid) if known else None)
        try:
            if verb not in VERBS or not known:
                raise AnswerRefused(translate("confirmations.unknown", locale, id=cid[:40]))
            row = await asyncio.to_thread(view.answer, cid, verb == "approve", locale)
        except AnswerRefused as refused:
            code = 404 if refused.status is None else 409
            if wants_json(request):
                body = {"ok": False, "status": refused.status, "message": refused.message}
                return JSONResponse(body, status_code=code)
            return render(request, message=refused.message, error=True, status_code=code)
        if wants_json(request):
            return JSONResponse(
                {"ok": True, "status": row.status, "message": view.answered_text(row, locale)}
            )
        return RedirectResponse(f"/confirmations?answered={row.id}", status_code=303)

    return [
        Route("/confirmations", show),
        Route("/confirmations/{cid}/{verb}", answer, methods=["POST"]),
    ]
