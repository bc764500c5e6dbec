"""The confirmations page and the answers: HTTP in front of
:mod:`deskpilot.oversight.confirmations_view`.

* ``GET /confirmations`` — pending ones (one-time summary, expiry counting down) and the
  recently answered ones below.
* ``POST /confirmations/{id}/approve`` and ``…/deny`` — the same one-time answer as
  ``deskpilot confirm approve|deny``. Guarded as ``approve`` at the confirmation's own risk
  level, so a browser on another machine may answer only ≤ L2 (and only with
  ``remote.approveL2`` on). app.js asks for JSON (``Accept: application/json``) and shows the
  outcome in the notification; a plain form post (no JavaScript) is always answered with a
  303 back to where it came from (its ``next`` field, same-site only; else the page) with
  the outcome as a query flag — ``?answered=<id>`` or ``?refused=<id>&status=<status>`` —
  which the page turns into its sentence, so a reload never posts again. To ``fetch`` a
  refused answer (already answered, expired, unknown) is 409 / 404 JSON with the sentence
  the person reads, never a bare error.
"""

from __future__ import annotations

import asyncio
import re
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from deskpilot.oversight.confirmations_view import (
    AnswerRefused,
    ConfirmationsView,
    intro_text,
    status_text,
)
from deskpilot.oversight.i18n import translate
from deskpilot.web.context import DashboardContext
from deskpilot.web.render import locale_of, page, safe_next, wants_json

#: what the kernel's ids look like (kernel/confirmation.py); anything else is unknown
CONFIRMATION_ID = re.compile(r"cf_[0-9a-f]{12}")
VERBS = ("approve", "deny")
#: the statuses a refused answer's redirect may carry
REFUSED_STATUSES = frozenset({"approved", "consumed", "denied", "expired"})


def _back(target: str, flags: dict[str, str]) -> RedirectResponse:
    join = "&" if "?" in target else "?"
    return RedirectResponse(f"{target}{join}{urlencode(flags)}", status_code=303)


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
                "intro": intro_text(ctx.db, locale),
                "pending": view.pending(locale),
                "recent": view.recent(locale),
                "message": message,
                "message_is_error": error,
            },
            status_code=status_code,
        )

    async def show(request: Request) -> Response:
        ctx.guard(request, "observe")
        locale = locale_of(request)
        message, error = "", False
        answered = request.query_params.get("answered", "")
        refused = request.query_params.get("refused", "")
        if CONFIRMATION_ID.fullmatch(answered):
            row = view.repo.get(answered)
            if row is not None and row.status != "pending":
                message = view.answered_text(row, locale)
        elif refused:
            status = request.query_params.get("status", "")
            error = True
            if status == "expired":
                message = translate("confirmations.expired", locale)
            elif status in REFUSED_STATUSES:
                message = translate(
                    "confirmations.already", locale, status=status_text(status, locale)
                )
            else:
                message = translate("confirmations.unknown", locale, id=refused[:40])
        return render(request, message=message, error=error)

    async def answer(request: Request) -> Response:
        cid = str(request.path_params["cid"])
        verb = str(request.path_params["verb"])
        locale = locale_of(request)
        known = CONFIRMATION_ID.fullmatch(cid) is not None
        back = "/confirmations"
        if not wants_json(request):
            form = await request.form()
            back = safe_next(form.get("next"), "/confirmations")
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
            return _back(back, {"refused": cid[:40], "status": refused.status or "unknown"})
        if wants_json(request):
            return JSONResponse(
                {"ok": True, "status": row.status, "message": view.answered_text(row, locale)}
            )
        return _back(back, {"answered": row.id})

    return [
        Route("/confirmations", show),
        Route("/confirmations/{cid}/{verb}", answer, methods=["POST"]),
    ]
