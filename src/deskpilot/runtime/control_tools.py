"""pause, resume, stop, takeover and bind_target at the runtime level (docs/mcp.md, "Controls").

* ``pause`` and ``takeover`` are both hard pauses: the kernel cancels what is in flight (a
  half-typed text stops, a held button is released), observations are dropped and every
  stateId of the agent session dies. ``takeover`` additionally records that the user holds
  the desktop; it does not move any window or hand over input by itself.
  While the person holds the desktop every agent action of every session is refused with
  ``handoff_required`` (the kernel's takeover hold; observing still works).
* ``resume`` only works from paused and returns the session to observing. (A delegated
  task's controls are in runtime/delegated/task_controls.py, which falls back to these.)
  The resume of a session this agent took over is the hand back: it answers with a fresh
  observation (the state text, image and stateId ``get_app_state`` gives) and a
  ``handBack`` object saying how long the person held the desktop and what changed in the
  window (kernel/handback.py). A takeover from outside (the dashboard, ``deskpilot
  session``) is the person's to hand back: ``resume`` refuses it; when they hand back, the
  agent's next tool result carries the same note once (``deliver_hand_back``).
* ``stop`` ends the session for this task: actions are refused for the rest of the turn; a
  new turn starts afresh. Its ``reason`` is recorded.
* ``bind_target`` is the one way to change the target window, and only while paused.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from deskpilot.kernel.port import HandBack, HandBackStart, hand_back_note
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.session import CancelReason
from deskpilot.protocol.wire import TargetSpec
from deskpilot.runtime.call import Call, ToolOutcome
from deskpilot.runtime.context import ToolContext
from deskpilot.runtime.observation_tools import get_app_state, json_text
from deskpilot.runtime.preflight import require_desktop
from deskpilot.runtime.refusals import refusal
from deskpilot.runtime.targets import resolve_target
from deskpilot.runtime.tool_args import AppArgs, BindTargetArgs, NoArgs, StopArgs

log = logging.getLogger(__name__)

#: who the kernel records for this agent's own controls (``by``)
AGENT = "agent"


async def _session(ctx: ToolContext, call: Call) -> str:
    async with ctx.sessions.using(call.agent_session) as sess:
        call.session_id = sess.session_id
        return sess.session_id


def _answer(call: Call, data: dict[str, Any]) -> ToolOutcome:
    return ToolOutcome(text=json_text(data), diagnostic=call.diag)


async def pause(ctx: ToolContext, call: Call, args: NoArgs) -> ToolOutcome:
    session_id = await _session(ctx, call)
    dropped = ctx.states.invalidate(agent_session=call.agent_session, reason="paused")
    state = await ctx.kernel.pause(session_id, by=AGENT)
    # a pause of a taken-over session leaves it taken over: only resume hands it back
    return _answer(
        call, {"sessionId": session_id, "state": state.value, "stateIdsDropped": dropped}
    )


async def takeover(ctx: ToolContext, call: Call, args: NoArgs) -> ToolOutcome:
    session_id = await _session(ctx, call)
    dropped = ctx.states.invalidate(agent_session=call.agent_session, reason="paused")
    sess = ctx.sessions.get(call.agent_session)
    if sess is not None and not ctx.kernel.takeover_state(session_id).get("held"):
        sess.takeover_by_tool = True  # this agent's resume may hand it back
    # recorded as the agent's (by agent, takeover true): the agent handed the desktop to
    # the person, who hands it back through this agent's resume
    state = await ctx.kernel.pause(session_id, takeover=True, by=AGENT)
    if sess is not None:
        sess.taken_over = True
    return _answer(
        call,
        {
            "sessionId": session_id,
            "state": state.value,
            "takenOver": True,
            "stateIdsDropped": dropped,
            "note": "The agent is stopped and the user drives the desktop: every action is "
            "refused (handoff_required) until the desktop is handed back; call resume when the "
            "user hands it back.",
        },
    )


def refuse_outside_hand_back(ctx: ToolContext, session_id: str, by_tool: bool) -> None:
    """An agent's resume does not end a takeover the person made from outside this agent
    (the dashboard, the CLI): only they hand back."""
    hold = ctx.kernel.takeover_state(session_id)
    if hold.get("held") and not by_tool:
        raise refusal(
            ErrorCode.HANDOFF_REQUIRED,
            "The person took the desktop over from outside this agent (the dashboard or "
            "`deskpilot session takeover`); only they can hand it back. Wait for them (observing "
            "still works): your next tool result after they hand back says what changed.",
            reason="taken_over",
            takenOverBy=hold.get("by"),
            since=hold.get("since"),
            sessionId=session_id,
        )


async def resume(ctx: ToolContext, call: Call, args: NoArgs) -> ToolOutcome:
    session_id = await _session(ctx, call)
    sess = ctx.sessions.get(call.agent_session)
    refuse_outside_hand_back(ctx, session_id, sess is not None and sess.takeover_by_tool)
    state = await ctx.kernel.resume(session_id, by=AGENT)
    if sess is not None:
        sess.taken_over = False
        sess.takeover_by_tool = False
    answer: dict[str, Any] = {"sessionId": session_id, "state": state.value}
    start = ctx.kernel.take_handback(session_id)
    if start is None:
        return _answer(call, {**answer, "next": "call get_app_state"})
    # the hand back: observe again through get_app_state's own path (state text, image,
    # stateId), and say what changed while the person had the desktop
    observed = await _observe_after(ctx, call, start)
    note = hand_back_note(start, observed.observed if observed is not None else None)
    answer["handBack"] = note.to_json()
    if observed is None:
        answer["next"] = "call get_app_state"
        return _answer(call, answer)
    observed.text = f"{json_text(answer)}\n\n{observed.text}"
    return observed


async def _observe_after(ctx: ToolContext, call: Call, start: HandBackStart) -> ToolOutcome | None:
    """get_app_state on the window the agent last saw (another window of its app when that
    one closed; the bound or focused window when it saw none); None when nothing can be
    observed."""
    before = start.before
    refs: list[str | int | None] = (
        [before.window_id, *([before.pid] if before.pid else [])] if before else [None]
    )
    for ref in refs:
        try:
            return await get_app_state(ctx, call, AppArgs(app=ref))
        except DeskpilotError as exc:
            if exc.code not in (ErrorCode.TARGET_NOT_FOUND, ErrorCode.NO_WINDOWS_AVAILABLE):
                raise
    return None


async def deliver_hand_back(
    ctx: ToolContext, session_id: str, observed: ObservedState | None
) -> HandBack | None:
    """A hand back made outside this agent's calls (the dashboard, the CLI), once: its note,
    built on ``observed`` (the state the call already has) or else a fresh capture of the
    window the agent last saw (a capture issues no stateId and leaves the current one)."""
    start = ctx.kernel.take_handback(session_id)
    if start is None:
        return None
    after = observed
    if after is None and start.before is not None:
        try:
            after = await ctx.kernel.capture(
                session_id, TargetSpec(window_id=start.before.window_id)
            )
        except DeskpilotError:
            after = None
        except Exception:  # the note must never break the call it rides on
            log.warning("observing for a hand back note failed", exc_info=True)
            after = None
    return hand_back_note(start, after)


def hand_back_paragraph(note: HandBack) -> str:
    """The note as it rides on a tool result: one ``handBack:`` line of JSON."""
    return "handBack: " + json.dumps(note.to_json(), ensure_ascii=False, separators=(",", ":"))


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
