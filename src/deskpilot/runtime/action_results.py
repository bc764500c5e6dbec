"""What an action's result tells the agent: the state after it, and whether it may be reused.

The state after the action is the one its result carried (else the window is observed once).
A dialog or a new window the action opened is found in the windows the host listed with that
state (listed here only when it could not) against what the acted-on state knew was open. An
unchanged tree and screenshot is ``action_noop`` — unless the app did not answer the look
(a stale tree): then the effect is unknown and the result says so. The next stateId is
issued only when the reuse conditions of ``runtime/state_reuse.py`` hold and nothing new
opened; otherwise the result says to observe.
"""

from __future__ import annotations

from dataclasses import dataclass

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.wire import ObservationBody, TargetSpec, WindowInfo
from deskpilot.runtime.apps import app_windows, dialogs_of
from deskpilot.runtime.call import Call, ToolOutcome
from deskpilot.runtime.context import ToolContext
from deskpilot.runtime.diagnostics import ObservationOutcome
from deskpilot.runtime.implicit_sessions import ImplicitSession
from deskpilot.runtime.item_clicks import ItemClick
from deskpilot.runtime.refusals import safe_error
from deskpilot.runtime.state_ids import StateRecord
from deskpilot.runtime.state_reuse import reuse_refusals
from deskpilot.runtime.state_view import digest, present
from deskpilot.runtime.targets import list_windows, observe


@dataclass(frozen=True)
class Opened:
    """The windows as they are after the action, and what of them is new."""

    dialogs: list[WindowInfo]  # every dialog of the acted-on window
    app_windows: list[WindowInfo]  # every visible window of its process
    new_dialogs: list[WindowInfo]
    new_windows: list[WindowInfo]


def opened_by(record: StateRecord, obs: ObservationBody, windows: list[WindowInfo]) -> Opened:
    """A dialog is a window of its own: the acted-on window's tree does not show it, and
    without a window manager it does not even take the focus."""
    dialogs = dialogs_of(windows, obs.window.window_id)
    known = record.extras.get("dialogs")
    new_dialogs = [d for d in dialogs if not isinstance(known, set) or d.window_id not in known]
    mine = app_windows(windows, obs.app.pid)
    known_windows = record.extras.get("appWindows")
    new_windows = [
        w
        for w in mine
        if isinstance(known_windows, set)
        and w.window_id not in known_windows
        and w.window_id != obs.window.window_id
        and w not in new_dialogs
    ]
    return Opened(dialogs, mine, new_dialogs, new_windows)


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
        return _unobservable(call, record, summary, clicked, exc)
    obs, png = observed.observation, observed.png
    if clicked is not None:
        summary += "\n" + clicked.note(record.tree, obs.tree)
    windows = (
        list(observed.windows) if observed.windows is not None else await list_windows(ctx, call)
    )
    opened = opened_by(record, obs, windows)
    # an app that did not answer the look after the action shows its last tree and a frozen
    # screenshot: that proves nothing, and input sent to a stopped app waits in the X server
    # for it to run again (repeating it would type twice)
    silent_ms = obs.tree_read.stale_age_ms
    noop = (
        silent_ms is None
        and not opened.new_dialogs
        and not opened.new_windows
        and obs.tree_version == record.tree_version
        and (record.png_digest is None or digest(png) == record.png_digest)
    )
    sess.consecutive_noops = sess.consecutive_noops + 1 if noop else 0
    if noop:
        call.diag.noop = True
        call.diag.code = ErrorCode.ACTION_NOOP.value
        summary = (
            "action_noop: the action was dispatched but nothing changed in the window "
            "(same tree and screenshot). Do not assume it worked; try another element or "
            "approach.\n" + summary
        )
    if silent_ms is not None:
        call.diag.extra["appUnresponsiveMs"] = round(silent_ms)
        summary = (
            f"The app did not answer after the action (silent for {round(silent_ms)} ms: it "
            "is stopped or busy), so its effect cannot be seen yet. Input to an app that is "
            "not running waits until it runs again: do not repeat the action; call "
            "get_app_state until the app answers (no stale= mark), then check.\n" + summary
        )
    summary += _opened_notes(opened, obs)
    refusals = _reuse_refusals(record, observed, opened)
    if refusals:
        call.diag.observation_outcome = ObservationOutcome.NOT_REUSABLE
        call.diag.not_reusable = refusals
        text = (
            f"{summary}\nThe new state cannot be reused ({', '.join(refusals)}). Call "
            "get_app_state before the next action."
        )
        return ToolOutcome(text=text, diagnostic=call.diag, observed=observed)
    shown = present(ctx, call, observed)
    shown.record.extras["dialogs"] = {d.window_id for d in opened.dialogs}
    shown.record.extras["appWindows"] = {w.window_id for w in opened.app_windows}
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
        f"afterwards ({code.value}); it may have closed. That does not prove the action "
        "did or did not reach its goal. Call get_app_state or list_windows before the "
        "next action."
    )
    return ToolOutcome(text=text, diagnostic=call.diag)


def _opened_notes(opened: Opened, obs: ObservationBody) -> str:
    notes = ""
    if opened.new_windows:
        top_new = opened.new_windows[0]  # topmost first
        notes += (
            f'\nA new window of this app opened: "{top_new.title}" (window '
            f"{top_new.window_id}). get_app_state with app={top_new.window_id} shows it."
        )
    if opened.new_dialogs:
        top = opened.new_dialogs[0]
        notes += (
            f'\nA dialog of this window opened: "{top.title}" (window {top.window_id}). '
            f"get_app_state with app={obs.app.pid} shows it (the dialog is chosen over the "
            "window under it)."
        )
    return notes


def _reuse_refusals(record: StateRecord, observed: ObservedState, opened: Opened) -> list[str]:
    obs = observed.observation
    refusals = reuse_refusals(record.app_identity, obs, observed.png)
    if opened.new_dialogs:
        fw = obs.foreground_window
        if fw is not None and fw.window_id in {d.window_id for d in opened.new_dialogs}:
            refusals = [r for r in refusals if r != "popup_or_menu_open"]  # it is the dialog
        refusals.append("dialog_opened")
    if opened.new_windows:
        refusals.append("window_opened")
    return refusals


def summarise(call: Call) -> str:
    steps = ", ".join(f"{s.kind}{'/' + s.method if s.method else ''}" for s in call.diag.steps)
    return f"{call.tool}: {call.diag.action_outcome.value} ({steps})"
