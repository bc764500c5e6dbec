"""The desktop backend the kernel uses, over the supervised host connection.

It keeps one piece of per-session state on top of the raw client: target bindings (a session
bound to a window or app observes that, not whatever has the focus). Bindings survive
reconnects; cancelling the session drops them. It keeps no observation cache: an action's
frame is checked by the kernel (which knows the session's current observation) and again by
the host; a reconnect is announced through ``on_reconnect`` so the kernel forgets its frames.

Every observation and capture passes the vault's privacy gate before it is returned, and so
does the state an action carries back: credential apps are never captured.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from deskpilot.hostclient.api import ActionReply
from deskpilot.hostclient.config import HostConfig
from deskpilot.hostclient.supervisor import HostSupervisor
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.privacy import assert_capture_allowed, is_capture_allowed
from deskpilot.protocol.wire import (
    Capabilities,
    CaptureResult,
    ExecuteAction,
    Observation,
    TargetSpec,
    WindowInfo,
)

log = logging.getLogger(__name__)

MAX_CANCELLED_SESSIONS = 1024


class HostBackend:
    """Implements ``deskpilot.hostclient.api.DesktopBackend`` over the native host."""

    def __init__(
        self,
        config: HostConfig | None = None,
        *,
        supervisor: HostSupervisor | None = None,
        heartbeat: bool = True,
    ) -> None:
        self.supervisor = supervisor or HostSupervisor(config, heartbeat=heartbeat)
        self._bindings: dict[str, TargetSpec] = {}
        self._cancelled: OrderedDict[str, None] = OrderedDict()

    # ------------------------------------------------------------------ state

    def on_reconnect(self, callback: Callable[[], None]) -> None:
        self.supervisor.on_reconnect(callback)

    def binding(self, session_id: str) -> TargetSpec | None:
        return self._bindings.get(session_id)

    async def bind_target(self, session_id: str, target: TargetSpec) -> None:
        self._bindings[session_id] = target.model_copy()

    def status(self) -> dict[str, Any]:
        out = self.supervisor.status().to_dict()
        out["targetBindings"] = len(self._bindings)
        return out

    async def close(self) -> None:
        await self.supervisor.close()

    # ------------------------------------------------------------------ reads

    async def capabilities(self) -> Capabilities:
        client = await self.supervisor.acquire(None)
        return await client.get_capabilities()

    async def list_windows(self) -> list[WindowInfo]:
        client = await self.supervisor.acquire(None)
        return await client.list_windows()

    async def observe(
        self,
        session_id: str,
        target: TargetSpec | None = None,
        *,
        include_screenshot: bool = True,
        bind: bool = True,
    ) -> ObservedState:
        chosen = target if target is not None else self._bindings.get(session_id)
        client = await self.supervisor.acquire(session_id)
        obs, png = await client.observe(
            session_id=session_id if bind else None,
            target=chosen,
            include_screenshot=include_screenshot,
        )
        assert_capture_allowed(obs.app)
        return ObservedState(obs, png)

    async def capture(self, session_id: str, target: TargetSpec | None = None) -> ObservedState:
        """A screenshot only; its observation carries identity and no tree, is never cached
        and cannot be acted on."""
        chosen = target if target is not None else self._bindings.get(session_id)
        client = await self.supervisor.acquire(session_id)
        result, png = await client.capture(session_id=session_id, target=chosen)
        assert result.window is not None  # checked by the client: a window was asked for
        assert_capture_allowed(result.window.app)
        observation = Observation(
            id=result.id,
            frame_id=f"capture-{result.id}",
            tree_version="",
            app=result.window.app,
            window=result.window,
            tree="",
            element_count=0,
            image=result.image,
            timings_ms={"capture": result.capture_ms} if result.capture_ms is not None else {},
        )
        return ObservedState(observation, png)

    async def live_frame(
        self,
        target: TargetSpec | None,
        *,
        quality: int | None = None,
        timeout: float | None = None,
    ) -> tuple[CaptureResult, bytes]:
        """A live-view frame: JPEG, with the pointer and the windows it shows; the whole
        screen when ``target`` is None. Not tied to any session. Privacy is checked again
        here: the window must be one that may be captured, and every window of an app that
        is never captured in the picture must have been painted out by the host."""
        client = await self.supervisor.acquire(None)
        result, jpeg = await client.capture(
            session_id=None,
            target=target,
            timeout=timeout,
            screen=target is None,
            image_format="jpeg",
            quality=quality,
            include_pointer=True,
        )
        if result.window is not None:
            assert_capture_allowed(result.window.app)
        withheld = {(r.x, r.y, r.width, r.height) for r in result.withheld or ()}
        for shown in result.windows or ():
            if not is_capture_allowed(shown.app) and not _withheld(shown, withheld, result):
                raise DeskpilotError(
                    ErrorCode.SENSITIVE_INPUT_BLOCKED,
                    "the host sent a frame that shows a never-captured app; it was dropped",
                    details={"reason": "credential_app", "windowId": shown.window_id},
                )
        return result, jpeg

    # ------------------------------------------------------------------ actions

    async def execute(self, request: ExecuteAction) -> ActionReply:
        session_id = request.session_id or ""
        if session_id in self._cancelled:
            raise DeskpilotError(
                ErrorCode.SESSION_CANCELED,
                f"session {session_id!r} was cancelled; start a new session",
                retryable=False,
            )
        client = await self.supervisor.acquire(session_id)
        result, png = await client.execute_action(request)
        body = result.observation
        if body is None:
            return ActionReply(result)
        try:
            assert_capture_allowed(body.app)
        except DeskpilotError:
            return ActionReply(result.model_copy(update={"observation": None, "windows": None}))
        post = Observation(id=result.id, **body.model_dump())
        windows = tuple(result.windows) if result.windows is not None else None
        return ActionReply(result, ObservedState(post, png, windows))

    # ------------------------------------------------------------------ sessions

    async def cancel_session(self, session_id: str) -> None:
        """The host forgets the session (it is not killed); its budget, cache and binding go."""
        self._cancelled[session_id] = None
        while len(self._cancelled) > MAX_CANCELLED_SESSIONS:
            self._cancelled.popitem(last=False)
        self._bindings.pop(session_id, None)
        self.supervisor.reset_budget(session_id)
        client = self.supervisor.client
        if client is not None and client.alive:
            try:
                await client.cancel_session(session_id)
            except DeskpilotError as exc:
                # a dead host has forgotten the session anyway
                log.info("cancel_session not delivered: %s", exc.code.value)

    async def abort_session(self, session_id: str, reason: str = "stop requested") -> bool:
        """Stop the session's call in flight by stopping the host (there is no finer way).

        Returns False when the session has nothing in flight (nothing is stopped then).
        """
        client = self.supervisor.client
        if client is None or not client.alive or session_id not in client.pending_sessions():
            return False
        await client.abort(reason)
        return True


def _withheld(
    window: WindowInfo, withheld: set[tuple[int, int, int, int]], result: CaptureResult
) -> bool:
    """The window's part in the picture is one of the rectangles the host painted out."""
    frame = result.rect
    if frame is None:
        return False
    b = window.bounds
    x0, y0 = max(b.x, frame.x), max(b.y, frame.y)
    x1 = min(b.x + b.width, frame.x + frame.width)
    y1 = min(b.y + b.height, frame.y + frame.height)
    return (x1 <= x0 or y1 <= y0) or (x0, y0, x1 - x0, y1 - y0) in withheld
