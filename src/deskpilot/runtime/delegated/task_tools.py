"""start_task, get_status and wait_for_completion (docs/delegated.md).

``start_task`` checks, in order, each failure a typed error: the desktop's capabilities, the
turn (halt, stop), the environment, the target (resolved, then bound), the decision model,
the success criteria (derived when none are given; refused when the engine could not decide
them), the contract (the delegated limits, tightened by the caller, never loosened; the
allowed apps default to the target's identity and may only be narrowed). Then the delegated
session is opened, the desktop claimed, and the operator launched in the background; any
failure after the claim stops the session again (which releases the desktop). It returns at
once with the task's id.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import (
    DELEGATED_CONTRACT_LIMITS,
    TERMINAL_STATES,
    CancelReason,
    SessionState,
    TaskContract,
    operator_state,
)
from deskpilot.protocol.wire import TargetSpec
from deskpilot.provider import Provider
from deskpilot.runtime.apps import AppEntry
from deskpilot.runtime.call import Call, ToolOutcome
from deskpilot.runtime.context import ToolContext
from deskpilot.runtime.delegated.supervisor import launch
from deskpilot.runtime.observation_tools import json_text
from deskpilot.runtime.preflight import check_may_act, require_desktop
from deskpilot.runtime.refusals import refusal, refusal_from
from deskpilot.runtime.state_view import app_label
from deskpilot.runtime.targets import resolve_target
from deskpilot.runtime.task_registry import DelegatedTask
from deskpilot.runtime.tool_args import StartTaskArgs, TaskRefArgs, WaitArgs
from deskpilot.runtime.verification import check_specs, derive_criteria

#: wait_for_completion returns at once in these states (the caller has something to do)
RETURN_STATES = frozenset(
    {
        SessionState.COMPLETED,
        SessionState.FAILED,
        SessionState.CANCELED,
        SessionState.PAUSED,
        SessionState.WAITING_APPROVAL,
        SessionState.HANDOFF_REQUIRED,
    }
)
#: what an end the operator did not write itself means (a cancel from outside the task)
END_MESSAGES = {
    "desktop_claimed": "Another agent session acted on the desktop and took it over; the "
    "task was canceled so two agents never drive one desktop. Start it again when the "
    "desktop is free.",
    "kill_switch": "The person pressed the kill switch: every session was canceled and "
    "actions are halted until `deskpilot unhalt`.",
    "shutdown": "The deskpilot process that ran the task stopped.",
    "user_stop": "Stopped by request.",
    "budget_expired": "The bounded budget ran out.",
}
#: how long wait_for_completion waits for an ended run's cleanup
SETTLE_WAIT_S = 10.0


def _one_at_a_time(ctx: ToolContext, call: Call) -> None:
    """One live task per agent session: two operators on one desktop would interleave their
    plans (their actions never overlap, their intentions would)."""
    latest = ctx.tasks.latest(call.agent_session)
    if latest is None:
        return
    state = ctx.kernel.session_state(latest.task_id)
    if state is not None and state not in TERMINAL_STATES:
        raise refusal(
            ErrorCode.INVALID_REQUEST,
            f"Task {latest.task_id} of this agent session is still {state.value}: wait for it "
            "(wait_for_completion) or stop it before starting another.",
            taskId=latest.task_id,
            state=state.value,
        )


def resolve_model(ctx: ToolContext) -> Provider:
    """The configured decision model, or ``decision_model_error`` whose words name the
    command that fixes it (they hold no key: agent/decision_model.py)."""
    try:
        return ctx.decision_model()
    except DeskpilotError as exc:
        if exc.code is not ErrorCode.DECISION_MODEL_ERROR:
            raise
        raise refusal_from(exc) from None


def _contract(args: StartTaskArgs, entry: AppEntry, criteria: list[Any]) -> TaskContract:
    identity = sorted(entry.names())
    allowed = identity
    if args.allowed_apps is not None:
        wanted = [a.strip().lower().removesuffix(".desktop") for a in args.allowed_apps]
        wider = [a for a in wanted if a and a not in entry.names()]
        if not any(wanted):
            raise refusal(
                ErrorCode.INVALID_REQUEST,
                "allowed_apps must name at least one app; omit it to allow the target's own.",
            )
        if wider:
            raise refusal(
                ErrorCode.INVALID_REQUEST,
                "allowed_apps may only narrow the task to its target app "
                f"({app_label(entry.identity)}); it cannot add other apps.",
                targetIdentity=identity,
            )
        allowed = [a for a in wanted if a]
    limits = DELEGATED_CONTRACT_LIMITS
    return TaskContract(
        objective=args.goal,
        success_criteria=criteria,
        max_steps=args.max_steps or limits["max_steps"],
        max_runtime_ms=args.max_runtime_ms or limits["max_runtime_ms"],
        max_consecutive_noops=args.max_consecutive_noops or limits["max_consecutive_noops"],
        allowed_apps=allowed,
    )


async def start_task(ctx: ToolContext, call: Call, args: StartTaskArgs) -> ToolOutcome:
    await require_desktop(ctx, call, acting=True)
    check_may_act(ctx, call)
    if args.environment != "my_desktop":
        raise refusal(
            ErrorCode.INVALID_REQUEST,
            "This build provides governed execution only on my_desktop (the desktop "
            "deskpilot runs on); other environments are not available.",
            environment="my_desktop",
        )
    _one_at_a_time(ctx, call)
    entry, window = await resolve_target(ctx, call, args.app, args.window_id)
    model = resolve_model(ctx)
    try:
        if args.success_criteria:
            criteria, source = list(args.success_criteria), "success_criteria"
            allow = ctx.kernel.settings().allow_external_readback
            try:
                check_specs(criteria, allow_external_readback=allow)
            except DeskpilotError as exc:
                raise refusal_from(exc) from None
        else:
            criteria, source = derive_criteria(
                args.goal, list(args.acceptance_criteria), app_label(entry.identity)
            )
        contract = _contract(args, entry, criteria)
        target = TargetSpec(window_id=window.window_id)
        task_id = await ctx.kernel.open_session(
            call.agent_session, contract, mode="delegated", target=target
        )
    except BaseException:
        await model.aclose()
        raise
    call.session_id = task_id
    task = DelegatedTask(
        task_id=task_id,
        agent_session=call.agent_session,
        goal=args.goal,
        criteria=criteria,
        criteria_source=source,
        acceptance=list(args.acceptance_criteria),
        target={
            "windowId": window.window_id,
            "title": window.title,
            "app": app_label(entry.identity),
            "pid": window.app.pid,
        },
    )
    try:
        await ctx.kernel.claim(task_id)
        ctx.kernel.client_session_began(task.key)  # a later kill switch binds the operator
        sess = ctx.sessions.adopt(task.key, task_id, contract)
        sess.bound_target = {"windowId": window.window_id, "pid": window.app.pid}
        ctx.tasks.add(task)
        launch(ctx, task, model)
    except DeskpilotError as exc:
        await model.aclose()
        if exc.code is not ErrorCode.SESSION_CANCELED:
            await ctx.kernel.stop(task_id, CancelReason.USER_STOP)  # releases the desktop
        ctx.sessions.forget(task.key)
        raise
    return ToolOutcome(
        text=json_text(
            {
                "taskId": task_id,
                "state": _state(ctx, task_id),
                "operator": "running",
                "target": task.target,
                "criteria": task.criteria_json(),
                "criteriaSource": source,
                "contract": {
                    "maxSteps": contract.max_steps,
                    "maxRuntimeMs": contract.max_runtime_ms,
                    "maxConsecutiveNoops": contract.max_consecutive_noops,
                    "allowedApps": contract.allowed_apps,
                },
                "next": "call wait_for_completion (or get_status) with this task_id",
            }
        ),
        diagnostic=call.diag,
    )


def _state(ctx: ToolContext, task_id: str) -> str | None:
    state = ctx.kernel.session_state(task_id)
    return None if state is None else state.value


def find_task(ctx: ToolContext, call: Call, task_id: str | None) -> DelegatedTask:
    task = ctx.tasks.get(task_id) if task_id else ctx.tasks.latest(call.agent_session)
    if task is None:
        raise refusal(
            ErrorCode.SESSION_NOT_FOUND,
            f"No delegated task {task_id!r} in this server."
            if task_id
            else "This agent session has started no delegated task; call start_task first.",
        )
    call.session_id = task.task_id
    return task


def status_of(ctx: ToolContext, task: DelegatedTask) -> dict[str, Any]:
    row = ctx.kernel.session(task.task_id)
    state = row.state if row is not None else None
    contract = row.contract if row is not None else None
    elapsed_ms = round((time.time() - task.started_at) * 1000)
    sess = ctx.sessions.get(task.key)
    steps = row.steps if row is not None else 0
    noops = sess.consecutive_noops if sess is not None else task.final_noops
    out: dict[str, Any] = {
        "taskId": task.task_id,
        "goal": task.goal,
        "state": None if state is None else state.value,
        "operator": "not_running" if state is None else operator_state(state, task.running).value,
        "phase": task.phase,
        "steps": steps,
        "actions": task.actions,
        "consecutiveNoops": noops,
        "elapsedMs": elapsed_ms,
        "budgetLeft": None
        if contract is None
        else {
            "steps": max(0, contract.max_steps - steps),
            "runtimeMs": max(0, contract.max_runtime_ms - elapsed_ms),
            "noops": max(0, contract.max_consecutive_noops - noops),
        },
        "decisions": task.decisions,
        "modelCalls": task.model_calls,
        "runs": task.runs,
        "lastAction": task.last_action,
        "lastVerification": task.last_verification,
        "verificationIds": list(task.verification_ids),
        "criteriaSource": task.criteria_source,
        "target": task.target,
    }
    if row is not None and row.state in TERMINAL_STATES | {SessionState.HANDOFF_REQUIRED}:
        reason = task.end_reason or row.cancel_reason or row.state.value
        out["endReason"] = reason
        message = task.end_message or END_MESSAGES.get(reason)
        if message:
            out["endMessage"] = message[:500]
    if row is not None and row.state == SessionState.PAUSED:
        out["pausedBy"] = row.paused_by
        out["takenOver"] = row.taken_over_by is not None
        out["note"] = paused_note(row.paused_by, row.taken_over_by)
    return out


def paused_note(paused_by: str | None, taken_over_by: str | None) -> str:
    """What a paused task's status tells the agent: who has it and what to do."""
    if taken_over_by is not None:
        return (
            "The person has taken the desktop over: the task waits for them. Wait (observing "
            "still works); the task goes on when they hand back, and what changed is reported."
        )
    if paused_by not in (None, "agent", "kernel"):
        return (
            f"The person ({paused_by}) paused this task: only they resume it (the dashboard "
            "or `deskpilot session resume`). Wait for them; observing still works."
        )
    return "The task is paused: call resume (task_id) to restart its operator."


async def get_status(ctx: ToolContext, call: Call, args: TaskRefArgs) -> ToolOutcome:
    task = find_task(ctx, call, args.task_id)
    return ToolOutcome(text=json_text(status_of(ctx, task)), diagnostic=call.diag)


async def wait_for_completion(ctx: ToolContext, call: Call, args: WaitArgs) -> ToolOutcome:
    task = find_task(ctx, call, args.task_id)
    row, timed_out = await ctx.kernel.wait_for_state(
        task.task_id, RETURN_STATES, args.timeout_ms / 1000.0
    )
    if not timed_out and task.runner is not None and row.state != SessionState.WAITING_APPROVAL:
        # an end (or a pause) is final once the run has settled
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(task.settled.wait(), SETTLE_WAIT_S)
    out = status_of(ctx, task)
    out["timedOut"] = timed_out
    if timed_out:
        out["note"] = "Still running; timedOut is not a failure. Wait again or get_status."
    elif out["state"] == SessionState.FAILED.value:
        out["hint"] = (
            "The task failed. Tell the user what happened (endReason, lastVerification) "
            "and ask how they want to proceed; do not silently retry."
        )
    elif out["state"] == SessionState.WAITING_APPROVAL.value:
        out["hint"] = "An action waits for the person's confirmation (deskpilot confirm)."
    elif out["state"] == SessionState.HANDOFF_REQUIRED.value:
        out["hint"] = "The task needs the person; tell the user why (endReason, endMessage)."
    return ToolOutcome(text=json_text(out), diagnostic=call.diag)
