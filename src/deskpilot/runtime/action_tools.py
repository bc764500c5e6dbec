"""The ten atomic action tools: one tool call, one user-level action, through the kernel.

A tool call is admitted (halt, stop, displacement, recovery, budget), its plan is checked
against the state it names before that stateId is spent (``runtime/action_plans.py``: one to
three wire actions, a ledger row each), then each step runs through the kernel
(``runtime/action_steps.py``: one self-heal, one fallback), and the result tells the agent
what the window looks like now (``runtime/action_results.py``). A refusal before anything was
dispatched gives the stateId back; ``state_changed`` puts the turn into recovery.
"""

from __future__ import annotations

import asyncio
import dataclasses

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.wire import TargetSpec
from deskpilot.runtime import expectations
from deskpilot.runtime import tool_args as ta
from deskpilot.runtime.action_plans import Frame, build_plan
from deskpilot.runtime.action_results import after_action
from deskpilot.runtime.action_steps import (
    outcome_of,
    overall,
    refuse_denied_later_steps,
    run_step,
)
from deskpilot.runtime.call import Call, ToolOutcome
from deskpilot.runtime.context import ToolContext
from deskpilot.runtime.diagnostics import ActionOutcome
from deskpilot.runtime.item_clicks import ItemClick
from deskpilot.runtime.preflight import check_may_act, require_desktop
from deskpilot.runtime.recovery import Recovery
from deskpilot.runtime.snapshots import ActionEvidence
from deskpilot.runtime.state_ids import StateRecord
from deskpilot.runtime.state_view import app_label
from deskpilot.runtime.targets import observe
from deskpilot.runtime.text_selections import selection_note

#: refusals before anything was sent that leave the state usable: of the action itself, or
#: of the moment (another task holds the desktop; the session is paused — a person's pause
#: from outside this runtime does not void stateIds). Nothing happened, so the stateId is
#: given back; a halt, a stop or a spent budget void or outlast it instead.
REFUSED_BEFORE_DISPATCH = frozenset(
    {
        ErrorCode.UNSUPPORTED_ACTION,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.TREE_PARTIAL,  # the app did not answer in time: try again when it does
        ErrorCode.ACTION_BLOCKED,
        ErrorCode.APPROVAL_DENIED,
        ErrorCode.ACTUATOR_LEASE_CONFLICT,
        ErrorCode.SESSION_NOT_EXECUTABLE,
    }
)


async def act(ctx: ToolContext, call: Call, args: ta.ToolArgs) -> ToolOutcome:
    """Run one action tool: admit, consume the stateId, dispatch, observe, maybe reissue."""
    tool = call.tool
    turn = call.turn
    call.diag.action_outcome = ActionOutcome.NOT_DISPATCHED
    check_may_act(ctx, call)
    if turn.recovery is not None:
        turn.recovery.check(tool, None)
    turn.budget.admit_action()
    expect = getattr(args, "expect", None)
    expectations.admit(ctx, expect)
    state_id = getattr(args, "state_id", "")
    # the plan is checked (element ids) before the stateId is spent: a typo costs nothing
    plan = build_plan(tool, args, ctx.states.check(state_id, turn=turn.key))
    record = ctx.states.consume(state_id, turn=turn.key)
    await require_desktop(ctx, call, acting=True)
    target = TargetSpec(window_id=record.app.window_id)
    try:
        async with ctx.sessions.using(call.agent_session) as sess:
            call.session_id = sess.session_id
            sess.check_contract()
            frame = Frame(record.frame_id, record.tree_version, record.tree)
            # a refused call has no effect: a later step the policy denies refuses the
            # call before its first step (a focus) is dispatched
            await refuse_denied_later_steps(ctx, call, record, plan.steps, frame)
            post: ObservedState | None = None
            clicked: ItemClick | None = None
            # fullRecordingEnabled: the window before and after this call (runtime/snapshots.py)
            evidence = await ActionEvidence.begin(
                ctx.kernel, ctx.snapshots, sess.session_id, target
            )
            for i, step in enumerate(plan.steps):
                if step.pause_before_s > 0:
                    await asyncio.sleep(step.pause_before_s)
                try:
                    gate, frame = await run_step(ctx, call, record, step, frame, target)
                except DeskpilotError:
                    if call.diag.steps and overall(call) is not ActionOutcome.NOT_DISPATCHED:
                        await evidence.finish(ctx.kernel, target, None)  # something went out
                    raise
                evidence.acted(gate.action_id)
                sess.steps += 1
                post = gate.post
                clicked = ItemClick.of(gate.result, getattr(args, "element_id", None))
                if i < len(plan.steps) - 1:
                    if post is None:
                        post = await observe(ctx, call, target, screenshot=False)
                    frame = Frame.of(post.observation)
            call.diag.action_outcome = overall(call)
            await evidence.finish(ctx.kernel, target, post)
            outcome = await after_action(ctx, call, record, target, sess, post, clicked)
            if isinstance(args, ta.SelectTextArgs) and call.diag.steps:
                outcome = _with_line(
                    outcome, selection_note(gate.result, args.element_id, args.start, args.end)
                )
            if expect:
                outcome = await expectations.check(ctx, call, expect, outcome)
            return outcome
    except DeskpilotError as exc:
        call.diag.action_outcome = overall(call) if call.diag.steps else outcome_of(exc)
        if exc.code is ErrorCode.STATE_CHANGED:
            _enter_recovery(ctx, call, record)
        elif (
            call.diag.action_outcome is ActionOutcome.NOT_DISPATCHED
            and exc.code in REFUSED_BEFORE_DISPATCH
        ):
            ctx.states.give_back(record)  # nothing happened: a refusal does not spend it
        raise


def _with_line(outcome: ToolOutcome, line: str) -> ToolOutcome:
    """The outcome with ``line`` after its first line (the call's summary)."""
    head, sep, rest = outcome.text.partition("\n")
    return dataclasses.replace(outcome, text=f"{head}\n{line}{sep}{rest}")


def _enter_recovery(ctx: ToolContext, call: Call, record: StateRecord) -> None:
    turn = call.turn
    if turn.recovery is None:
        turn.recovery = Recovery(
            app=record.app,
            app_name=app_label(record.app_identity),
            failed_method=call.tool,
            previous_action_outcome=call.diag.action_outcome,
        )
    else:
        turn.recovery.record_again()
    ctx.states.invalidate(turn=turn.key, app=record.app, reason="state_changed")
    call.diag.extra["recovery"] = turn.recovery.to_json()
