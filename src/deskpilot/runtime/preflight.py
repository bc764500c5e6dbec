"""What a tool checks before it touches the desktop.

``check_may_act`` refuses a desktop-changing tool before anything else is looked at (nothing
is dispatched, the stateId is not spent). ``require_desktop`` reads the capabilities on every
call, so a permission lost mid-task shows at once, and says in plain words what to do when
the desktop is not there (the host's own text is never echoed).
"""

from __future__ import annotations

from typing import Any

from deskpilot.protocol.errors import ErrorCode
from deskpilot.protocol.wire import Capabilities, PermissionState
from deskpilot.runtime.call import Call
from deskpilot.runtime.context import ToolContext
from deskpilot.runtime.refusals import RuntimeRefusal, refusal
from deskpilot.runtime.turns import Turn


def check_may_act(ctx: ToolContext, call: Call) -> None:
    """The kill-switch halt (until unhalt or a new client session), the person's takeover
    (until they hand back), a user's stop (for the rest of the turn), and a displacement by
    another agent session (until this one observes again or starts a new turn)."""
    check_may_act_in(ctx, call.agent_session, call.turn)


def check_may_act_in(ctx: ToolContext, agent_session: str, turn: Turn) -> None:
    """``check_may_act`` for an action that is not a desktop tool call (the agent's shell)."""
    ctx.kernel.check_halt(agent_session)
    ctx.kernel.check_takeover(agent_session)  # the person holds the desktop: handoff_required
    if turn.stopped:
        raise refusal(
            ErrorCode.SESSION_CANCELED,
            "The user stopped this task; no more actions in this turn. Report to the user.",
            reason="user_stop",
        )
    ctx.sessions.check_displaced(agent_session, turn.key)


async def require_desktop(ctx: ToolContext, call: Call, *, acting: bool) -> Capabilities:
    """The capabilities, or a refusal that says what is missing (``initializeMs``)."""
    with call.watch.stage("initialize"):
        caps = await ctx.kernel.capabilities()
    if not caps.available:
        code = _unavailable_code(caps.unavailable_reason)
        raise RuntimeRefusal(
            ErrorCode.ENVIRONMENT_UNAVAILABLE,
            "The desktop is not available to deskpilot. "
            + _UNAVAILABLE_ADVICE.get(code or "", "Check `deskpilot doctor`."),
            retryable=code not in ("no_display", "wayland"),  # waiting will not fix these
            details={"reason": code},
        )
    perms = caps.permissions
    if perms.screen is not PermissionState.GRANTED:
        raise refusal(ErrorCode.SCREEN_PERMISSION_DENIED, "Screen capture is not permitted.")
    if perms.accessibility is not PermissionState.GRANTED:
        raise refusal(
            ErrorCode.ACCESSIBILITY_PERMISSION_DENIED, "Accessibility access is not available."
        )
    if acting and perms.input is not PermissionState.GRANTED:
        raise refusal(ErrorCode.INPUT_PERMISSION_DENIED, "Synthetic input is not permitted.")
    return caps


async def capabilities_json(ctx: ToolContext, call: Call) -> dict[str, Any]:
    """Capabilities as data, without refusing on missing permissions (for reporting)."""
    with call.watch.stage("initialize"):
        caps = await ctx.kernel.capabilities()
    return caps.wire()


_UNAVAILABLE_ADVICE = {
    "no_display": "The server has no X display (DISPLAY is not set): start one with "
    "`deskpilot desktop up`, take DISPLAY and DBUS_SESSION_BUS_ADDRESS from `deskpilot desktop "
    "env`, and restart the server with them. Retrying will not help.",
    "display_unreachable": "The X display in DISPLAY does not answer (is the X server "
    "running, and may this user connect?). Check `deskpilot doctor`.",
    "wayland": "This session is Wayland, which is not supported yet (X11 only). Retrying will "
    "not help.",
}


def _unavailable_code(reason: str | None) -> str | None:
    """A reason code for the host's own unavailability text (never echoed itself)."""
    text = (reason or "").lower()
    if _short_code(reason):
        return reason
    if "display is not set" in text:
        return "no_display"
    if "cannot open x display" in text:
        return "display_unreachable"
    if "wayland" in text:
        return "wayland"
    return None


def _short_code(value: str | None) -> bool:
    return bool(value) and len(value or "") <= 64 and (value or "").replace("_", "").isalnum()
