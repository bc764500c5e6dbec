"""What the kill switch is, as everyone outside its thread sees it.

The state (``armed`` / ``watching`` / ``unavailable`` / ``off``, the holder's pid, the cause) is
in :class:`ArmState`, reported by ``status``, ``get_capabilities`` and ``deskpilot doctor`` (see
docs/kernel.md, "Kill switch"). It is a plain value with no X in it, so the kernel and the CLI
can read it without a display.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ArmState:
    armed: bool
    chord: str
    error: str | None = None
    #: armed | watching | unavailable | off ("" = derived from the fields above)
    mode: str = ""
    #: the deskpilot process whose grab we watch (mode watching)
    holder_pid: int | None = None

    @property
    def state(self) -> str:
        if self.mode:
            return self.mode
        if self.armed:
            return "armed"
        return "unavailable" if self.error else "off"

    def to_json(self) -> dict[str, Any]:
        cause = self.error
        if self.state == "watching":
            cause = (
                f"deskpilot process pid {self.holder_pid} already grabs {self.chord}; its "
                "presses are broadcast on the display and stop this process too"
            )
        elif self.state == "off" and not cause:
            cause = "not armed in this process (not started, or the killSwitch setting is empty)"
        return {
            "state": self.state,
            "armed": self.armed,
            "chord": self.chord,
            "holderPid": self.holder_pid,
            "cause": cause,
            "error": self.error,
            # every deskpilot kill switch on this display stops this process
            "sharedOnDisplay": self.state in ("armed", "watching"),
        }


class KillSwitchError(RuntimeError):
    pass


#: how long a refused grab (or a watched holder that is still alive) waits before trying again
RETRY_GRAB_SECONDS = 2.0


def retryable(state: ArmState) -> bool:
    """Watching another process, or refused by a grab that may be let go: try again."""
    if state.state == "watching":
        return True
    return state.state == "unavailable" and "BadAccess" in (state.error or "")
