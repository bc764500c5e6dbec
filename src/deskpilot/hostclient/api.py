"""The interface the kernel and runtime use to reach the desktop.

``hostclient.backend`` implements it over the native host process; the kernel depends only on
this protocol, so a reader can see the whole contract in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from deskpilot.protocol.wire import (
    Action,
    ActionResult,
    Capabilities,
    Observation,
    TargetSpec,
    WindowInfo,
)


@dataclass(frozen=True, slots=True)
class ObservedState:
    """An observation with its screenshot (PNG bytes, or None when not requested)."""

    observation: Observation
    png: bytes | None


class DesktopBackend(Protocol):
    async def capabilities(self) -> Capabilities: ...

    async def list_windows(self) -> list[WindowInfo]: ...

    async def observe(
        self,
        session_id: str,
        target: TargetSpec | None = None,
        *,
        include_screenshot: bool = True,
    ) -> ObservedState:
        """Observe the session's bound target (or ``target``, or the foreground window)."""
        ...

    async def execute(
        self,
        session_id: str,
        frame_id: str,
        tree_version: str,
        action: Action,
        *,
        observe_after: bool = False,
    ) -> ActionResult:
        """Run one action; raises DeskpilotError(stale_frame) before reaching the host when
        ``frame_id`` is not the session's latest observation. With ``observe_after`` the
        result may carry the settled post-action observation, which becomes the latest
        (see :meth:`latest_state`)."""
        ...

    async def capture(self, session_id: str, target: TargetSpec | None = None) -> ObservedState:
        """A screenshot only (capture_window); ``observation`` carries window identity."""
        ...

    async def cancel_session(self, session_id: str) -> None: ...

    async def bind_target(self, session_id: str, target: TargetSpec) -> None: ...

    def latest_observation(self, session_id: str) -> Observation | None: ...

    def latest_state(self, session_id: str) -> ObservedState | None:
        """The latest observation with its screenshot (an observe's, or an action's carried
        post-action state)."""
        ...

    def clear_observations(self, session_id: str | None = None) -> None: ...
