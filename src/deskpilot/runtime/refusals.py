"""Turning failures into text an agent may read.

An error raised below the runtime (the host, the client, the kernel) can carry text we did not
write: a D-Bus error body, an application's message, a path. None of it is echoed. The agent
gets the error *code* and a message from the table below; only errors the runtime raises itself
(``RuntimeRefusal``) carry their own message and details, because we wrote them.
"""

from __future__ import annotations

import time
from typing import Any

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import REFUSED_BY, SESSION_STATE

#: Codes that are raised before anything reaches the desktop. An action that fails with one
#: of these was certainly not dispatched.
PRE_DISPATCH_CODES = frozenset(
    {
        ErrorCode.STALE_FRAME,
        ErrorCode.STALE_TREE,
        ErrorCode.TREE_PARTIAL,
        ErrorCode.FOCUS_MISMATCH,
        ErrorCode.STATE_ID_INVALID,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.UNSUPPORTED_ACTION,
        ErrorCode.TARGET_NOT_FOUND,
        ErrorCode.TARGET_AMBIGUOUS,
        ErrorCode.ACTION_BLOCKED,
        ErrorCode.APPROVAL_REQUIRED,
        ErrorCode.APPROVAL_DENIED,
        ErrorCode.APPROVAL_MISMATCH,
        ErrorCode.HANDOFF_REQUIRED,
        ErrorCode.SENSITIVE_INPUT_BLOCKED,
        ErrorCode.KILL_SWITCH_ENGAGED,
        ErrorCode.SESSION_NOT_EXECUTABLE,
        ErrorCode.SESSION_NOT_FOUND,
        ErrorCode.INVALID_STATE_TRANSITION,
        ErrorCode.ACTUATOR_LEASE_CONFLICT,
        ErrorCode.TASK_STEP_LIMIT_EXCEEDED,
        ErrorCode.TASK_RUNTIME_EXCEEDED,
        ErrorCode.TASK_NOOP_LIMIT_EXCEEDED,
        ErrorCode.BUDGET_EXHAUSTED,
        ErrorCode.NOT_AVAILABLE_YET,
        ErrorCode.COMPUTER_DISABLED,
        ErrorCode.ENVIRONMENT_UNAVAILABLE,
        ErrorCode.SCREEN_PERMISSION_DENIED,
        ErrorCode.ACCESSIBILITY_PERMISSION_DENIED,
        ErrorCode.INPUT_PERMISSION_DENIED,
        ErrorCode.UNSUPPORTED_PLATFORM,
        ErrorCode.NATIVE_HOST_MISSING,
        ErrorCode.NATIVE_HOST_UNTRUSTED,
        ErrorCode.NATIVE_HOST_INCOMPATIBLE,
        ErrorCode.NATIVE_HOST_REQUEST_CAPACITY_REACHED,
        ErrorCode.NATIVE_HOST_OPERATION_CAPACITY_REACHED,
        ErrorCode.HOST_HANDSHAKE_FAILED,
        ErrorCode.NO_WINDOWS_AVAILABLE,
    }
)


def refused_before_dispatch(exc: BaseException) -> bool:
    """True when ``exc`` proves an action was not sent to the desktop: its code is only ever
    raised before dispatch, or it is the kernel's refusal by the session's state (a session
    already canceled or paused when the action was checked). ``session_canceled`` alone proves
    nothing: an action cut off in flight ends with it too, and that one may have run."""
    if not isinstance(exc, DeskpilotError):
        return False
    if exc.code in PRE_DISPATCH_CODES:
        return True
    return exc.details.get(REFUSED_BY) == SESSION_STATE


#: Stale errors heal themselves once: re-observe, rebuild the action, retry.
SELF_HEALING_CODES = frozenset(
    {ErrorCode.STALE_FRAME, ErrorCode.STALE_TREE, ErrorCode.FOCUS_MISMATCH}
)

SAFE_MESSAGES: dict[ErrorCode, str] = {
    ErrorCode.ENVIRONMENT_UNAVAILABLE: "The desktop environment is not available right now.",
    ErrorCode.COMPUTER_DISABLED: "Computer use is disabled in the settings; nothing was sent.",
    ErrorCode.SCREEN_PERMISSION_DENIED: "Screen capture is not permitted on this desktop.",
    ErrorCode.ACCESSIBILITY_PERMISSION_DENIED: "Accessibility access is not available.",
    ErrorCode.INPUT_PERMISSION_DENIED: "Synthetic input is not permitted on this desktop.",
    ErrorCode.SCREEN_LOCKED: "The screen is locked.",
    ErrorCode.UNSUPPORTED_PLATFORM: "This display server is not supported (X11 only for now).",
    ErrorCode.NATIVE_HOST_MISSING: "The deskpilot host process could not be started.",
    ErrorCode.NATIVE_HOST_UNTRUSTED: "The deskpilot host process failed its trust check.",
    ErrorCode.NATIVE_HOST_INCOMPATIBLE: "The deskpilot host speaks an incompatible protocol.",
    ErrorCode.NATIVE_HOST_UNAVAILABLE: "The deskpilot host process is unavailable.",
    ErrorCode.NATIVE_HOST_REQUEST_CAPACITY_REACHED: "Too many requests are queued; retry shortly.",
    ErrorCode.NATIVE_HOST_OPERATION_CAPACITY_REACHED: "Too many operations in flight; retry.",
    ErrorCode.HOST_HANDSHAKE_FAILED: "The handshake with the host process failed.",
    ErrorCode.PROTOCOL_ERROR: "The host answered with a malformed message.",
    ErrorCode.INVALID_REQUEST: "The request was refused as invalid.",
    ErrorCode.UNSUPPORTED_ACTION: "That action is not supported on this element or backend.",
    ErrorCode.STALE_FRAME: "The state is older than the latest observation. Call get_app_state "
    "again and use the new ids; do not repeat the same call.",
    ErrorCode.STALE_TREE: "The window changed since it was observed. Call get_app_state again "
    "and use the new element ids; do not repeat the same call.",
    ErrorCode.TREE_PARTIAL: "The state's tree is partial or stale (the app was slow or did not "
    "answer; see its header), so its element ids cannot be acted on; nothing was sent. Call "
    "get_app_state again, or act on a point of the state's screenshot.",
    ErrorCode.FOCUS_MISMATCH: "The window that would receive this input is not the session's "
    "target window. Call get_app_state again; if the session is bound to a window that is "
    "gone (see status), pause, bind_target the window you mean, and resume.",
    ErrorCode.TARGET_NOT_FOUND: "The target window or app was not found (it may have closed). "
    "Call list_windows or list_apps, or get_app_state with the app, to see what is there now.",
    ErrorCode.TARGET_AMBIGUOUS: "The target is ambiguous.",
    ErrorCode.NO_WINDOWS_AVAILABLE: "No window is available for that target. This does not "
    "prove that an earlier action did or did not run.",
    ErrorCode.CAPTURE_FAILED: "The window could not be captured.",
    ErrorCode.STATE_CHANGED: "The application's state changed under the action. Only "
    "get_app_state on the same app is allowed until a new state arrives.",
    ErrorCode.STATE_ID_INVALID: "The state_id is not valid. Call get_app_state for a new one.",
    ErrorCode.ACTION_FAILED: "The action failed.",
    ErrorCode.ACTION_TIMEOUT: "The action timed out; its effect is unknown. Observe before "
    "deciding; it is not retried automatically.",
    ErrorCode.ACTION_NOOP: "The action was dispatched but nothing changed in the window.",
    ErrorCode.ACTION_UNCONFIRMED: "The action was dispatched, but its effect could not be seen. "
    "Do not repeat it: call get_app_state and check whether it took effect.",
    ErrorCode.ACTION_BLOCKED: "The action was blocked by policy (the reason code says why). "
    "Do not retry it unchanged; if the task needs it (a password, a purchase, an app outside "
    "the task), ask the user to do this step or to allow it.",
    ErrorCode.APPROVAL_REQUIRED: "The action needs the user's approval.",
    ErrorCode.APPROVAL_DENIED: "The action was not confirmed by the user, so nothing was done.",
    ErrorCode.APPROVAL_MISMATCH: "The approval does not match this action.",
    ErrorCode.HANDOFF_REQUIRED: "The user must take over this step.",
    ErrorCode.SENSITIVE_INPUT_BLOCKED: "Typing into a sensitive field was blocked.",
    ErrorCode.SESSION_CANCELED: "The computer session was canceled.",
    ErrorCode.SESSION_NOT_FOUND: "There is no such computer session.",
    ErrorCode.SESSION_NOT_EXECUTABLE: "The computer session is not in a state that accepts "
    "actions (paused, taken over or stopped).",
    ErrorCode.INVALID_STATE_TRANSITION: "That control is not valid in the current state of the "
    "session (see status: bind_target needs a paused session, resume a paused one).",
    ErrorCode.ACTUATOR_LEASE_CONFLICT: "Another task is driving the desktop.",
    ErrorCode.KILL_SWITCH_ENGAGED: "The kill switch is engaged: computer use is halted and "
    "nothing was done. Do not retry until the person lifts it (Unhalt in the dashboard, or "
    "`deskpilot unhalt`); observing still works. Tell the user.",
    ErrorCode.TASK_STEP_LIMIT_EXCEEDED: "The session's step limit is reached.",
    ErrorCode.TASK_RUNTIME_EXCEEDED: "The session's runtime limit is reached.",
    ErrorCode.TASK_NOOP_LIMIT_EXCEEDED: "Too many consecutive actions changed nothing.",
    ErrorCode.BUDGET_EXHAUSTED: "The bounded budget of this task is spent.",
    ErrorCode.DECISION_MODEL_ERROR: "The decision model failed.",
    ErrorCode.VERIFICATION_FAILED: "Verification failed.",
    ErrorCode.NOT_AVAILABLE_YET: "This tool is not available yet in this build.",
    ErrorCode.SNAPSHOT_NOT_FOUND: "No such snapshot.",
    ErrorCode.SNAPSHOT_TOO_LARGE: "The snapshot is too large.",
    ErrorCode.VAULT_INTEGRITY_ERROR: "A stored snapshot failed its integrity check.",
    ErrorCode.VAULT_KEY_INVALID: "The vault key is not valid.",
    ErrorCode.INTERNAL_ERROR: "An internal error occurred.",
}


#: What to do next, by the reason code a lower layer attached (codes, never free text).
REASON_ADVICE: dict[str, str] = {
    "host_setting_invalid": "A DESKPILOT_* setting in the environment the MCP server was "
    "started with cannot be used (details.settings names it; `deskpilot doctor` run with the "
    "same environment says what it takes). Fix or unset it where the server is started and "
    "start the server again: retrying the call cannot help.",
    "offscreen": "The element is outside the visible part of the window: scroll it into view, "
    "read the state again, then act on it.",
    "no_extents": "The element has no position on screen to click. If a click was refused, "
    "invoke_element uses the element's own action where it has one; if invoke_element was "
    "refused too, it has neither (an icon-only tab of GIMP's docks): reach it by keyboard "
    "(focus a neighbour in its list, then arrow keys or ctrl+Page_Down for tabs) or click "
    "its point on the image.",
    "no_value_interface": "set_value works on editable text fields, on elements with a "
    "value (sliders, spin buttons) and on combo boxes (the text of one of their options); "
    "click, select or type instead.",
    "disabled": "The element is disabled ([disabled] in the tree), as a greyed-out control "
    "is for a person: do what enables it first (fill in the fields it needs, choose an "
    "option), then read the state again.",
    "read_only": "The field is read only ([readonly] in the tree), as it is for a person at "
    "the keyboard: set or type into an editable field, or use the control that changes it.",
    "combo_needs_clicks": "No action of this combo box chooses an option without its popup "
    "open: click the combo box, then click the option in the state that follows.",
    "not_an_option": "set_value on a combo box takes the text of one of its options "
    "(details.optionCount says how many it has): click the combo box to see them.",
    "range_too_long": "The range is longer than the element's text can be selected with keys.",
    "focus_unknown": "Say where the keys go: x and y of this state's image (that point is "
    "clicked first, as a person clicks where they type), or element_id of one of its elements "
    "(focused, else clicked, first; an OCR outline's element is the centre of its text); or "
    "call get_app_state again once the app answers with its whole tree.",
    "unknown_key": "Key names are X keysym names (Return, Tab, Escape, BackSpace, Delete, "
    "Left, Home, Page_Down, F5 …) or single characters, with modifiers ctrl, shift, alt, super "
    "joined by '+'.",
    "covered_point": "Another window is on top of the target window at that point, so "
    "pointer input there would go to it. Semantic element actions (a left click on an "
    "element, invoke_element, set_value) do not need the window in front; pointer input does "
    "(a click at a point, a right click on an element, an OCR outline's element): close or "
    "move what covers it first.",
    "other_menu_open": "A menu of another app (details.menuPid) or of another window is open, "
    "and an open menu takes every key and click until it closes: keys sent now would choose "
    "in it, and a click would only close it. Close it first: get_app_state on that app or "
    "window and press Escape there, or choose its item.",
    "window_resized": "The window was resized since that image: coordinates from it no "
    "longer point at the same place. Call get_app_state and use the new image.",
    "bound_window_closed": "The window this session was bound to has closed, so the binding "
    "was dropped. Call get_app_state with the app (or list_windows) to pick the window to "
    "work on.",
    "desktop_leased": "Another deskpilot process drives this desktop right now (details."
    "holderPid); nothing was sent. Wait (details.retryAfterMs, when known) and read the state "
    "again before retrying, or ask the user to stop the other agent.",
    "not_editable": "type_text and paste go only into an element that takes text (a text "
    "field, an editable document or section, a terminal); to send keys to a control, use "
    "press_key.",
    "no_matching_action": "Use a name from the element's [actions: …] list in the tree (a name "
    "cut short with … matches by its prefix). An element shows no list when its one action is "
    "a plain click (or it has none but toolkit plumbing): click the element instead.",
    "taken_over": "The person took the desktop over (details.takenOverBy, since details.since "
    "in epoch ms) and holds it: every agent action is refused until they hand it back, and "
    "nothing of this call was done. Do not retry now; wait for the person to hand the desktop "
    "back (observing still works), then read the state again before acting: the first result "
    "after the hand back says what changed.",
    "environment_disabled": "The person turned off acting on this kind of desktop in the "
    "settings (details.environment: myDesktop is their own display, privateDesktop a private "
    "desktop deskpilot started); nothing was sent. Observing still works. Do not retry: tell "
    "the user, who can turn it back on in the dashboard's settings.",
    "computer_disabled": "Do not retry: tell the user. The person turns computer use on in "
    "the dashboard's Settings (Computer use enabled) or with `deskpilot settings set enabled "
    "true`; observing still works.",
    "confirmation_denied": "The person denied it (approval_denied). Do not retry it "
    "unchanged; ask the user what they want instead.",
    "confirmation_expired": "The confirmation request expired before the person answered. "
    "Do not retry it at once; asking again later is fine if the user still wants it (the "
    "dashboard tells the person the agent may ask again).",
    "confirmation_abandoned": "The wait for the person's confirmation was cut off (the "
    "session was paused or stopped, or the budget ran out). Observe before deciding.",
    "paused_by_person": "Only the person resumes a session they paused (the dashboard or "
    "`deskpilot session resume`); nothing was changed. Do not retry now: wait for them "
    "(observing still works), then read the state again before acting.",
    "data_class_not_allowed": "The text would go where the task's contract does not allow "
    "it (details.dataClasses: credential — a password or other [secure] field —, financial "
    "or health), so nothing was sent, and the state_id is still valid. Do not retry it and "
    "do not type it elsewhere: ask the user to type it into that field themselves (they can "
    "take the desktop over from the dashboard and hand it back), then read the state again. "
    "An MCP client's session keeps the default contract (docs/policy.md); `deskpilot run` "
    "takes a contract that can allow the class.",
    "desktop_claimed": "Another agent session of this deskpilot server (or of another "
    "deskpilot server on this desktop) took the desktop: its action stopped this agent's "
    "computer session, and nothing of this call was done. To continue, observe again "
    "(get_app_state) and act on the new state: acting takes the desktop back (the session "
    "that acted last holds it) and stops the other agent's session.",
}


class RuntimeRefusal(DeskpilotError):
    """An error the runtime raises itself: its message and details are ours, so they are
    shown. Details must still never contain typed text, UI text or image data."""


def safe_error(exc: BaseException) -> tuple[ErrorCode, str, bool, dict[str, Any]]:
    """(code, message, retryable, details) that are safe to show to an agent."""
    if isinstance(exc, RuntimeRefusal):
        return exc.code, exc.message, exc.retryable, dict(exc.details)
    if isinstance(exc, DeskpilotError):
        details: dict[str, Any] = {}
        # keep only structured, non-textual facts from below
        for key in (
            "reason",
            "reasonCode",
            "riskLevel",
            "policyCode",
            "cause",
            "holderPid",
            "retryAfterMs",
            "optionCount",
            "takenOverBy",
            "since",
            "sessionId",
            "environment",
            "pausedBy",
            "state",
            "approvalMs",
            "engagedAt",
            "windowId",
            "exitCode",  # a host that ended: its exit status (a signal is negative)
            "elementId",  # the element a host refusal is about (combo_needs_clicks …)
            "menuPid",  # other_menu_open: the app whose open menu holds the keys
            "coveringWindow",  # covered_point: the window on top (0x…)
        ):
            value = exc.details.get(key)
            if (
                isinstance(value, str) and len(value) <= 64 and value.replace("_", "").isalnum()
            ) or isinstance(value, int | bool):
                details[key] = value
            elif key == "engagedAt" and isinstance(value, float):
                details[key] = int(value * 1000)  # epoch ms, as ``since`` is
        # the names of the host settings that stopped it (identifiers only, never values)
        names = exc.details.get("settings")
        if isinstance(names, list):
            details["settings"] = [
                n for n in names if isinstance(n, str) and n.isidentifier() and len(n) <= 64
            ]
        # the data classes a contract refused (data_class_not_allowed: "credential,…")
        classes = exc.details.get("dataClasses")
        if isinstance(classes, str):
            details["dataClasses"] = [c for c in classes.split(",") if c.isidentifier()][:8]
        # the agent's own key name, echoed so it sees which part of its chord was refused
        for key in ("key", "chord") if exc.code is ErrorCode.INVALID_REQUEST else ():
            value = exc.details.get(key)
            if isinstance(value, str) and len(value) <= 40 and value.isprintable():
                details[key] = value
        reason = _reason_code(exc)
        if reason is not None:
            details.setdefault("reason", reason)
        message = _situation(exc.code, details) or SAFE_MESSAGES.get(
            exc.code, "The operation failed."
        )
        if reason in REASON_ADVICE:
            message = f"{message} {REASON_ADVICE[reason]}"
        return exc.code, message, exc.retryable, details
    return ErrorCode.INTERNAL_ERROR, SAFE_MESSAGES[ErrorCode.INTERNAL_ERROR], False, {}


def _clock(epoch_ms: object) -> str | None:
    if not isinstance(epoch_ms, int) or isinstance(epoch_ms, bool) or epoch_ms <= 0:
        return None
    return time.strftime("%H:%M:%S", time.localtime(epoch_ms / 1000))


def _who(by: object) -> str:
    """The person, named by where they acted unless that is just "person"."""
    return "the person" if by in (None, "person") else f"the person ({by})"


def _situation(code: ErrorCode, d: dict[str, Any]) -> str | None:
    """The first sentence for refusals whose structured details say who and since when (only
    codes, names checked above and times go in; nothing below the runtime is echoed)."""
    if code is ErrorCode.KILL_SWITCH_ENGAGED:
        when = _clock(d.get("engagedAt"))
        if when is not None:
            return SAFE_MESSAGES[code].replace("is engaged", f"was engaged at {when}", 1)
    reason = d.get("reason")
    if code is ErrorCode.ENVIRONMENT_UNAVAILABLE and reason == "host_setting_invalid":
        names = ", ".join(d.get("settings") or []) or "a DESKPILOT_* setting"
        return f"deskpilot's host refused to start: {names} cannot be used."
    since = _clock(d.get("since"))
    if code is ErrorCode.HANDOFF_REQUIRED and reason == "taken_over":
        if d.get("takenOverBy") == "agent":
            return (
                f"The agent handed the desktop to the person at {since or 'an earlier time'}: "
                "the person has it now; wait and observe."
            )
        return f"The person has the desktop ({_who(d.get('takenOverBy'))} took it over at " + (
            f"{since or 'an earlier time'}): wait and observe."
        )
    if code is ErrorCode.HANDOFF_REQUIRED and reason == "paused_by_person":
        return f"This session was paused by {_who(d.get('pausedBy'))} at {since or '?'}."
    if code is ErrorCode.SESSION_NOT_EXECUTABLE and d.get("state") == "paused":
        by = d.get("pausedBy")
        if by in (None, "agent", "kernel"):
            return (
                f"The computer session is paused (by the agent, since {since or '?'}): call "
                "resume to go on."
            )
        return (
            f"The computer session is paused by {_who(by)} since {since or '?'}; nothing was "
            "done. Only they resume it (the dashboard or `deskpilot session resume`): do not "
            "retry now, wait for them. Observing still works."
        )
    return None


def _reason_code(exc: DeskpilotError) -> str | None:
    """A reason code for the advice table, from structured details only."""
    d = exc.details or {}
    if exc.code is ErrorCode.INVALID_REQUEST and ("key" in d or "chord" in d):
        return "unknown_key"
    if exc.code is ErrorCode.UNSUPPORTED_ACTION and ("actions" in d or "available" in d):
        return "no_matching_action"
    reason = d.get("reason")
    return reason if isinstance(reason, str) and reason in REASON_ADVICE else None


def refusal(code: ErrorCode, message: str, **details: Any) -> RuntimeRefusal:
    return RuntimeRefusal(code, message, details=details or None)


def refusal_from(exc: DeskpilotError) -> RuntimeRefusal:
    """A refusal raised by our own rules below the runtime (the verification engine, the
    decision-model wiring) whose words are written for the agent: keep them, instead of the
    generic safe text that stands in for errors from the host or the kernel."""
    return RuntimeRefusal(exc.code, exc.message, retryable=exc.retryable, details=exc.details)
