"""Running one step of a plan through the kernel, healing it once when the frame went stale.

``stale_frame``, ``stale_tree`` and ``focus_mismatch`` heal themselves once: re-observe
(without a screenshot, unless the state was a visual tree: its elements are read from one),
rebuild the action against the new frame (an element is found again by its signature),
retry. A different app in the window is ``state_changed``; a point of an
image is never re-aimed at a resized window. A form the host refuses as unsupported before
dispatch gets its fallback once, on a fresh look (the refused form spent the frame). An
outcome that may have run (``unknown``) is never retried.
"""

from __future__ import annotations

from deskpilot.kernel.port import ExecutedAction
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import Rect, TargetSpec, TreeRead
from deskpilot.runtime.action_plans import Frame, Step
from deskpilot.runtime.call import Call
from deskpilot.runtime.context import ToolContext
from deskpilot.runtime.diagnostics import ActionOutcome, StepRecord
from deskpilot.runtime.refusals import SELF_HEALING_CODES, refusal, refused_before_dispatch
from deskpilot.runtime.state_ids import StateRecord
from deskpilot.runtime.targets import observe
from deskpilot.vision.outline import is_visual_version


def outcome_of(exc: BaseException) -> ActionOutcome:
    if refused_before_dispatch(exc):
        return ActionOutcome.NOT_DISPATCHED
    return ActionOutcome.UNKNOWN


async def run_step(
    ctx: ToolContext, call: Call, record: StateRecord, step: Step, frame: Frame, target: TargetSpec
) -> tuple[ExecutedAction, Frame]:
    assert call.session_id is not None
    healed = False
    used_fallback = False
    build = step.build
    kind = step.kind
    while True:  # at most: one heal and one fallback
        try:
            action = build(frame)
        except DeskpilotError as exc:
            call.diag.steps.append(StepRecord(kind, ActionOutcome.NOT_DISPATCHED, code=exc.code))
            raise
        try:
            call.dispatched = True
            with call.watch.stage("rpc"):
                gate = await ctx.kernel.execute(
                    call.session_id,
                    frame.frame_id,
                    frame.tree_version,
                    action,
                    expected_app=record.app_identity.executable or record.app_identity.name,
                    observe_after=True,
                )
            call.watch.add("approval", gate.approval_ms / 1000.0)
            call.diag.timings.add_toolkit_delay(gate.result.toolkit_delay_ms)
            call.diag.steps.append(
                StepRecord(
                    kind,
                    ActionOutcome.CALL_RETURNED,
                    method=gate.result.method,
                    wait_bound=gate.result.wait_bound,
                    healed=healed,
                    risk=gate.risk.label,
                    action_id=gate.action_id,
                    effect=gate.result.effect,
                    effect_note=gate.result.effect_note,
                )
            )
            return gate, frame
        except DeskpilotError as exc:
            if exc.code in SELF_HEALING_CODES and not healed:
                healed = True
                # a visual (OCR) tree is read from the screenshot: without one, no element
                observed = await observe(ctx, call, target, screenshot=_visual(record))
                obs = observed.observation
                if obs.app.pid != record.app.pid:
                    call.diag.steps.append(
                        StepRecord(kind, ActionOutcome.NOT_DISPATCHED, code="state_changed")
                    )
                    raise refusal(
                        ErrorCode.STATE_CHANGED,
                        "A different application is in the target window now.",
                    ) from None
                if _positional(step) and _size(obs.window.bounds) != _size(record.window.bounds):
                    call.diag.steps.append(
                        StepRecord(kind, ActionOutcome.NOT_DISPATCHED, code="stale_frame")
                    )
                    raise refusal(
                        ErrorCode.STALE_FRAME,
                        "The window was resized since the image these coordinates come from; "
                        "they no longer point at the same place. Call get_app_state and use "
                        "the new image; do not repeat the same call.",
                        reason="window_resized",
                    ) from None
                if getattr(action, "element_id", None) is not None:
                    _refuse_unreadable(call, kind, obs.tree_read)
                frame = Frame.of(obs)
                call.diag.healed += 1
                continue
            if exc.code is ErrorCode.UNSUPPORTED_ACTION and step.fallback and not used_fallback:
                # the refused form spent the frame (kernel and host drop it when an action
                # goes out): the fallback is built on a fresh look, which is not a heal
                used_fallback = True
                build = step.fallback
                observed = await observe(ctx, call, target, screenshot=_visual(record))
                frame = Frame.of(observed.observation)
                continue
            call.diag.steps.append(
                StepRecord(kind, outcome_of(exc), code=exc.code.value, healed=healed)
            )
            raise


async def refuse_denied_later_steps(
    ctx: ToolContext, call: Call, record: StateRecord, steps: list[Step], frame: Frame
) -> None:
    """Rate the plan's later steps before its first is dispatched: a call the policy refuses
    has no effect (a ``type_text`` into a password field denied by the contract does not
    move the focus to that field first). Each later step is built against the state acted
    on; a denial is recorded by the kernel and raised here, nothing dispatched."""
    assert call.session_id is not None
    for step in steps[1:]:
        try:
            await ctx.kernel.refuse_if_denied(
                call.session_id,
                frame.frame_id,
                frame.tree_version,
                step.build(frame),
                expected_app=record.app_identity.executable or record.app_identity.name,
            )
        except DeskpilotError as exc:
            if exc.code in SELF_HEALING_CODES:
                # the state moved on: the first step heals against a new look, and each
                # later step is still rated when it is sent
                return
            call.diag.steps.append(
                StepRecord(step.kind, ActionOutcome.NOT_DISPATCHED, code=exc.code.value)
            )
            raise


def _refuse_unreadable(call: Call, kind: str, read: TreeRead) -> None:
    """An element action cannot heal against a tree that is not complete and current: the
    app did not answer the new look (stopped, or busy past the deadline), or answered only
    part of it. Said as such, without a retry that the host would refuse anyway."""
    if read.reusable:
        return
    sent = overall(call) is not ActionOutcome.NOT_DISPATCHED  # an earlier step went out
    call.diag.steps.append(StepRecord(kind, ActionOutcome.NOT_DISPATCHED, code="tree_partial"))
    unsent = (
        "this step was not sent (an earlier step of this call was)"
        if sent
        else "nothing was sent and the state_id is still yours"
    )
    if read.stale_age_ms is not None:
        raise refusal(
            ErrorCode.TREE_PARTIAL,
            "The app is not answering (it is stopped or busy; the last tree it gave is "
            f"{round(read.stale_age_ms)} ms old), so the element cannot be found in its current "
            f"tree; {unsent}. Call "
            "get_app_state again once the app answers (its header then has no stale= mark), "
            "or act on a point of the state's screenshot.",
            reason="app_not_answering",
            staleAgeMs=round(read.stale_age_ms),
        )
    raise refusal(
        ErrorCode.TREE_PARTIAL,
        f"The app answered only part of its tree in time ({read.partial}), so the element "
        f"cannot be checked against it; {unsent}. Call get_app_state again, or act on a point "
        "of the state's screenshot.",
        reason="tree_partial",
    )


def _visual(record: StateRecord) -> bool:
    """The state acted on had a visual tree: its elements exist only in a screenshot's OCR."""
    return is_visual_version(record.tree_version)


def _positional(step: Step) -> bool:
    return step.kind in ("click", "scroll", "drag") and step.positional


def _size(bounds: Rect) -> tuple[int, int]:
    return bounds.width, bounds.height


def overall(call: Call) -> ActionOutcome:
    outcomes = [s.outcome for s in call.diag.steps]
    if ActionOutcome.UNKNOWN in outcomes:
        return ActionOutcome.UNKNOWN
    if ActionOutcome.CALL_RETURNED in outcomes:
        return ActionOutcome.CALL_RETURNED
    return ActionOutcome.NOT_DISPATCHED
