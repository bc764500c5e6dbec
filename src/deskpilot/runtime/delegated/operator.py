"""The operator: one run of a delegated task's loop (observe → decide → act → repeat).

A run ends with an ``End`` (completed, failed, handoff_required) that the supervisor writes
to the kernel, or with ``let_go`` when the task was paused, stopped or killed from outside —
then the kernel already holds its state and reason. The model is asked through the provider
(the local JSON action protocol, with its parser, validation and bounded repair); the
actions go through the runtime's atomic tool path, so nothing here talks to the desktop.

A hand back: when the person took the task over and handed it back, the run that resume
starts shows the model, with its first state, what changed while the person had the desktop
(kernel/handback.py); when the person holds the desktop for another session, the operator
waits for the hand back instead of deciding (every action would be refused), then looks
again and says what changed the same way.

Batches: with the ``actionBatch`` flag on, the model is offered ``act_batch``
(runtime/delegated/batches.py); every batch is a rollout sample, so batches that keep
breaking turn the flag off for this process (kernel/rollout.py).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from deskpilot.kernel.port import FrameSummary, HandBackStart, hand_back_note
from deskpilot.protocol.errors import DeskpilotError
from deskpilot.protocol.session import SessionState
from deskpilot.provider import ExecutionLedger, Provider, ToolCall
from deskpilot.provider.protocol import neutralise
from deskpilot.runtime.call import Call, ToolOutcome
from deskpilot.runtime.context import ToolContext
from deskpilot.runtime.delegated import decision_tools as dt
from deskpilot.runtime.delegated.acting import act, new_call, operator_turn
from deskpilot.runtime.delegated.batches import check_batch, run_batch
from deskpilot.runtime.delegated.conversation import Conversation, goal_message
from deskpilot.runtime.delegated.endings import End, EndKind, ending
from deskpilot.runtime.delegated.verifying import check
from deskpilot.runtime.observation_tools import get_app_state
from deskpilot.runtime.refusals import safe_error
from deskpilot.runtime.targets import list_windows
from deskpilot.runtime.task_registry import DelegatedTask
from deskpilot.runtime.tool_args import AppArgs
from deskpilot.runtime.window_lists import app_windows, dialogs_of

#: verification failures after which the task fails instead of trying again
MAX_VERIFICATION_FAILURES = 3
#: prose replies in a row after which the task fails (the model is not deciding)
MAX_PROSE_REPLIES = 3
_PROSE = (
    "Your last reply was prose: it does nothing here and is not a claim that the goal is "
    "reached. Reply with one tool call: an action, ready_for_verification when the goal is "
    "reached, need_handoff or give_up."
)
#: how often a waiting operator looks whether the person handed the desktop back
TAKEOVER_POLL_S = 0.25
_NO_WINDOW = (
    "The target window cannot be observed any more (it closed, perhaps because the last "
    "action finished the task). If the goal is reached call ready_for_verification; "
    "otherwise give_up with the reason."
)


class Operator:
    def __init__(self, ctx: ToolContext, task: DelegatedTask, model: Provider) -> None:
        self.ctx = ctx
        self.task = task
        self.model = model
        self.turn = operator_turn(task)
        self.batching = ctx.kernel.flags.enabled("actionBatch")
        self.tools = dt.decision_tools(batching=self.batching)
        criteria = [_describe(c) for c in task.criteria_json()]
        self.conv = Conversation(
            goal_message(
                task.goal,
                task.acceptance,
                criteria,
                _window(task),
                self.batching,
                resumed_after=task.actions if task.runs > 1 else None,
            )
        )
        #: the operator's own time per step (everything but the model call), for benchmarks
        self.own_ms: list[float] = []
        #: prose replies in a row (a final answer is not a decision)
        self.finals = 0

    def _phase(self, phase: SessionState) -> bool:
        """Enter a phase; False when the session is no longer live (paused, ended)."""
        self.task.phase = phase.value
        now = self.ctx.kernel.set_phase(self.task.task_id, phase)
        return now == phase

    async def _target_window(self, call: Call) -> str | None:
        """The window to look at: a dialog of the bound window (topmost), else the bound
        window, else — when it closed — another window of the task's own app; never the
        focused window, which could be another app whose state the criteria would judge."""
        windows = await list_windows(self.ctx, call)
        bound = str(self.task.target.get("windowId", ""))
        dialogs = dialogs_of(windows, bound)
        if dialogs:
            return dialogs[0].window_id
        if any(w.window_id == bound for w in windows):
            return bound
        pid = self.task.target.get("pid")
        mine = app_windows(windows, pid if isinstance(pid, int) else None)
        return mine[0].window_id if mine else None

    async def observe(self) -> ToolOutcome | End:
        self._phase(SessionState.OBSERVING)
        call = new_call(self.task, self.turn, "get_app_state")
        try:
            window = await self._target_window(call)
            if window is None:
                return End(
                    EndKind.FAILED,
                    "target_unobservable",
                    "the task's window is closed and its app has no other window",
                )
            return await get_app_state(self.ctx, call, AppArgs(app=window))
        except DeskpilotError as exc:
            end = ending(exc)
            if end is not None:
                return end
            code, message, _, _ = safe_error(exc)
            return End(EndKind.FAILED, "target_unobservable", f"{code.value}: {message}")

    async def run(self) -> End:
        first = await self.observe()
        if isinstance(first, End):
            return first
        state: ToolOutcome | None = first
        self.conv.begin_step()
        text = first.text
        start = self.ctx.kernel.take_handback(self.task.task_id)
        if start is not None:  # resumed by the person's hand back: say what they changed
            text += "\n\n" + hand_back_note(start, first.observed).text()
        self.conv.add_state(text)
        while True:
            waited = await self._wait_while_taken_over(state)
            if isinstance(waited, End):
                return waited
            if waited is not None:
                state = waited
            t0 = time.perf_counter()
            sess = self.ctx.sessions.get(self.task.key)
            if sess is not None:
                try:
                    sess.check_contract()
                except DeskpilotError as exc:
                    return ending(exc) or End(EndKind.FAILED, exc.code.value, exc.message)
            if not self._phase(SessionState.PLANNING):
                return End(EndKind.LET_GO, "not_live", "the session is not live")
            own = time.perf_counter() - t0
            # a fresh ledger per decision: the guard then sees repeats within this step only
            # (the same click in two steps is two decisions; history is trimmed)
            ledger = ExecutionLedger()
            result = await self.model.decide(self.conv.messages, self.tools, ledger=ledger)
            t1 = time.perf_counter()
            self.task.model_calls += result.requests
            self.task.decisions += 1
            if result.kind == "error":
                code = result.error.code if result.error is not None else "unknown"
                return End(
                    EndKind.FAILED,
                    "decision_model_error",
                    f"the decision model failed ({code}); the task cannot continue",
                )
            if result.tool_call is None:  # prose: it decides nothing, and is no claim of success
                self.finals += 1
                self.own_ms.append((own + time.perf_counter() - t1) * 1000)
                if self.finals >= MAX_PROSE_REPLIES:
                    return End(
                        EndKind.FAILED,
                        "model_no_decision",
                        f"the decision model answered in prose {self.finals} times in a row",
                    )
                self.conv.begin_step(_PROSE)
                continue
            self.finals = 0
            end, state = await self._carry_out(result.tool_call, state)
            self.own_ms.append((own + time.perf_counter() - t1) * 1000)
            if end is not None:
                return end
            self.conv.begin_step()

    async def _wait_while_taken_over(self, state: ToolOutcome | None) -> ToolOutcome | End | None:
        """While the person holds the desktop (for another session: a takeover of this one
        pauses it and ends this run), wait; then observe again and tell the model what
        changed. None when nobody held it."""
        hold = self.ctx.kernel.takeover_state()
        if not hold.get("held"):
            return None
        before = state.observed if state is not None else None
        while hold.get("held"):
            await asyncio.sleep(TAKEOVER_POLL_S)
            hold_now = self.ctx.kernel.takeover_state()
            if not hold_now.get("held"):
                break
            hold = hold_now
        fresh = await self.observe()
        if isinstance(fresh, End):
            return fresh
        since = hold.get("since")
        start = HandBackStart(
            session_id=str(hold.get("sessionId") or ""),
            by=str(hold.get("by") or "person"),
            started_at=since / 1000 if isinstance(since, int) else time.time(),
            ended_at=time.time(),
            before=None if before is None else FrameSummary.of(before.observation),
        )
        self.conv.add_state(fresh.text + "\n\n" + hand_back_note(start, fresh.observed).text())
        return fresh

    async def _carry_out(
        self, decision: ToolCall, state: ToolOutcome | None
    ) -> tuple[End | None, ToolOutcome | None]:
        """Do what the model decided; (an end, or None and the state to decide on next)."""
        name, args = decision.name, dict(decision.arguments)
        if name == dt.HANDOFF:
            return End(EndKind.HANDOFF, "model_handoff", str(args.get("reason", ""))), state
        if name == dt.GIVE_UP:
            return End(EndKind.FAILED, "model_gave_up", str(args.get("reason", ""))), state
        if name == dt.READY:
            return await self._verify(decision)
        if name == dt.BATCH:
            actions = check_batch(args)
            if isinstance(actions, str):
                self.conv.add_result(decision, actions, is_error=True)
                return None, state
            self._phase(SessionState.ACTING)
            if state is None:
                self.conv.add_result(decision, _NO_WINDOW, is_error=True)
                return None, None
            batch = await run_batch(self.ctx, self.task, self.turn, actions, state)
            self.ctx.kernel.record_batch(broke=batch.broke)
            self.conv.add_result(decision, batch.text, is_error=batch.is_error)
            acted = batch.last
        else:
            self._phase(SessionState.ACTING)
            state_id = state.state_id if state is not None else None
            acted = await act(self.ctx, self.task, self.turn, name, args, state_id)
            self.conv.add_result(decision, acted.text, is_error=acted.is_error)
        if acted is not None and acted.end is not None:
            return acted.end, state
        if acted is not None and acted.outcome is not None and acted.outcome.state_id:
            return None, acted.outcome
        fresh = await self.observe()  # the result carried no state to act on: look again
        if isinstance(fresh, End):
            if fresh.reason != "target_unobservable":
                return fresh, state
            self.conv.add_state(_NO_WINDOW)  # the action may have closed it on purpose
            return None, None
        self.conv.add_state(fresh.text)
        return None, fresh

    async def _verify(self, decision: ToolCall) -> tuple[End | None, ToolOutcome | None]:
        fresh = await self.observe()
        if isinstance(fresh, End) and fresh.kind is not EndKind.FAILED:
            return fresh, None
        # the window may be gone because the goal closed it (a dialog's OK): the criteria
        # that need no tree (file, application_state, readback) still decide; the others
        # are undecidable, not passed
        now = None if isinstance(fresh, End) else fresh
        observed = None if now is None else now.observed
        self._phase(SessionState.VERIFYING)
        checked = await check(self.ctx, self.task, observed, model_ready=True)
        if checked.passed:
            return End(
                EndKind.COMPLETED,
                "verification_passed",
                checked.report(),
                tuple(checked.ids),
            ), now
        self.task.verification_failures += 1
        if self.task.verification_failures >= MAX_VERIFICATION_FAILURES:
            return End(
                EndKind.FAILED,
                "verification_failed",
                f"verification failed {self.task.verification_failures} times",
                tuple(checked.ids),
            ), now
        if isinstance(fresh, End):  # the window is gone: nothing left to work on
            return End(
                EndKind.FAILED,
                "verification_failed",
                checked.report() + "\nThe target window is gone.",
                tuple(checked.ids),
            ), None
        self.conv.add_result(
            decision,
            checked.report() + "\nKeep working toward the goal; the window as it is now follows.",
            is_error=True,
        )
        self.conv.add_state(fresh.text)
        return None, fresh


def _describe(spec: dict[str, Any]) -> str:
    """A criterion as the model reads it: the spec's own JSON (the caller's words)."""
    return neutralise(json.dumps(spec, ensure_ascii=False, separators=(", ", ": ")))


def _window(task: DelegatedTask) -> str:
    """Which window, without its title: titles and app names come from the screen and may
    carry protocol markers, so they reach the model only inside tool results (the state)."""
    return f"window {task.target.get('windowId', '')} (its title is in the state below)"
