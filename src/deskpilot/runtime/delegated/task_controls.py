"""pause, takeover, resume, stop and bind_target when the caller has a delegated task.

A control names a task with ``task_id`` (one this agent session started), or means the
caller's latest task while that one is live (not ended); otherwise it is the atomic
session's control (runtime/control_tools.py).

* ``pause`` / ``takeover`` stop the operator (the kernel cancels in-flight input first) and
  keep the session and its budget; the operator shows ``not_running``.
* ``resume`` (from paused, or from handoff_required once the person has done their part)
  restarts the operator on the same session and budget (after a takeover this is the hand
  back: the operator's first state says what the person changed; a takeover made from
  outside this agent is the person's to hand back): the decision model is
  resolved again, the session resumes (re-claiming the desktop), a new run starts; when the
  run cannot start the session is paused again.
* ``stop`` cancels the task with its reason recorded; ``bind_target`` only while paused.
"""

from __future__ import annotations

from deskpilot.protocol.errors import ErrorCode
from deskpilot.protocol.session import TERMINAL_STATES, CancelReason, SessionState
from deskpilot.protocol.wire import TargetSpec
from deskpilot.runtime import control_tools
from deskpilot.runtime.call import Call, ToolOutcome
from deskpilot.runtime.context import ToolContext
from deskpilot.runtime.delegated.supervisor import launch, let_go, stop_watching
from deskpilot.runtime.delegated.task_tools import find_task, resolve_model, status_of
from deskpilot.runtime.observation_tools import json_text
from deskpilot.runtime.preflight import require_desktop
from deskpilot.runtime.refusals import refusal
from deskpilot.runtime.state_view import app_label
from deskpilot.runtime.targets import resolve_target
from deskpilot.runtime.task_registry import DelegatedTask
from deskpilot.runtime.tool_args import (
    BindTargetArgs,
    NoArgs,
    StopArgs,
    TaskBindArgs,
    TaskControlArgs,
    TaskStopArgs,
)


def _task(ctx: ToolContext, call: Call, task_id: str | None) -> DelegatedTask | None:
    if task_id is not None:
        named = find_task(ctx, call, task_id)
        if named.agent_session != call.agent_session:
            # reading another session's task is fine (get_status); steering it is its
            # owner's, or the person's (the kill switch, the dashboard)
            raise refusal(
                ErrorCode.INVALID_REQUEST,
                f"Task {task_id} was started by another agent session; only that session "
                "controls it. get_status and wait_for_completion may still read it.",
            )
        return named
    task = ctx.tasks.latest(call.agent_session)
    if task is None:
        return None
    state = ctx.kernel.session_state(task.task_id)
    if state is None or state in TERMINAL_STATES:
        return None
    call.session_id = task.task_id
    return task


def _answer(ctx: ToolContext, call: Call, task: DelegatedTask, **extra: object) -> ToolOutcome:
    return ToolOutcome(text=json_text({**status_of(ctx, task), **extra}), diagnostic=call.diag)


async def pause(ctx: ToolContext, call: Call, args: TaskControlArgs) -> ToolOutcome:
    task = _task(ctx, call, args.task_id)
    if task is None:
        return await control_tools.pause(ctx, call, NoArgs())
    await ctx.kernel.pause(task.task_id)
    let_go(ctx, task)
    await task.settled.wait()
    return _answer(ctx, call, task, next="call resume (task_id) to restart the operator")


async def takeover(ctx: ToolContext, call: Call, args: TaskControlArgs) -> ToolOutcome:
    task = _task(ctx, call, args.task_id)
    if task is None:
        return await control_tools.takeover(ctx, call, NoArgs())
    sess = ctx.sessions.get(task.key)
    if sess is not None and not ctx.kernel.takeover_state(task.task_id).get("held"):
        sess.takeover_by_tool = True  # this agent's resume may hand it back
    await ctx.kernel.pause(task.task_id, takeover=True)
    let_go(ctx, task)
    await task.settled.wait()
    return _answer(
        ctx,
        call,
        task,
        note="The operator is stopped and the user drives the desktop (every agent action is "
        "refused until the hand back); resume hands it back, and the operator is told what "
        "changed.",
    )


async def resume(ctx: ToolContext, call: Call, args: TaskControlArgs) -> ToolOutcome:
    task = _task(ctx, call, args.task_id)
    if task is None:
        latest = ctx.tasks.latest(call.agent_session)
        if latest is not None and ctx.sessions.get(call.agent_session) is None:
            state = ctx.kernel.session_state(latest.task_id)
            raise refusal(
                ErrorCode.INVALID_STATE_TRANSITION,
                f"Your latest task {latest.task_id} has ended "
                f"({state.value if state else 'unknown'}); there is nothing to resume. "
                "Start a new task.",
                state=state.value if state else None,
            )
        return await control_tools.resume(ctx, call, NoArgs())
    sess = ctx.sessions.get(task.key)
    control_tools.refuse_outside_hand_back(
        ctx, task.task_id, sess is not None and sess.takeover_by_tool
    )
    state = ctx.kernel.session_state(task.task_id)
    if state == SessionState.HANDOFF_REQUIRED and not task.running:
        # the person did what the task needed them for: hand it back the same way a pause
        # is resumed (the session keeps its budget)
        state = await ctx.kernel.pause(task.task_id, by="person")
    if state != SessionState.PAUSED:
        raise refusal(
            ErrorCode.INVALID_STATE_TRANSITION,
            f"Task {task.task_id} is {state.value if state else 'unknown'}; only a paused "
            "task resumes.",
            state=state.value if state else None,
        )
    if task.running:
        await task.settled.wait()
    model = resolve_model(ctx)  # resolved again; a failure leaves the task paused
    stop_watching(task)  # this resume starts the run itself
    try:
        await ctx.kernel.resume(task.task_id)
    except BaseException:
        await model.aclose()
        raise
    try:
        if not launch(ctx, task, model):
            await model.aclose()
    except BaseException:
        await model.aclose()
        await ctx.kernel.pause(task.task_id)
        raise
    return _answer(ctx, call, task)


async def stop(ctx: ToolContext, call: Call, args: TaskStopArgs) -> ToolOutcome:
    task = _task(ctx, call, args.task_id)
    if task is None:
        return await control_tools.stop(ctx, call, StopArgs(reason=args.reason))
    await ctx.kernel.stop(task.task_id, CancelReason.USER_STOP, note=args.reason)
    let_go(ctx, task)
    await task.settled.wait()
    task.end_reason = CancelReason.USER_STOP.value
    task.end_message = args.reason
    return _answer(ctx, call, task, reasonRecorded=args.reason is not None)


async def bind_target(ctx: ToolContext, call: Call, args: TaskBindArgs) -> ToolOutcome:
    task = _task(ctx, call, args.task_id)
    if task is None:
        plain = BindTargetArgs(app=args.app, window_id=args.window_id)
        return await control_tools.bind_target(ctx, call, plain)
    await require_desktop(ctx, call, acting=False)
    entry, window = await resolve_target(ctx, call, args.app, args.window_id)
    row = ctx.kernel.session(task.task_id)
    allowed = {a.lower() for a in row.contract.allowed_apps} if row is not None else set()
    if allowed and not allowed & entry.names():
        # the task may act only on its own app: a window of another app would make every
        # action a policy refusal (and app-level criteria would judge the wrong app)
        raise refusal(
            ErrorCode.INVALID_REQUEST,
            f"That window belongs to {app_label(window.app)}, which this task may not act on "
            "(its allowed apps are its target's). Bind a window of the same app, or stop "
            "this task and start a new one for the other app.",
            allowedApps=sorted(allowed),
        )
    await ctx.kernel.bind_target(task.task_id, TargetSpec(window_id=window.window_id))
    sess = ctx.sessions.get(task.key)
    if sess is not None:
        sess.bound_target = {"windowId": window.window_id, "pid": window.app.pid}
    ctx.states.invalidate(agent_session=task.key, reason="paused")
    task.target = {
        "windowId": window.window_id,
        "title": window.title,
        "app": app_label(window.app),
        "pid": window.app.pid,
    }
    return _answer(ctx, call, task, next="call resume (task_id) to restart the operator")
