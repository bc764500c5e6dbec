"""A small, real in-process desktop for kernel tests: it satisfies the DesktopBackend protocol
over recorded observations (screens), instead of a host process. It is a stand-in for the
desktop, not for the kernel under test: frames are issued and consumed like the host client
does (an action consumes its frame), actions can take time, and cancel/abort really end them.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from deskpilot.hostclient.api import ActionReply
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.wire import (
    ActionResult,
    AppIdentity,
    Capabilities,
    ExecuteAction,
    Observation,
    Rect,
    TargetSpec,
    WindowInfo,
)


def screen(
    tree: str,
    *,
    app: str = "mousepad",
    window_id: str = "0x1a00003",
    title: str = "Untitled",
    url: str | None = None,
    sensitive: list[Rect] | None = None,
    pid: int = 4242,
) -> Observation:
    """An observation as the host would send it (frameId/treeVersion filled in by observe)."""
    identity = AppIdentity(pid=pid, name=app, executable=app, wm_class=f"{app}\0{app.title()}")
    return Observation(
        id=0,
        frame_id="pending",
        tree_version="pending",
        app=identity,
        window=WindowInfo(
            window_id=window_id,
            title=title,
            bounds=Rect(x=100, y=50, width=800, height=600),
            app=identity,
        ),
        tree=tree,
        element_count=sum(1 for line in tree.splitlines() if line.strip().startswith("- ")),
        url=url,
        sensitive_regions=sensitive or [],
    )


@dataclass
class RecordedBackend:
    """Serves ``screens[session]`` (or ``default``) on observe; actions take ``delay`` s."""

    default: Observation
    screens: dict[str, Observation] = field(default_factory=dict)
    delay: float = 0.0
    executed: list[tuple[str, str]] = field(default_factory=list)  # (session, kind)
    cancelled: list[str] = field(default_factory=list)
    observed: list[str] = field(default_factory=list)
    reconnect_listeners: list[Callable[[], None]] = field(default_factory=list)
    closed: bool = False
    aborted: list[str] = field(default_factory=list)
    fail_with: ErrorCode | None = None
    #: the screenshot every observation carries (a real image for the kernel's OCR outline)
    png: bytes = b"\x89PNG"
    _frames: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _latest: dict[str, Observation] = field(default_factory=dict)
    _bound: dict[str, TargetSpec] = field(default_factory=dict)
    _running: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    _forgotten: set[str] = field(default_factory=set)

    async def capabilities(self) -> Capabilities:
        return Capabilities(id=0, host_version="recorded", available=True)

    async def list_windows(self) -> list[WindowInfo]:
        return [self.default.window, *(o.window for o in self.screens.values())]

    async def observe(
        self,
        session_id: str,
        target: TargetSpec | None = None,
        *,
        include_screenshot: bool = True,
        bind: bool = True,
    ) -> ObservedState:
        base = self.screens.get(session_id, self.default)
        n = next(self._frames)
        version = f"tv-{abs(hash(base.tree)) % 10**8}-{base.element_count}"
        obs = base.model_copy(update={"frame_id": f"f{n}", "tree_version": version})
        if bind:
            self._latest[session_id] = obs
        self.observed.append(session_id)
        return ObservedState(obs, self.png if include_screenshot else None)

    async def execute(self, request: ExecuteAction) -> ActionReply:
        session_id = request.session_id or ""
        frame_id, action = request.frame_id, request.action
        if session_id in self._forgotten:
            raise DeskpilotError(ErrorCode.SESSION_CANCELED, "session was cancelled")
        latest = self._latest.get(session_id)
        if latest is None or latest.frame_id != frame_id:
            raise DeskpilotError(ErrorCode.STALE_FRAME, "not the latest frame")
        self._latest.pop(session_id, None)  # an action consumes its frame
        if self.delay:
            task = asyncio.ensure_future(asyncio.sleep(self.delay))
            self._running[session_id] = task
            try:
                await task
            except asyncio.CancelledError:
                raise DeskpilotError(ErrorCode.SESSION_CANCELED, "aborted while running") from None
            finally:
                self._running.pop(session_id, None)
        if self.fail_with is not None:
            raise DeskpilotError(self.fail_with, "recorded failure")
        self.executed.append((session_id, action.kind))
        result = ActionResult(id=0, dispatched=True, method="semantic", kind=action.kind)
        if not request.observe_after:
            return ActionReply(result)
        # the screen the session now shows, as the host would carry it, with the windows
        post = await self.observe(session_id)
        windows = tuple(await self.list_windows())
        return ActionReply(
            result.model_copy(update={"observation": post.observation}),
            ObservedState(post.observation, post.png, windows),
        )

    async def capture(self, session_id: str, target: TargetSpec | None = None) -> ObservedState:
        return await self.observe(session_id, target)

    async def cancel_session(self, session_id: str) -> None:
        self.cancelled.append(session_id)
        self._forgotten.add(session_id)
        self._latest.pop(session_id, None)

    async def abort_session(self, session_id: str, reason: str = "stop requested") -> bool:
        task = self._running.get(session_id)
        if task is None or task.done():
            return False
        self.aborted.append(session_id)
        task.cancel()
        return True

    async def bind_target(self, session_id: str, target: TargetSpec) -> None:
        self._bound[session_id] = target

    def on_reconnect(self, callback: Callable[[], None]) -> None:
        self.reconnect_listeners.append(callback)

    def reconnect(self) -> None:
        """As if a new host replaced the old one: it knows none of the frames."""
        self._latest.clear()
        for callback in self.reconnect_listeners:
            callback()

    async def close(self) -> None:
        self.closed = True
