"""The desktop backend the kernel uses, over the supervised host connection.

It adds two pieces of per-session state on top of the raw client:

- an observation cache with frame identity: an action must name the frameId of the session's
  latest observation, or it fails with ``stale_frame`` before anything reaches the host. An
  action consumes the frame (the host drops its binding after every action), unless the
  action's result carries a complete post-action observation, which becomes the new latest.
  A reconnect clears the whole cache: a new host has none of the old frames.
- target bindings: a session bound to a window (or app) observes that, not whatever has the
  focus. Bindings survive reconnects; cancelling the session drops them.

Every observation and capture passes the vault's privacy gate before it is returned or cached:
credential apps are never captured.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from deskpilot.hostclient.api import ObservedState
from deskpilot.hostclient.config import HostConfig
from deskpilot.hostclient.supervisor import HostSupervisor
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.privacy import assert_capture_allowed
from deskpilot.protocol.wire import (
    Action,
    ActionResult,
    Capabilities,
    Observation,
    TargetSpec,
    WindowInfo,
)

log = logging.getLogger(__name__)

MAX_CANCELLED_SESSIONS = 1024


@dataclass(frozen=True, slots=True)
class _Cached:
    state: ObservedState
    generation: int


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
        self.supervisor.on_reconnect(self._on_reconnect)
        self._cache: dict[str, _Cached] = {}
        self._bindings: dict[str, TargetSpec] = {}
        self._cancelled: OrderedDict[str, None] = OrderedDict()

    # ------------------------------------------------------------------ state

    def _on_reconnect(self) -> None:
        dropped = len(self._cache)
        self._cache.clear()
        if dropped:
            log.info("host reconnected: %d cached observations dropped", dropped)

    def latest_observation(self, session_id: str) -> Observation | None:
        cached = self._cache.get(session_id)
        return cached.state.observation if cached else None

    def latest_state(self, session_id: str) -> ObservedState | None:
        cached = self._cache.get(session_id)
        return cached.state if cached else None

    def latest_screenshot(self, session_id: str) -> bytes | None:
        cached = self._cache.get(session_id)
        return cached.state.png if cached else None

    def clear_observations(self, session_id: str | None = None) -> None:
        if session_id is None:
            self._cache.clear()
        else:
            self._cache.pop(session_id, None)

    def binding(self, session_id: str) -> TargetSpec | None:
        return self._bindings.get(session_id)

    async def bind_target(self, session_id: str, target: TargetSpec) -> None:
        self._bindings[session_id] = target.model_copy()
        self._cache.pop(session_id, None)  # the latest frame was of another target

    def status(self) -> dict[str, Any]:
        out = self.supervisor.status().to_dict()
        out["cachedObservations"] = len(self._cache)
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
    ) -> ObservedState:
        chosen = target if target is not None else self._bindings.get(session_id)
        client = await self.supervisor.acquire(session_id)
        generation = self.supervisor.generation
        obs, png = await client.observe(
            session_id=session_id, target=chosen, include_screenshot=include_screenshot
        )
        try:
            assert_capture_allowed(obs.app)
        except DeskpilotError:
            self._cache.pop(session_id, None)
            raise
        state = ObservedState(obs, png)
        if generation == self.supervisor.generation:
            self._cache[session_id] = _Cached(state, generation)
        return state

    async def capture(self, session_id: str, target: TargetSpec | None = None) -> ObservedState:
        """A screenshot only; its observation carries identity and no tree, is never cached
        and cannot be acted on."""
        chosen = target if target is not None else self._bindings.get(session_id)
        client = await self.supervisor.acquire(session_id)
        result, png = await client.capture(session_id=session_id, target=chosen)
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

    # ------------------------------------------------------------------ actions

    async def execute(
        self,
        session_id: str,
        frame_id: str,
        tree_version: str,
        action: Action,
        *,
        observe_after: bool = False,
    ) -> ActionResult:
        if session_id in self._cancelled:
            raise DeskpilotError(
                ErrorCode.SESSION_CANCELED,
                f"session {session_id!r} was cancelled; start a new session",
                retryable=False,
            )
        cached = self._cache.get(session_id)
        latest = cached.state.observation.frame_id if cached else None
        if cached is None or latest != frame_id or cached.generation != self.supervisor.generation:
            raise DeskpilotError(
                ErrorCode.STALE_FRAME,
                f"frame {frame_id!r} is not this session's latest observation"
                + (f" ({latest!r})" if latest else " (there is none)")
                + "; observe again",
                details={"frameId": frame_id, "latestFrameId": latest},
            )
        client = await self.supervisor.acquire(session_id)
        # The host forgets its binding after any action; so do we, unless the result
        # carries a complete post-action observation.
        self._cache.pop(session_id, None)
        result, png = await client.execute_action(
            session_id=session_id,
            frame_id=frame_id,
            tree_version=tree_version,
            action=action,
            observe_after=observe_after,
        )
        body = result.observation
        if body is not None:
            try:
                assert_capture_allowed(body.app)
            except DeskpilotError:
                return result.model_copy(update={"observation": None})
            post = Observation(id=result.id, **body.model_dump())
            self._cache[session_id] = _Cached(ObservedState(post, png), self.supervisor.generation)
        return result

    # ------------------------------------------------------------------ sessions

    async def cancel_session(self, session_id: str) -> None:
        """The host forgets the session (it is not killed); its budget, cache and binding go."""
        self._cancelled[session_id] = None
        while len(self._cancelled) > MAX_CANCELLED_SESSIONS:
            self._cancelled.popitem(last=False)
        self._cache.pop(session_id, None)
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
