"""What an action's result tells the agent: what it did, the state after it, and whether that
state may be reused.

The state after the action is the one its result carried (else the window is observed once).
What the result says of the effect — ``action_noop``, ``action_unconfirmed`` and why, or
nothing beyond the new state — is ``runtime/effects.py``'s. Which window the result shows is
``runtime/window_changes.py``'s: a dialog the action opened (observed once more: it is a
window of its own), the window now in front when the acted-on one closed, else the acted-on
window. The next stateId is issued only when the reuse conditions of
``runtime/state_reuse.py`` hold; otherwise the result says to observe.
"""

from __future__ import annotations

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.wire import TargetSpec, WindowInfo
from deskpilot.runtime.call import Call, ToolOutcome
from deskpilot.runtime.context import ToolContext
from deskpilot.runtime.diagnostics import ObservationOutcome
from deskpilot.runtime.effects import Verdict, judge
from deskpilot.runtime.implicit_sessions import ImplicitSession
from deskpilot.runtime.item_clicks import ItemClick
from deskpilot.runtime.refusals import safe_error
from deskpilot.runtime.state_ids import StateRecord
from deskpilot.runtime.state_reuse import reuse_refusals
from deskpilot.runtime.state_view import present
from deskpilot.runtime.targets import list_windows, observe
from deskpilot.runtime.window_changes import (
    new_window_note,
    opened_by,
    remember_windows,
    window_in_front,
)


async def after_action(
    ctx: ToolContext,
    call: Call,
    record: StateRecord,
    target: TargetSpec,
    sess: ImplicitSession,
    post: ObservedState | None,
    clicked: ItemClick | None = None,
) -> ToolOutcome:
    """The state after the action; the next stateId only if it is safe to reuse."""
    summary = summarise(call)
    try:
        observed = post if post is not None else await observe(ctx, call, target, screenshot=True)
    except DeskpilotError as exc:
        if exc.code is ErrorCode.TARGET_NOT_FOUND:
            return await _after_close(ctx, call, record, sess, summary, clicked, exc)
        return _unobservable(call, record, summary, clicked, exc)
    obs = observed.observation
    if clicked is not None:
        summary += "\n" + clicked.note(record.tree, obs.tree)
    windows = (
        list(observed.windows) if observed.windows is not None else await list_windows(ctx, call)
    )
    opened = opened_by(record, obs, windows)
    verdict = judge(call.diag.steps, record, observed, windows_changed=opened.anything)
    summary = _told(call, sess, verdict, summary) + new_window_note(opened)
    extra = ["window_opened"] if opened.new_windows else []
    if opened.new_dialogs:
        dialog = opened.new_dialogs[0]  # topmost first
        shown = await _observe_window(ctx, call, dialog)
        if shown is not None:
            summary += (
                f'\nA dialog of this window opened: "{dialog.title}" (window '
                f"{dialog.window_id}). The state after this action is the dialog's: act on it"
                + (" (it takes the window's input until it closes)." if dialog.modal else ".")
            )
            return _result(ctx, call, record, shown, windows, summary, extra)
        summary += (
            f'\nA dialog of this window opened: "{dialog.title}" (window {dialog.window_id}), '
            f"but it could not be observed yet. get_app_state with app={obs.app.pid} shows it "
            "(the dialog is chosen over the window under it)."
        )
        extra.append("dialog_opened")
    return _result(ctx, call, record, observed, windows, summary, extra)


#: what "effect confirmed" rests on, said with it: the agent may not see it in the tree (a
#: save leaves LibreOffice's tree as it was; a trial asked what had been confirmed)
CONFIRMED_BY = (
    "read back once the app settled: the field's text or the value where it was typed or "
    "set, the document's file where it was saved"
)


def _told(call: Call, sess: ImplicitSession, verdict: Verdict, summary: str) -> str:
    """The verdict in the diagnostic and the session's no-op count; the summary with its
    words in front."""
    sess.consecutive_noops = sess.consecutive_noops + 1 if verdict.noop else 0
    call.diag.noop = verdict.noop
    call.diag.code = verdict.code
    call.diag.effect = verdict.effect
    call.diag.effect_reason = verdict.reason
    if verdict.silent_ms is not None:
        call.diag.extra["appUnresponsiveMs"] = verdict.silent_ms
    if verdict.effect == "confirmed" and not verdict.text:
        # what was read back: a field's text or a value, or a saved document's file
        # (host/effect_checks.py, host/save_effects.py); never the text itself
        return summary + "; effect confirmed (" + CONFIRMED_BY + ")"
    return f"{verdict.text}\n{summary}" if verdict.text else summary


def _result(
    ctx: ToolContext,
    call: Call,
    record: StateRecord,
    observed: ObservedState,
    windows: list[WindowInfo],
    summary: str,
    extra: list[str],
) -> ToolOutcome:
    """The result with ``observed`` as the state after the action, and the next stateId when
    it may be reused."""
    refusals = reuse_refusals(record.app_identity, observed.observation, observed.png, windows)
    refusals += extra
    if refusals:
        call.diag.observation_outcome = ObservationOutcome.NOT_REUSABLE
        call.diag.not_reusable = refusals
        text = (
            f"{summary}\nThe new state cannot be reused ({', '.join(refusals)}). Call "
            "get_app_state before the next action."
        )
        return ToolOutcome(text=text, diagnostic=call.diag, observed=observed)
    shown = present(ctx, call, observed)
    remember_windows(shown.record, windows)
    text = (
        f"{summary}\nNew state below: read it, and act on its state_id (no need to call "
        f"get_app_state again).\n\n{shown.text}"
    )
    return ToolOutcome(
        text=text,
        diagnostic=call.diag,
        image=shown.frame,
        observed=observed,
        state_id=shown.record.state_id,
    )


async def _observe_window(ctx: ToolContext, call: Call, window: WindowInfo) -> ObservedState | None:
    """A look at another window than the one acted on (a dialog that opened, the window in
    front after a close); None when it cannot be observed (gone again, not yet readable)."""
    try:
        return await observe(ctx, call, TargetSpec(window_id=window.window_id), screenshot=True)
    except DeskpilotError:
        return None


async def _after_close(
    ctx: ToolContext,
    call: Call,
    record: StateRecord,
    sess: ImplicitSession,
    summary: str,
    clicked: ItemClick | None,
    exc: DeskpilotError,
) -> ToolOutcome:
    """The acted-on window is gone (a dialog's OK, Cancel or Close): the result shows the
    window now in front of the app, with a stateId when it may be reused. A window that is
    still listed did not close: it could not be observed (``exc``), and the result says so."""
    windows = await list_windows(ctx, call)
    if any(w.window_id == record.app.window_id for w in windows):
        return _unobservable(call, record, summary, clicked, exc)
    sess.consecutive_noops = 0  # a window closed: something happened
    if clicked is not None:
        summary += "\n" + clicked.note(record.tree, None)
    closed = f'The window acted on ("{record.window.title}", window {record.window.window_id})'
    front = window_in_front(record.window, record.app.pid, windows)
    shown = await _observe_window(ctx, call, front) if front is not None else None
    if front is None or shown is None:
        call.diag.observation_outcome = ObservationOutcome.UNAVAILABLE
        call.diag.extra["observationCode"] = ErrorCode.TARGET_NOT_FOUND.value
        rest = (
            "its app shows no other window now (it may have quit)"
            if front is None
            else f'the window now in front, "{front.title}" ({front.window_id}), could not be '
            "observed"
        )
        return ToolOutcome(
            text=f"{summary}\n{closed} closed, and {rest}. Call list_windows or get_app_state "
            "before the next action.",
            diagnostic=call.diag,
        )
    # a window closed: never a no-op; what the host could not see of a step is still said
    summary = _told(
        call, sess, judge(call.diag.steps, record, shown, windows_changed=True), summary
    )
    summary += (
        f'\n{closed} closed. The window now in front of the app is "{front.title}" (window '
        f"{front.window_id}): the state after this action is that window's."
    )
    return _result(ctx, call, record, shown, windows, summary, [])


def _unobservable(
    call: Call, record: StateRecord, summary: str, clicked: ItemClick | None, exc: DeskpilotError
) -> ToolOutcome:
    code, _, _, _ = safe_error(exc)
    call.diag.observation_outcome = ObservationOutcome.UNAVAILABLE
    call.diag.extra["observationCode"] = code.value
    if clicked is not None:
        summary += "\n" + clicked.note(record.tree, None)
    text = (
        f"{summary}\nThe action call returned, but the window could not be observed "
        f"afterwards ({code.value}). That does not prove the action did or did not reach its "
        "goal. Call get_app_state or list_windows before the next action."
    )
    return ToolOutcome(text=text, diagnostic=call.diag)


def summarise(call: Call) -> str:
    steps = ", ".join(f"{s.kind}{'/' + s.method if s.method else ''}" for s in call.diag.steps)
    return f"{call.tool}: {call.diag.action_outcome.value} ({steps})"
