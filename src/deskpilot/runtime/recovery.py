"""state_changed recovery (docs/mcp.md, "state_changed recovery").

When an action meets an explicit ``state_changed``, the old stateId is dropped but the task and
its remaining budget are kept. Until a new state of the *same* app arrives, only
``get_app_state`` on that app is allowed: no actions, no app launches, no discovery in other
apps. A second ``state_changed`` keeps the first failed operation on record. A new state lifts
the restriction but proves nothing about the failed operation: the agent must look at the UI,
and ask the user when it cannot tell. Refusals, cancellations, budget expiry and other errors
are not recovered from: they stop.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from deskpilot.protocol.errors import ErrorCode
from deskpilot.runtime.diagnostics import ActionOutcome
from deskpilot.runtime.refusals import refusal
from deskpilot.runtime.state_ids import AppKey

#: Tools allowed while recovering (besides get_app_state on the same app): they neither act
#: nor look at other apps.
RECOVERY_NEUTRAL_TOOLS = frozenset(
    {"status", "get_capabilities", "diagnose_native_host", "pause", "resume", "stop", "takeover"}
)


@dataclass
class Recovery:
    app: AppKey
    app_name: str | None
    failed_method: str
    previous_action_outcome: ActionOutcome
    state_changed_count: int = 1
    since: float = field(default_factory=time.time)

    def record_again(self) -> None:
        """Another state_changed: keep the first failed operation, count the repeat."""
        self.state_changed_count += 1

    def same_app(self, app: AppKey, name: str | None = None) -> bool:
        """The app being recovered: the same process, or the same window (a new process in
        it is what state_changed reports), or — once the recorded process has exited — the
        same app restarted (or any app, when its name was never known: it cannot come back
        as itself, and a recovery that can never end would lock the session)."""
        if app.pid is not None and app.pid == self.app.pid:
            return True
        if self.app.window_id and app.window_id == self.app.window_id:
            return True
        if self.app.pid is not None and _alive(self.app.pid):
            return False
        return self.app_name is None or name is None or name == self.app_name

    def check(self, tool: str, app: AppKey | None, name: str | None = None) -> None:
        if tool in RECOVERY_NEUTRAL_TOOLS:
            return
        if tool == "get_app_state" and app is not None and self.same_app(app, name):
            return
        raise refusal(
            ErrorCode.STATE_CHANGED,
            "Recovering from state_changed: only get_app_state on the same app "
            f"({self.describe()}) is allowed until a new state arrives. The new state does not "
            "prove whether the failed operation ran; check the UI before deciding, and ask the "
            "user if you cannot tell. Do not replay the operation blindly.",
            recovery=self.to_json(),
        )

    def describe(self) -> str:
        name = f"{self.app_name}, " if self.app_name else ""
        return f"{name}pid {self.app.pid}"

    def to_json(self) -> dict[str, Any]:
        return {
            "app": {"name": self.app_name, "pid": self.app.pid, "windowId": self.app.window_id},
            "failedMethod": self.failed_method,
            "previousActionOutcome": self.previous_action_outcome.value,
            "stateChangedCount": self.state_changed_count,
            "sinceEpochMs": round(self.since * 1000),
        }


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
