"""pause, resume, stop, takeover and bind_target at the runtime level (docs/mcp.md, "Controls").

* ``pause`` and ``takeover`` are both hard pauses: the kernel cancels what is in flight (a
  half-typed text stops, a held button is released), observations are dropped and every
  stateId of the agent session dies. ``takeover`` additionally records that the user holds
  the desktop; it does not move any window or hand over input by itself.
* ``resume`` only works from paused and returns the session to observing. (A delegated
  task's controls are in runtime/delegated/task_controls.py, which falls back to these.)
* ``stop`` ends the session for this task: actions are refused for the rest of the turn; a
  new turn starts afresh. Its ``reason`` is recorded.
* ``bind_target`` is the one way to change the target window, and only while paused.
"""

from __future__ import annotations

import time
from typing import Any

from deskpilot.protocol.session import CancelReason
from deskpilot.protocol.wire import TargetSpec
from deskpilot.runtime.call import Call, ToolOutcome
from deskpilot.runtime.context import ToolContext
from deskpilot.runtime.observation_tools import json_text
from deskpilot.runtime.preflight import require_desktop
from deskpilot.runtime.targets import resolve_target
from deskpilot.runtime.tool_args import BindTargetArgs, NoArgs, StopArgs


async def _session(ctx: ToolContext, call: Call) -> str:
    async with ctx.sessions.using(call.agent_session) as sess:
        call.session_id = sess.session_id
        return sess.session_id


def _answer(call: Call, data: dict[str, Any]) -> ToolOutcome:
    return ToolOutcome(text=json_text(data), diagnostic=call.diag)


async def pause(ctx: ToolContext, call: Call, args: NoArgs) -> ToolOutcome:
    session_id = await _session(ctx, call)
    state = await ctx.kernel.pause(session_id)
    dropped = ctx.states.invalidate(agent_session=call.agent_session, reason="paused")
    # a pause of a taken-over session leaves it taken over: only resume hands it back
    return _answer(
        call, {"sessionId": session_id, "state": state.value, "stateIdsDropped": dropped}
    )


async def takeover(ctx: ToolContext, call: Call, args: NoArgs) -> ToolOutcome:
    session_id = await _session(ctx, call)
    state = await ctx.kernel.pause(session_id, takeover=True)
    dropped = ctx.states.invalidate(agent_session=call.agent_session, reason="paused")
    sess = ctx.sessions.get(call.agent_session)
    if sess is not None:
        sess.taken_over = True
    return _answer(
        call,
        {
            "sessionId": session_id,
            "state": state.value,
            "takenOver": True,
            "stateIdsDropped": dropped,
            "note": "The agent is stopped and the user drives the desktop; call resume when "
            "the user hands it back.",
        },
    )


async def resume(ctx: ToolContext, call: Call, args: NoArgs) -> ToolOutcome:
    session_id = await _session(ctx, call)
    state = await ctx.kernel.resume(session_id)
    sess = ctx.sessions.get(call.agent_session)
    if sess is not None:
        sess.taken_over = False
    return _answer(
        call,
        {"sessionId": session_id, "state": state.value, "next": "call get_app_state"},
    )


async def stop(ctx: ToolContext, call: Call, args: StopArgs) -> ToolOutcome:
    sess = ctx.sessions.get(call.agent_session)
    session_id = sess.session_id if sess is not None else None
    call.session_id = session_id
    call.turn.stopped = True
    call.turn.stop_reason = args.reason
    call.turn.stopped_at = time.time()
    dropped = ctx.states.invalidate(agent_session=call.agent_session, reason="paused")
    if sess is not None:
        await ctx.sessions.release(call.agent_session, CancelReason.USER_STOP)
    return _answer(
        call,
        {
            "sessionId": session_id,
            "state": "canceled",
            "stateIdsDropped": dropped,
            "reasonRecorded": args.reason is not None,
            "note": "Stopped. Actions are refused for the rest of this turn.",
        },
    )


async def bind_target(ctx: ToolContext, call: Call, args: BindTargetArgs) -> ToolOutcome:
    await require_desktop(ctx, call, acting=False)
    _, window = await resolve_target(ctx, call, args.app, args.window_id)
    session_id = await _session(ctx, call)
    await ctx.kernel.bind_target(session_id, TargetSpec(window_id=window.window_id))
    dropped = ctx.states.invalidate(agent_session=call.agent_session, reason="paused")
    sess = ctx.sessions.get(call.agent_session)
    bound: dict[str, object] = {"windowId": window.window_id, "pid": window.app.pid}
    if sess is not None:
        sess.bound_target = bound
    return _answer(
        call,
        {
            "sessionId": session_id,
            "boundTarget": bound,
            "stateIdsDropped": dropped,
            "next": "call resume, then get_app_state",
        },
    )
