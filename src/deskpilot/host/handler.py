"""Request validation and dispatch: every failure becomes a typed ``error`` response.

Validation order: ``id`` (int or string), ``protocolVersion`` (when given it must be 1, else
``native_host_incompatible``), ``type`` (one of the eight), then the request model with
``extra="forbid"`` (unknown fields → ``invalid_request`` naming the fields, never echoing
values — a request may carry text the user typed).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from typing import Any

from pydantic import ValidationError

from deskpilot import __version__
from deskpilot.host.accessibility import Accessibility
from deskpilot.host.action_dispatch import ActionDispatcher, test_hang_target
from deskpilot.host.capabilities import Probe, enable_accessibility, probe
from deskpilot.host.observer import Captured, Observer
from deskpilot.host.server import Reply, error_response
from deskpilot.host.session_registry import SessionRegistry
from deskpilot.host.window_list import window_infos
from deskpilot.host.x11.desktop import X11Desktop
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.frames import MAX_PAYLOAD_BYTES
from deskpilot.protocol.wire import (
    PROTOCOL_VERSION,
    REQUEST_ADAPTER,
    REQUEST_TYPES,
    Ack,
    CancelSession,
    Capabilities,
    CaptureResult,
    CaptureWindow,
    ExecuteAction,
    GetCapabilities,
    ImageDescriptor,
    ListWindows,
    Observation,
    Observe,
    Permissions,
    Ping,
    PointerPosition,
    Pong,
    Rect,
    RequestPermissions,
    Windows,
)

log = logging.getLogger("deskpilot.host.handler")

CAPABILITIES_CACHE_S = 1.0


def validation_details(exc: ValidationError, tag: str | None = None) -> dict[str, Any]:
    """Where and what kind of problem — never the offending values."""
    unknown: list[str] = []
    problems: list[dict[str, str]] = []
    for err in exc.errors(include_input=False, include_url=False):
        parts = [str(p) for p in err["loc"]]
        if tag is not None and parts and parts[0] == tag:
            parts = parts[1:]  # the union's discriminator, not a field the client sent
        loc = ".".join(parts)
        if err["type"] == "extra_forbidden":
            unknown.append(loc)
        else:
            problems.append({"field": loc, "problem": err["type"]})
    out: dict[str, Any] = {}
    if unknown:
        out["unknownFields"] = unknown[:20]
    if problems:
        out["problems"] = problems[:20]
    return out


class RequestHandler:
    def __init__(self, desktop: X11Desktop, accessibility: Accessibility | None = None) -> None:
        self.desktop = desktop
        self.accessibility = accessibility
        self.sessions = SessionRegistry()
        self.observer = Observer(desktop, accessibility)
        self.actions = ActionDispatcher(desktop, accessibility, self.observer, self.sessions)
        self._probe: tuple[float, Probe] | None = None

    async def start(self) -> None:
        """Runs once before the first request: accessibility on, AT-SPI connected."""
        if self.desktop.capturer is not None and self.desktop.conn is not None:
            with contextlib.suppress(DeskpilotError):  # warm up XShm and learn if it works
                self.desktop.capturer.grab(Rect(x=0, y=0, width=1, height=1))
        if os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
            await enable_accessibility()
            if self.accessibility is None:
                self.accessibility = await Accessibility.connect()
                self.observer.accessibility = self.accessibility
                self.actions.accessibility = self.accessibility

    # ---------------------------------------------------------------- server hooks

    def release_inputs(self) -> None:
        self.desktop.release_inputs()

    def cancel_now(self, raw: dict[str, Any]) -> Reply | None:
        if raw.get("type") != "cancel_session":
            return None
        parsed = self._parse(raw)
        if isinstance(parsed, dict):
            return parsed, None
        assert isinstance(parsed, CancelSession)
        self.sessions.cancel(parsed.session_id)
        self.observer.drop(parsed.session_id)
        if self.actions.running and self.actions.current_session == parsed.session_id:
            self.desktop.release_inputs(keymap_restore=False)
        log.info("session canceled")
        return Ack(id=parsed.id, session_id=parsed.session_id).wire(), None

    # ---------------------------------------------------------------- parsing

    def _parse(self, raw: dict[str, Any]) -> Any:
        """The request model, or an error response dict."""
        request_id = raw.get("id")
        if not isinstance(request_id, int | str) or isinstance(request_id, bool):
            return error_response(
                None,
                ErrorCode.INVALID_REQUEST,
                "a request needs an id (integer or string)",
                {"field": "id"},
            )
        version = raw.get("protocolVersion", raw.get("protocol_version"))
        if version is not None and version != PROTOCOL_VERSION:
            return error_response(
                request_id,
                ErrorCode.NATIVE_HOST_INCOMPATIBLE,
                f"this host speaks protocol version {PROTOCOL_VERSION}",
                {"hostProtocolVersion": PROTOCOL_VERSION, "hostVersion": __version__},
            )
        rtype = raw.get("type")
        if rtype not in REQUEST_TYPES:
            return error_response(
                request_id,
                ErrorCode.INVALID_REQUEST,
                "unknown request type",
                {"type": str(rtype)[:64], "known": list(REQUEST_TYPES)},
            )
        try:
            return REQUEST_ADAPTER.validate_python(raw)
        except ValidationError as exc:
            details = validation_details(exc, str(rtype))
            message = (
                "unknown request fields"
                if "unknownFields" in details
                else f"invalid {rtype} request"
            )
            return error_response(request_id, ErrorCode.INVALID_REQUEST, message, details)

    # ---------------------------------------------------------------- dispatch

    async def handle(self, raw: dict[str, Any]) -> Reply:
        parsed = self._parse(raw)
        if isinstance(parsed, dict):
            return parsed, None
        try:
            if test_hang_target() == parsed.type:
                log.warning("test switch: hanging inside %s", parsed.type)
                await asyncio.Event().wait()
            return await self._dispatch(parsed)
        except DeskpilotError as exc:
            if exc.code is not ErrorCode.STALE_FRAME and exc.code is not ErrorCode.STALE_TREE:
                log.info("%s failed: %s", parsed.type, exc.code.value)
            return error_response(parsed.id, exc.code, exc.message, exc.details or None), None

    async def _dispatch(self, request: Any) -> Reply:
        if isinstance(request, Ping):
            return Pong(id=request.id, host_version=__version__, pid=os.getpid()).wire(), None
        if isinstance(request, GetCapabilities | RequestPermissions):
            return await self._capabilities(request.id), None
        if isinstance(request, ListWindows):
            return await self._windows(request.id), None
        if isinstance(request, CaptureWindow):
            return self._captured(request, await self.observer.capture(request))
        if isinstance(request, Observe):
            body, png = await self.observer.observe(request)
            if png is not None:
                self._check_size(png)
            response = Observation(id=request.id, **body.model_dump())
            return response.wire(), png
        if isinstance(request, ExecuteAction):
            result, post_png = await self.actions.execute(request)
            if post_png is not None:
                self._check_size(post_png)
            return result.wire(), post_png
        if isinstance(request, CancelSession):  # normally answered by cancel_now
            self.sessions.cancel(request.session_id)
            self.observer.drop(request.session_id)
            return Ack(id=request.id, session_id=request.session_id).wire(), None
        raise DeskpilotError(ErrorCode.INVALID_REQUEST, "unhandled request type")

    def _captured(self, request: CaptureWindow, shot: Captured) -> Reply:
        self._check_size(shot.data)
        result = CaptureResult(
            id=request.id,
            window=shot.window.info() if shot.window is not None else None,
            image=ImageDescriptor(
                format=shot.format,
                width=shot.rect.width,
                height=shot.rect.height,
                byte_length=len(shot.data),
            ),
            capture_ms=round(shot.capture_ms, 2),
        )
        if request.extended:
            result.rect = shot.rect
            result.windows = [w.info() for w in shot.windows]
            result.withheld = shot.withheld
            if shot.pointer is not None:
                result.pointer = PointerPosition(x=shot.pointer[0], y=shot.pointer[1])
        return result.wire(), shot.data

    @staticmethod
    def _check_size(png: bytes) -> None:
        if len(png) > MAX_PAYLOAD_BYTES:
            raise DeskpilotError(ErrorCode.SNAPSHOT_TOO_LARGE, "the image exceeds 64 MiB")

    async def _capabilities(self, request_id: Any) -> dict[str, Any]:
        now = time.monotonic()
        if self._probe is None or now - self._probe[0] > CAPABILITIES_CACHE_S:
            self._probe = (now, await probe(self.desktop.conn, self.desktop.connect_error))
        result = self._probe[1]
        capturer = self.desktop.capturer
        ewmh = False
        if self.desktop.lister is not None:
            try:
                ewmh = self.desktop.lister.ewmh_wm()
            except Exception:
                ewmh = False
        session_type = result.session_type
        return Capabilities(
            id=request_id,
            host_version=__version__,
            available=result.available,
            session_type=session_type if session_type in ("x11", "wayland") else "unknown",
            backends=result.backends,
            permissions=Permissions(
                screen=result.screen, accessibility=result.accessibility, input=result.input
            ),
            unavailable_reason=result.reason,
            features={
                "xshm": bool(capturer.uses_shm) if capturer else False,
                "ewmh": ewmh,
                "semanticActions": self.accessibility is not None,
            },
            limits={"maxPayloadBytes": MAX_PAYLOAD_BYTES, "maxCanceledSessions": 64},
        ).wire()

    async def _windows(self, request_id: Any) -> dict[str, Any]:
        windows, ewmh = await window_infos(self.desktop, self.accessibility)
        return Windows(id=request_id, windows=windows, ewmh=ewmh).wire()
