"""The settings page: every setting with its control, Save, and Reset per field.

HTTP only — what the controls are, what a post means and why a value is refused live in
:mod:`deskpilot.oversight.settings_form`. Looking needs ``observe`` (a remote browser may look
when ``remote.observe`` is on); changing needs ``local``: settings are never changed from
another machine. A good post answers 303 back to the page with what was saved (so a reload
does not post again); a refused one answers 400 with the person's values kept and each
reason next to its field.
"""

from __future__ import annotations

from typing import Any

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from deskpilot.oversight import settings_form as sf
from deskpilot.oversight.remote import is_loopback
from deskpilot.store.settings import Settings, SettingsModel
from deskpilot.web.context import DashboardContext
from deskpilot.web.render import page


def _form(data: FormData) -> dict[str, list[str]]:
    return {k: [str(v) for v in data.getlist(k)] for k in data}


def _view(
    request: Request,
    current: SettingsModel,
    *,
    entered: dict[str, Any] | None = None,
    problems: dict[str, sf.Problem] | None = None,
    saved: list[str] | None = None,
    reset: str | None = None,
) -> dict[str, Any]:
    values = sf.values_of(current) | (entered or {})
    peer = request.client.host if request.client else None
    return {
        "sections": sf.sections(),
        "values": values,
        "problems": problems or {},
        "saved": saved or [],
        "reset_name": reset,
        "defaults": {c.name: sf.default_text(c) for c in sf.controls()},
        "changed": {c.name for c in sf.controls() if sf.differs_from_default(c, current)},
        "local": is_loopback(peer),
    }


def _known(names: str) -> list[str]:
    wanted = [n for n in names.split(",") if n]
    return sf.labels(wanted)


def routes(ctx: DashboardContext) -> list[BaseRoute]:
    async def show(request: Request) -> Response:
        ctx.guard(request, "observe")
        saved = request.query_params.get("saved")
        reset = request.query_params.get("reset")
        reset_names = _known(reset) if reset else []
        values = _view(
            request,
            Settings.load(ctx.db),
            saved=_known(saved) if saved else None,
            reset=reset_names[0] if reset_names else None,
        )
        values["nothing_changed"] = saved == "-"
        return page(ctx, request, "settings.html", values)

    async def save(request: Request) -> Response:
        ctx.guard(request, "local")
        outcome, now = sf.save(ctx.db, _form(await request.form()))
        if not outcome.ok:
            values = _view(request, now, entered=outcome.entered, problems=outcome.problems)
            return page(ctx, request, "settings.html", values, status_code=400)
        names = ",".join(sf.labels(outcome.changes)) or "-"
        return RedirectResponse(f"/settings?saved={names}", status_code=303)

    async def reset(request: Request) -> Response:
        ctx.guard(request, "local")
        name = str((await request.form()).get("name", ""))
        sf.reset(ctx.db, name)  # an unknown name is invalid_request: a 400 page
        return RedirectResponse(f"/settings?reset={name}", status_code=303)

    return [
        Route("/settings", show, methods=["GET"]),
        Route("/settings", save, methods=["POST"]),
        Route("/settings/reset", reset, methods=["POST"]),
    ]
