"""How a semantic operation says it cannot be done, or is not done yet.

UNSUPPORTED_ACTION is not a failure to the host: it is the signal to fall back to synthetic
input (docs/host-tree.md, "Acting"), so it carries why and, for a missing action, which
actions there are. A call the app has not answered within the action wait counts as dispatched
and says so (docs/host.md, "Actions that open a modal dialog").
"""

from __future__ import annotations

from typing import Any, Final

from deskpilot.host.atspi.model import ElementRef, SemanticOp
from deskpilot.host.atspi.vocab import MAX_ACTIONS_SHOWN
from deskpilot.protocol.errors import DeskpilotError, ErrorCode

#: D-Bus errors meaning "this object cannot do that" (rather than "the call failed")
UNSUPPORTED_ERRORS: Final = frozenset(
    {
        "org.freedesktop.DBus.Error.UnknownMethod",
        "org.freedesktop.DBus.Error.UnknownInterface",
        "org.freedesktop.DBus.Error.UnknownProperty",
        "org.freedesktop.DBus.Error.NotSupported",
        "org.freedesktop.DBus.Error.InvalidArgs",
        "org.freedesktop.DBus.Error.PropertyReadOnly",
    }
)
STILL_RUNNING: Final = "the app has not returned from it yet (possibly a modal dialog)"


def unsupported(
    op: SemanticOp, el: ElementRef, why: str, *, available: list[str] | None = None
) -> DeskpilotError:
    details: dict[str, Any] = {"op": op.kind.value, "role": el.role, "reason": why}
    if available is not None:
        details["actions"] = available[:MAX_ACTIONS_SHOWN]
    return DeskpilotError(
        ErrorCode.UNSUPPORTED_ACTION,
        f"{op.kind.value} is not available semantically on this {el.role}: {why}",
        details=details,
    )
