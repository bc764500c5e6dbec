"""The interface the kernel uses to reach the desktop (and only the kernel uses it).

``hostclient.backend`` implements it over the native host process; the kernel depends only on
this protocol, so a reader can see the whole contract in one place. The backend keeps no
observation cache: freshness of a frame is the kernel's business (where the session's current
observation is known) and the host's (a separate process, which checks it again).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.wire import (
    ActionResult,
    Capabilities,
    ExecuteAction,
    TargetSpec,
    WindowInfo,
)


@dataclass(frozen=True, slots=True)
class ActionReply:
    """What an action brought back from the host: how it ran, and the settled window after it
    (with the desktop's windows then) when that was asked for and could be observed."""

    result: ActionResult
    post: ObservedState | None = None


class DesktopBackend(Protocol):
    async def capabilities(self) -> Capabilities: ...

    async def list_windows(self) -> list[WindowInfo]: ...

    async def observe(
        self,
        session_id: str,
        target: TargetSpec | None = None,
        *,
        include_screenshot: bool = True,
        bind: bool = True,
    ) -> ObservedState:
        """Observe ``target`` (or the session's bound target, or the foreground window). With
        ``bind=False`` the host does not make it the session's frame (a screenshot whose
        secure regions must be known, taken without staling the agent's state)."""
        ...

    async def execute(self, request: ExecuteAction) -> ActionReply:
        """Run one action (the host checks its frame again). With ``observe_after`` the reply
        may carry the settled post-action state."""
        ...

    async def cancel_session(self, session_id: str) -> None: ...

    async def abort_session(self, session_id: str, reason: str = ...) -> bool:
        """End the session's call in flight (False when it has none)."""
        ...

    async def bind_target(self, session_id: str, target: TargetSpec) -> None: ...

    def on_reconnect(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when a new host replaced the old one (it knows none of its
        frames)."""
        ...

    async def close(self) -> None: ...
