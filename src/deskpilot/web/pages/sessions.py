"""The sessions pages: ``/sessions`` (the list), ``/sessions/{id}`` (a session's timeline and
controls), its live stream, its controls, and the snapshot previews those pages show.

Routes only translate HTTP to :mod:`deskpilot.oversight` and back:

* ``GET /sessions?filter=all|live|ended&page=N`` — oversight/sessions_view.py;
* ``GET /sessions/{id}[?observations=1]`` — the head, the controls that apply now and the
  folded timeline (oversight/timeline_view.py);
* ``GET /sessions/{id}/observations`` — the observation cards (JSON), which the page leaves
  out until the person asks for them;
* ``GET /sessions/{id}/stream?after=SEQ`` — server-sent events while the session is live:
  ``card`` (a new or changed card, rendered with the same template as the page), ``state``
  (the head and the controls again, when the state, badge or budget changed) and ``end``;
  the database is polled every :data:`POLL_S`, so changes made by any process show;
* ``POST /sessions/{id}/control`` (``verb``, ``windowId``) — oversight/session_controls.py
  through the kernel's control channel; answers JSON to ``fetch`` (``Accept:
  application/json``) and a redirect (or the page with the error) to a plain form post;
  a refusal is always shown in words;
* ``GET /snapshot/{id}/preview?cap=TOKEN`` — the vault's preview gate, under this origin
  (oversight/previews.py).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from deskpilot.kernel.control_requests import ControlClient
from deskpilot.oversight.error_table import link
from deskpilot.oversight.events import sessions_revision
from deskpilot.oversight.i18n import translate
from deskpilot.oversight.previews import DashboardPreviews, browser_key
from deskpilot.oversight.session_controls import (
    WindowChoice,
    WindowLister,
    available,
    can_change_window,
    parse_verb,
    send,
)
from deskpilot.oversight.sessions_view import (
    FILTERS,
    SessionSummary,
    clock,
    duration_text,
    list_sessions,
    parse_filter,
    parse_page,
    session_row,
    session_summary,
)
from deskpilot.oversight.timeline_view import Card, TimelineFolder, actor_text, answerer_text
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.web.context import DashboardContext, Refused
from deskpilot.web.render import browser_session, locale_of, page, wants_json

#: how often the live stream looks for new events
POLL_SECONDS = 0.25
#: a stream ends this long after its session did (late verification rows still arrive)
END_GRACE_S = 1.0
_CLIENT_CODES = frozenset({ErrorCode.INVALID_REQUEST, ErrorCode.UNSUPPORTED_ACTION})


def _hms(ts: float | None) -> str:
    return time.strftime("%H:%M:%S", time.localtime(ts)) if ts else ""


def _formatters(locale: str) -> dict[str, Any]:
    return {
        "clock": clock,
        "hms": _hms,
        "dur": lambda seconds: duration_text(seconds, locale),
        "actor": lambda by: actor_text(by, locale),
        "answerer": lambda by: answerer_text(by, locale),
    }


def _browser(request: Request) -> str:
    session = browser_session(request)
    return browser_key(session.cookie) if session is not None else "ui:anonymous"


def routes(ctx: DashboardContext) -> list[BaseRoute]:
    previews = DashboardPreviews(ctx.db)
    lister = WindowLister(ctx.host)

    async def cleanup() -> None:
        previews.close()

    ctx.on_shutdown(cleanup)

    def fragment(template: str, request: Request, values: dict[str, Any]) -> str:
        locale = locale_of(request)
        session = browser_session(request)

        def t(key: str, **fields: object) -> str:
            return translate(key, locale, **fields)

        body = {
            "t": t,
            "locale": locale,
            "csrf": session.csrf if session else "",
            **_formatters(locale),
            **values,
        }
        return ctx.templates.get_template(template).render(body)

    def may_control(request: Request) -> bool:
        try:
            ctx.guard(request, "control")
        except Refused:
            return False
        return True

    async def control_values(request: Request, summary: SessionSummary) -> dict[str, Any]:
        """What the controls partial needs: the buttons, and the windows while paused; none
        for a browser the ``remote`` setting does not let control."""
        values: dict[str, Any] = {"s": summary, "controls": available(summary)}
        if summary.live and not may_control(request):
            values.update(controls=[], remote_refused=True)
            return values
        row = session_row(ctx.db, summary.id)
        if summary.live and not ControlClient(ctx.db).owner_alive(row):
            values.update(
                owner_gone=True,
                owner_pid=row.owner_pid or "?",
                controls=[c for c in values["controls"] if c.verb == "stop"],
            )
            return values
        if can_change_window(summary):
            values["change_window"] = True
            values["current_window"] = row.target.window_id if row.target else None
            windows: list[WindowChoice] = []
            try:
                windows = await lister.windows()
            except DeskpilotError as exc:
                values["windows_error"] = exc.message
            values["windows"] = windows
            bound = _window_label(windows, values["current_window"], locale_of(request))
            if bound:
                values["target_label"] = bound
        return values

    async def sessions_list(request: Request) -> Response:
        ctx.guard(request, "observe")
        wanted = parse_filter(request.query_params.get("filter"))
        number = parse_page(request.query_params.get("page"))
        listing = list_sessions(ctx.db, filter=wanted, page=number, locale=locale_of(request))
        values = {
            "listing": listing,
            "filters": FILTERS,
            "revision": sessions_revision(ctx.db),
            **_formatters(locale_of(request)),
        }
        return page(ctx, request, "sessions.html", values)

    def not_found(request: Request, exc: DeskpilotError) -> Response:
        sid = str(request.path_params.get("sid", ""))[:80]
        text = translate("sessions.not_found", locale_of(request), id=sid)
        values = {"message": text, "code": exc.code.value, "title_key": "error.title.not_found"}
        return page(ctx, request, "denied.html", values, status_code=404)

    async def session_page(
        request: Request,
        *,
        control_error: dict[str, str] | None = None,
        status_code: int = 200,
    ) -> Response:
        sid = str(request.path_params["sid"])
        locale = locale_of(request)
        try:
            summary = session_summary(ctx.db, sid, locale=locale)
        except DeskpilotError as exc:
            if exc.code is ErrorCode.SESSION_NOT_FOUND:
                return not_found(request, exc)
            raise
        folder = TimelineFolder(ctx.db, sid, locale, previews=previews.issuer(_browser(request)))
        cards = folder.load()
        show_observations = request.query_params.get("observations") == "1"
        if not show_observations:  # hidden by default: not even sent (the toggle fetches them)
            cards = [c for c in cards if c.kind != "observation"]
        unavailable = previews.unavailable
        values: dict[str, Any] = {
            **await control_values(request, summary),
            "folder": folder,
            "cards": cards,
            "show_observations": show_observations,
            "control_error": control_error,
            "previews_unavailable": unavailable.message if unavailable else None,
            **_formatters(locale),
        }
        return page(ctx, request, "session.html", values, status_code=status_code)

    async def session_detail(request: Request) -> Response:
        ctx.guard(request, "observe")
        return await session_page(request)

    async def observations(request: Request) -> Response:
        """The observation cards, for the page's "show observations" toggle."""
        ctx.guard(request, "observe")
        sid = str(request.path_params["sid"])
        session_row(ctx.db, sid)
        folder = TimelineFolder(ctx.db, sid, locale_of(request))
        shown = [c for c in folder.load() if c.kind == "observation"]
        return JSONResponse(
            {
                "observations": folder.observations,
                "last": folder.last_seq,
                "cards": [card_message(request, c, folder.observations) for c in shown],
            }
        )

    def signature(summary: SessionSummary) -> tuple[Any, ...]:
        b = summary.budget
        return (summary.state, summary.badge, b.steps, b.noops, summary.ended_at, summary.target)

    async def state_message(request: Request, summary: SessionSummary) -> dict[str, Any]:
        values = await control_values(request, summary)
        head = {"s": summary, "target_label": values.get("target_label")}
        return {
            "state": summary.state,
            "badge": summary.badge,
            "live": summary.live,
            "head": fragment("_session_head.html", request, head),
            "controls": fragment("_controls.html", request, values),
        }

    def card_message(request: Request, card: Card, observations: int) -> dict[str, Any]:
        return {
            "id": card.id,
            "pos": card.pos,
            "kind": card.kind,
            "observations": observations,
            "html": fragment("_card.html", request, {"card": card}),
        }

    async def stream(request: Request) -> Response:
        ctx.guard(request, "observe")
        sid = str(request.path_params["sid"])
        session_row(ctx.db, sid)  # session_not_found before any stream starts
        raw_after = request.query_params.get("after", "0")
        if not raw_after.isdigit() or len(raw_after) > 12:
            raise DeskpilotError(ErrorCode.INVALID_REQUEST, "after must be an event number")
        after = int(raw_after)
        locale = locale_of(request)
        folder = TimelineFolder(ctx.db, sid, locale, previews=previews.issuer(_browser(request)))

        async def events() -> AsyncIterator[dict[str, str]]:
            folder.load_until(after)
            seen: tuple[Any, ...] | None = None
            ended_at: float | None = None
            while True:
                for card in folder.poll():
                    data = card_message(request, card, folder.observations)
                    yield {"event": "card", "data": json.dumps(data)}
                summary = session_summary(ctx.db, sid, locale=locale)
                if signature(summary) != seen:
                    seen = signature(summary)
                    data = await state_message(request, summary)
                    yield {"event": "state", "data": json.dumps(data)}
                if not summary.live:
                    ended_at = ended_at or time.monotonic()
                    if time.monotonic() - ended_at >= END_GRACE_S:
                        yield {"event": "end", "data": "{}"}
                        return
                if await request.is_disconnected():
                    return
                await asyncio.sleep(POLL_SECONDS)

        return EventSourceResponse(events(), ping=15, send_timeout=10)

    async def control(request: Request) -> Response:
        ctx.guard(request, "control")
        sid = str(request.path_params["sid"])
        locale = locale_of(request)
        as_json = wants_json(request)
        form = await request.form()
        raw_verb = form.get("verb")
        raw_window = form.get("windowId")
        try:
            verb = parse_verb(raw_verb if isinstance(raw_verb, str) else None)
            label = translate(f"sessions.control.{_LABELS[verb]}", locale)
            await send(
                ctx.db, sid, verb, window_id=raw_window if isinstance(raw_window, str) else None
            )
        except DeskpilotError as exc:
            if exc.code is ErrorCode.SESSION_NOT_FOUND and not as_json:
                return not_found(request, exc)
            status = 400 if exc.code in _CLIENT_CODES else 409
            verb_label = (
                translate(f"sessions.control.{_LABELS[str(raw_verb)]}", locale)
                if str(raw_verb) in _LABELS
                else str(raw_verb or "?")[:20]
            )
            failure = {
                "text": _failure_text(exc, verb_label, locale, str(raw_window or "")[:20]),
                "code": exc.code.value,
                "link": link(exc.code.value),
            }
            if as_json:
                body = {"ok": False, "message": failure["text"], **failure}
                return JSONResponse(body, status_code=status)
            return await session_page(request, control_error=failure, status_code=status)
        if not as_json:
            return RedirectResponse(f"/sessions/{sid}", status_code=303)
        summary = session_summary(ctx.db, sid, locale=locale)
        if verb == "bind_target":
            chosen = str(raw_window)
            try:
                shown = _window_label(await lister.windows(), chosen, locale)
            except DeskpilotError:
                shown = None
            target = shown or translate("sessions.target.window", locale, id=chosen)
            message = translate("sessions.control.window_changed", locale, target=target)
        else:
            state_word = translate(f"sessions.state.{summary.badge}", locale)
            message = translate("sessions.control.done", locale, state=state_word)
        return JSONResponse(
            {
                "ok": True,
                "verb": verb,
                "label": label,
                "message": message,
                **await state_message(request, summary),
            }
        )

    async def preview(request: Request) -> Response:
        ctx.guard(request, "observe")
        raw_path = bytes(request.scope.get("raw_path") or b"").decode("latin-1")
        query = bytes(request.scope.get("query_string") or b"").decode("latin-1")
        host = request.headers.get("host", "")
        answer = previews.serve(request.method, host, raw_path, query, _browser(request))
        head = request.method == "HEAD"
        return Response(
            b"" if head else answer.body,
            status_code=answer.status,
            headers=dict(answer.headers(head=head)),
        )

    return [
        Route("/sessions", sessions_list),
        Route("/sessions/{sid}", session_detail),
        Route("/sessions/{sid}/stream", stream),
        Route("/sessions/{sid}/observations", observations),
        Route("/sessions/{sid}/control", control, methods=["POST"]),
        Route("/snapshot/{snapshot}/preview", preview, methods=["GET", "HEAD"]),
    ]


_LABELS: dict[str, str] = {
    "pause": "pause",
    "takeover": "takeover",
    "resume": "resume",
    "stop": "stop",
    "bind_target": "change_window",
}


def _failure_text(exc: DeskpilotError, verb: str, locale: str, window_id: str = "") -> str:
    """A refused control in words: what the kernel said (it names the session, the process
    and what was or was not done — more than the error table's general sentence), and the
    code, which links to the errors page. A window that is gone (``target_not_found`` from
    Change window) is said plainly, with what to do."""
    if exc.code is ErrorCode.TARGET_NOT_FOUND and window_id:
        return translate("sessions.control.window_gone", locale, id=window_id)
    return translate("sessions.control.failed", locale, verb=verb, message=exc.message)


def _window_label(windows: list[WindowChoice], window_id: str | None, locale: str) -> str | None:
    """A listed window as one clear thing: ``“Calculator” (0x1600003) · gnome-calculator``."""
    if not window_id:
        return None
    for w in windows:
        if w.window_id.lower() == window_id.lower():
            name = (
                translate("sessions.card.titled_window", locale, title=w.title, id=w.window_id)
                if w.title
                else translate("sessions.target.window", locale, id=w.window_id)
            )
            return " · ".join(p for p in (name, w.app) if p)
    return None
