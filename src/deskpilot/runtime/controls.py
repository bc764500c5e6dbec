"""pause, resume, stop, takeover and bind_target at the runtime level (docs/mcp.md, "Controls").

* ``pause`` and ``takeover`` are both hard pauses: the kernel cancels what is in flight (a
  half-typed text stops, a held button is released), observations are dropped and every
  stateId of the agent session dies. ``takeover`` additionally records that the user holds
  the desktop; it does not move any window or hand over input by itself.
* ``resume`` only works from paused and returns the session to observing. (Restarting a
  delegated task's operator arrives with delegated tasks.)
* ``stop`` ends the session for this task: actions are refused for the rest of the turn; a
  new turn starts afresh. Its ``reason`` is recorded.
* ``bind_target`` is the one way to change the target window, and only while paused.
"""

from __future__ import annotations

import time
from typing import Any

from deskpilot.protocol.errors import ErrorCode
from deskpilot.protocol.session import CancelReason
from deskpilot.protocol.wire import TargetSpec
from deskpilot.runtime.core import Call, RuntimeCore, ToolOutcome
from deskpilot.runtime.errors import refusal
from deskpilot.runtime.reads import json_text
from deskpilot.runtime.tool_args import BindTargetArgs, NoArgs, StopArgs


async def _session(core: RuntimeCore, call: Call) -> str:
    async with core.sessions.using(call.agent_session) as sess:
        call.session_id = sess.session_id
        return sess.session_id


def _answer(call: Call, data: dict[str, Any]) -> ToolOutcome:
    return ToolOutcome(text=json_text(data), diagnostic=call.diag)


async def pause(core: RuntimeCore, call: Call, args: NoArgs) -> ToolOutcome:
    session_id = await _session(core, call)
    state = await core.kernel.pause(session_id)
    dropped = core.states.invalidate(agent_session=call.agent_session, reason="paused")
    sess = core.sessions.get(call.agent_session)
    if sess is not None:
        sess.taken_over = False
    return _answer(
        call, {"sessionId": session_id, "state": state.value, "stateIdsDropped": dropped}
    )


async def takeover(core: RuntimeCore, call: Call, args: NoArgs) -> ToolOutcome:
    session_id = await _session(core, call)
    state = await core.kernel.pause(session_id, takeover=True)
    dropped = core.states.invalidate(agent_session=call.agent_session, reason="paused")
    sess = core.sessions.get(call.agent_session)
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


async def resume(core: RuntimeCore, call: Call, args: NoArgs) -> ToolOutcome:
    session_id = await _session(core, call)
    state = await core.kernel.resume(session_id)
    sess = core.sessions.get(call.agent_session)
    if sess is not None:
        sess.taken_over = False
    return _answer(
        call,
        {"sessionId": session_id, "state": state.value, "next": "call get_app_state"},
    )


async def stop(core: RuntimeCore, call: Call, args: StopArgs) -> ToolOutcome:
    sess = core.sessions.get(call.agent_session)
    session_id = sess.session_id if sess is not None else None
    call.session_id = session_id
    call.turn.stopped = True
    call.turn.stop_reason = args.reason
    call.turn.stopped_at = time.time()
    dropped = core.states.invalidate(agent_session=call.agent_session, reason="paused")
    if sess is not None:
        await core.sessions.release(call.agent_session, CancelReason.USER_STOP)
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


async def bind_target(core: RuntimeCore, call: Call, args: BindTargetArgs) -> ToolOutcome:
    await core.preflight(call, acting=False)
    if args.window_id is not None:
        windows = await core.windows(call)
        match = [w for w in windows if w.window_id.lower() == args.window_id.lower()]
        if not match:
            raise refusal(
                ErrorCode.TARGET_NOT_FOUND,
                f"No window with id {args.window_id}. Call list_windows for the ids.",
            )
        window = match[0]
    else:
        assert args.app is not None
        _, window = await core.resolve(call, args.app)
    session_id = await _session(core, call)
    await core.kernel.bind_target(session_id, TargetSpec(window_id=window.window_id))
    core.backend.clear_observations(session_id)
    dropped = core.states.invalidate(agent_session=call.agent_session, reason="paused")
    sess = core.sessions.get(call.agent_session)
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


async def not_available(core: RuntimeCore, call: Call, args: object) -> ToolOutcome:
    raise refusal(
        ErrorCode.NOT_AVAILABLE_YET,
        f"{call.tool} is not available yet: delegated tasks have not landed in this build. "
        "Use the atomic tools (get_app_state, then click/type_text/...) to do the task.",
    )
