"""Runs one operator run in the background and settles how it ended.

``launch`` starts a run on the task's session (at start_task, and again on every resume).
When the run ends by itself its ``End`` is written to the kernel (completed / failed /
handoff_required, with its reason code and the verification ids); when it was cut off — a
pause, a takeover, a stop, the kill switch — the kernel already holds the session's state
and reason, and the run only lets go. Either way ``task.settled`` is set last, so a
``wait_for_completion`` that saw the end returns fields that are final.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from deskpilot.protocol.errors import DeskpilotError
from deskpilot.protocol.session import TERMINAL_STATES, CancelReason, SessionState
from deskpilot.provider import Provider
from deskpilot.runtime.context import ToolContext
from deskpilot.runtime.delegated.endings import End, EndKind, ending
from deskpilot.runtime.delegated.operator import Operator
from deskpilot.runtime.task_registry import DelegatedTask

log = logging.getLogger(__name__)

#: how long one wait for a resume lasts before it looks again
WATCH_S = 3600.0

_END_STATES = {
    EndKind.COMPLETED: SessionState.COMPLETED,
    EndKind.FAILED: SessionState.FAILED,
    EndKind.HANDOFF: SessionState.HANDOFF_REQUIRED,
}


def launch(ctx: ToolContext, task: DelegatedTask, model: Provider) -> bool:
    """Start a run (the caller has resolved the model and made the session live); False
    when a run is already going (the caller closes its model)."""
    stop_watching(task)
    if task.running:
        return False
    # each run has its own event: a late callback of the previous run never touches it
    settled = task.settled = asyncio.Event()
    task.runs += 1
    task.end_reason = task.end_message = None
    task.phase = "starting"
    runner = asyncio.get_running_loop().create_task(
        _run(ctx, task, model, settled), name=f"operator {task.task_id}"
    )
    runner.add_done_callback(lambda _: _finished(ctx, task, model, settled))
    task.runner = runner
    return True


def _finished(
    ctx: ToolContext, task: DelegatedTask, model: Provider, settled: asyncio.Event
) -> None:
    """A run cancelled before its first step never ran its own cleanup: settle it now."""
    if settled.is_set():
        return

    async def settle() -> None:
        try:
            await model.aclose()
            await _settle(ctx, task, None)
        finally:
            settled.set()

    asyncio.get_running_loop().create_task(settle(), name=f"settle {task.task_id}")


def stop_watching(task: DelegatedTask) -> None:
    if task.watcher is not None and not task.watcher.done():
        task.watcher.cancel()
    task.watcher = None


async def _watch_resume(ctx: ToolContext, task: DelegatedTask) -> None:
    """While the task is paused, a resume from anywhere (another process: a CLI, the
    dashboard) restarts the operator here, in the process that runs it."""
    wanted = frozenset({SessionState.OBSERVING}) | TERMINAL_STATES
    row, timed_out = await ctx.kernel.wait_for_state(task.task_id, wanted, WATCH_S)
    while timed_out and row.state == SessionState.PAUSED:
        row, timed_out = await ctx.kernel.wait_for_state(task.task_id, wanted, WATCH_S)
    task.watcher = None
    if row.state != SessionState.OBSERVING or task.running:
        return
    await relaunch(ctx, task)


async def relaunch(ctx: ToolContext, task: DelegatedTask) -> None:
    """The task's session was resumed outside this runtime's tools (a control request from
    the dashboard, the kernel's own resume): restart the operator here; when the decision
    model cannot be opened, pause the session again."""
    if task.running:
        return
    try:
        model = ctx.decision_model()
    except DeskpilotError as exc:
        log.warning("task %s resumed elsewhere, but the decision model failed", task.task_id)
        task.end_reason, task.end_message = exc.code.value, exc.message
        with contextlib.suppress(DeskpilotError):
            await ctx.kernel.pause(task.task_id)
        return
    if not launch(ctx, task, model):
        await model.aclose()


def let_go(ctx: ToolContext, task: DelegatedTask) -> None:
    """Stop the run now (a pause, takeover or stop reached the kernel)."""
    if task.runner is not None and not task.runner.done():
        task.runner.cancel()


async def _run(
    ctx: ToolContext, task: DelegatedTask, model: Provider, settled: asyncio.Event
) -> None:
    end: End | None = None
    operator: Operator | None = None
    try:
        async with model:
            operator = Operator(ctx, task, model)
            end = await operator.run()
    except asyncio.CancelledError:
        end = None  # cut off from outside; the kernel holds the state and its reason
    except DeskpilotError as exc:
        end = ending(exc) or End(EndKind.FAILED, exc.code.value, exc.message)
    except Exception:
        log.exception("the operator of task %s failed", task.task_id)
        end = End(EndKind.FAILED, "internal_error", "the operator failed unexpectedly")
    finally:
        try:
            await _settle(ctx, task, end)
        finally:
            if operator is not None:
                task.own_ms += operator.own_ms
            settled.set()


async def _settle(ctx: ToolContext, task: DelegatedTask, end: End | None) -> None:
    kernel = ctx.kernel
    if end is not None:
        task.end_reason, task.end_message = end.reason, end.message
        state = _END_STATES.get(end.kind)
        if state is not None:
            payload: dict[str, object] = {"verificationIds": list(end.verification_ids)}
            if end.kind is not EndKind.COMPLETED:
                payload["message"] = end.message[:500]
            with contextlib.suppress(DeskpilotError):
                await kernel.finish(task.task_id, state, reason=end.reason, payload=payload)
        elif end.kind is EndKind.LET_GO and end.reason == "kill_switch_engaged":
            with contextlib.suppress(DeskpilotError):
                await kernel.stop(task.task_id, CancelReason.KILL_SWITCH)
    row = kernel.session(task.task_id)
    if row is None or row.state in TERMINAL_STATES:
        sess = ctx.sessions.get(task.key)
        if sess is not None:
            task.final_noops = sess.consecutive_noops
        if row is not None and end is None:
            task.end_reason = row.cancel_reason or row.state.value
        ctx.sessions.forget(task.key)
        ctx.states.invalidate(agent_session=task.key, reason="task_ended")
    task.phase = row.state.value if row is not None else "ended"
    if row is not None and row.state == SessionState.PAUSED:
        task.watcher = asyncio.get_running_loop().create_task(
            _watch_resume(ctx, task), name=f"resume watch {task.task_id}"
        )
