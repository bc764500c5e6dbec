"""The runtime: one entry point, ``Runtime.call(tool, arguments, ...)``, for all 28 tools.

Every call gets a diagnostic, whatever happens. The runtime resolves the turn, validates the
arguments itself, applies the kill-switch halt and the budget (in bounded mode a call in
flight is cancelled when the task's time runs out), runs the tool's handler (the table is in
runtime/tools.py), and turns any failure into a ``deskpilot diagnostic: {...}`` text that
never carries a raw error body from below. It holds the kernel's port and nothing under it.
Entry points (MCP, the agent loop) only translate to and from this.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from deskpilot.kernel.port import KernelPort, SessionRow
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import CancelReason, SessionState
from deskpilot.provider import Provider
from deskpilot.runtime import control_tools, observation_tools
from deskpilot.runtime import tool_args as ta
from deskpilot.runtime.budget import (
    BOUNDED_DURATION_MS,
    BOUNDED_MAX_ACTIONS,
    BudgetMode,
    TaskBudget,
)
from deskpilot.runtime.call import Call, ToolOutcome
from deskpilot.runtime.context import ToolContext
from deskpilot.runtime.delegated import supervisor
from deskpilot.runtime.diagnostics import (
    ActionOutcome,
    Diagnostic,
    ObservationOutcome,
    Stopwatch,
    Timings,
)
from deskpilot.runtime.implicit_sessions import (
    IDLE_RELEASE_S,
    EndedSession,
    ImplicitSession,
    ImplicitSessions,
)
from deskpilot.runtime.refusals import refusal, safe_error
from deskpilot.runtime.snapshots import SnapshotPort
from deskpilot.runtime.state_ids import STATE_ID_TTL_S, StateIdRegistry, void_reason
from deskpilot.runtime.task_registry import DelegatedTask
from deskpilot.runtime.tools import TOOLS, ToolSpec
from deskpilot.runtime.turns import Turn, TurnTracker

log = logging.getLogger(__name__)


@dataclass
class RuntimeConfig:
    budget_mode: BudgetMode = BudgetMode.UNBOUNDED
    bounded_duration_ms: int = BOUNDED_DURATION_MS
    bounded_max_actions: int = BOUNDED_MAX_ACTIONS
    idle_release_s: float = IDLE_RELEASE_S
    state_ttl_s: float = STATE_ID_TTL_S


class Runtime:
    def __init__(
        self,
        kernel: KernelPort,
        *,
        snapshots: SnapshotPort | None = None,
        config: RuntimeConfig | None = None,
        decision_model: Callable[[], Provider] | None = None,
    ) -> None:
        self.config = config or RuntimeConfig()
        states = StateIdRegistry(ttl_s=self.config.state_ttl_s)
        self.turns = TurnTracker(self._new_budget, self.config.budget_mode, self._turn_ended)
        sessions = ImplicitSessions(
            kernel,
            idle_release_s=self.config.idle_release_s,
            on_release=self._session_released,
            on_ended=self._session_ended,
        )
        self.ctx = ToolContext(kernel, sessions, states, self.turns, snapshots)
        if decision_model is not None:
            self.ctx.decision_model = decision_model
        # a pause or stop from any path (MCP, CLI, dashboard, kill switch) stops the operator
        # and voids the agent's stateIds; a resume from any path clears the takeover mark
        kernel.add_control_hooks(
            on_pause=self._paused, on_stop=self._task_controlled, on_resume=self._resumed
        )
        self._relaunches: set[asyncio.Task[None]] = set()
        self._last_end: dict[str, float] = {}
        self._known_sessions: set[str] = set()
        self._last_diag: dict[str, dict[str, Any]] = {}
        self.calls = 0

    # ------------------------------------------------------------------ lifecycle

    def _new_budget(self, mode: BudgetMode) -> TaskBudget:
        return TaskBudget(
            mode,
            duration_ms=self.config.bounded_duration_ms,
            max_actions=self.config.bounded_max_actions,
        )

    def _turn_ended(self, turn: Turn) -> None:
        self.ctx.states.invalidate(turn=turn.key, reason="turn_ended")
        if self.ctx.snapshots is not None:
            self.ctx.snapshots.end_turn(turn.key)

    def _task_controlled(self, row: SessionRow, reason: CancelReason | None) -> None:
        task = self.ctx.tasks.get(row.id)
        if task is not None:
            supervisor.let_go(self.ctx, task)

    def _paused(self, row: SessionRow, reason: CancelReason | None) -> None:
        """A pause or takeover from any path: the operator lets go, the stateIds of whoever
        acts on the session die (the kernel dropped its frame), a takeover is marked."""
        self._task_controlled(row, reason)
        sess = self.ctx.sessions.by_session_id(row.id)
        if sess is None:
            return
        self.ctx.states.invalidate(agent_session=sess.agent_session, reason="paused")
        if self.ctx.kernel.takeover_state(row.id).get("held"):
            sess.taken_over = True

    def _resumed(self, row: SessionRow, reason: CancelReason | None) -> None:
        """A resume from any path: the takeover mark goes; a task of this runtime that nobody
        restarts (the resume came from outside its tools, and no watcher waits for it, as
        after handoff_required) is restarted here once the resume has returned."""
        sess = self.ctx.sessions.by_session_id(row.id)
        if sess is not None and not self.ctx.kernel.takeover_state(row.id).get("held"):
            sess.taken_over = False
            sess.takeover_by_tool = False
        task = self.ctx.tasks.get(row.id)
        if task is not None:
            asyncio.get_running_loop().call_soon(self._restart_if_idle, task)

    def _restart_if_idle(self, task: DelegatedTask) -> None:
        if task.running or (task.watcher is not None and not task.watcher.done()):
            return  # its resume tool or its watcher restarts it
        if self.ctx.kernel.session_state(task.task_id) != SessionState.OBSERVING:
            return
        runner = asyncio.get_running_loop().create_task(
            supervisor.relaunch(self.ctx, task), name=f"relaunch {task.task_id}"
        )
        self._relaunches.add(runner)
        runner.add_done_callback(self._relaunches.discard)

    def _session_released(self, sess: ImplicitSession) -> None:
        self.ctx.states.invalidate(agent_session=sess.agent_session, reason="released")

    def _session_ended(self, ended: EndedSession) -> None:
        """The kernel ended an agent's implicit session under it: its stateIds die with it,
        saying why; a stop by the user from outside this runtime stops the turn, as the
        ``stop`` tool does."""
        self.ctx.states.invalidate(
            agent_session=ended.agent_session, reason=void_reason(ended.reason)
        )
        turn = self.turns.peek(ended.agent_session)
        if ended.reason == CancelReason.USER_STOP and turn is not None and not turn.stopped:
            turn.stopped = True
            turn.stopped_at = time.time()

    def set_budget_mode(self, mode: BudgetMode) -> None:
        """Switch limits on or off for open tasks and new ones; counters are never reset."""
        self.config.budget_mode = mode
        self.turns.set_mode(mode)

    async def start(self) -> None:
        """Arm the kill switch when the kernel has one, and start the inbox for controls
        other processes ask (the dashboard, ``deskpilot session``); entry points call this
        once."""
        try:
            await self.ctx.kernel.start_kill_switch()
        except Exception as exc:  # no display, a grab refused: say so once, plainly
            log.warning("the kill switch could not be armed: %s", exc)
        await self.ctx.kernel.start_control_inbox()

    async def close(self) -> None:
        for task in self.ctx.tasks.all():
            supervisor.stop_watching(task)
        for task in self.ctx.tasks.running():
            await self.ctx.kernel.stop(task.task_id, CancelReason.SHUTDOWN)
            supervisor.let_go(self.ctx, task)
            await task.settled.wait()
        await self.ctx.sessions.close_all(CancelReason.SHUTDOWN)
        await self.ctx.kernel.close()  # it closes the host connection it owns
        if self.ctx.snapshots is not None:
            await self.ctx.snapshots.close()

    # ------------------------------------------------------------------ the call

    async def call(
        self,
        tool: str,
        arguments: Any,
        *,
        agent_session: str = "default",
        turn_id: str | None = None,
    ) -> ToolOutcome:
        t0 = time.perf_counter()
        self.calls += 1
        timings = Timings()
        last = self._last_end.get(agent_session)
        if last is not None:
            timings.between_calls_ms = (t0 - last) * 1000.0
        diag = Diagnostic(tool=tool, timings=timings)
        spec = TOOLS.get(tool)
        if agent_session not in self._known_sessions:
            # a kill-switch halt binds agent sessions that began before it, not later ones
            self._known_sessions.add(agent_session)
            self.ctx.kernel.client_session_began(agent_session)
        # a session the kernel ended under this agent (another agent took the desktop, the
        # kill switch) is retired first, in the turn the agent was in until now
        before = self.turns.peek(agent_session)
        self.ctx.sessions.survey(agent_session, before.key if before is not None else None)
        turn = self.turns.current(agent_session, turn_id)
        call = Call(tool, agent_session, turn, diag, Stopwatch(timings))
        if spec is not None and spec.kind == "act":
            diag.action_outcome = ActionOutcome.NOT_DISPATCHED
        try:
            if spec is None:
                raise refusal(
                    ErrorCode.INVALID_REQUEST,
                    f"Unknown tool {tool!r}.",
                    tools=sorted(TOOLS),
                )
            outcome = await self._run(spec, call, arguments)
        except DeskpilotError as exc:
            outcome = self._failure(call, exc)
        except Exception:
            log.exception("tool %s failed unexpectedly", tool)
            if call.dispatched and diag.action_outcome is ActionOutcome.NOT_DISPATCHED:
                diag.action_outcome = ActionOutcome.UNKNOWN  # it reached the kernel: may have run
            outcome = self._failure(call, DeskpilotError(ErrorCode.INTERNAL_ERROR, "internal"))
        handed = await self._hand_back(agent_session, outcome)
        end = time.perf_counter()
        timings.tool_elapsed_ms = (end - t0) * 1000.0
        if timings.bridge_total_ms == 0.0:
            timings.bridge_total_ms = timings.tool_elapsed_ms
        rendered = outcome.diagnostic.render()
        parts = [] if outcome.is_error else [outcome.text.rstrip()]
        if handed is not None:
            parts.append(handed)
        outcome.text = "\n\n".join([*parts, rendered])
        self._last_end[agent_session] = end
        self._last_diag[agent_session] = outcome.diagnostic.to_json()
        return outcome

    async def _hand_back(self, agent_session: str, outcome: ToolOutcome) -> str | None:
        """The person handed the desktop back outside this agent's calls (the dashboard):
        the first result after it carries the note, once (control_tools.deliver_hand_back)."""
        sess = self.ctx.sessions.get(agent_session)
        if sess is None:
            return None
        try:
            note = await control_tools.deliver_hand_back(
                self.ctx, sess.session_id, outcome.observed
            )
        except Exception:
            log.warning("the hand back note could not be built", exc_info=True)
            return None
        return None if note is None else control_tools.hand_back_paragraph(note)

    async def _run(self, spec: ToolSpec, call: Call, arguments: Any) -> ToolOutcome:
        args = ta.validate_args(spec.name, spec.args, arguments)
        if spec.kind == "status":
            return self._status(call)
        if spec.kind in ("read", "act"):
            # the kill-switch halt refuses actions (in act()); observation keeps working
            call.turn.budget.check_read()
        assert spec.handler is not None
        deadline = call.turn.budget.deadline() if spec.kind in ("read", "act") else None
        t_bridge = time.perf_counter()
        try:
            if deadline is None:
                return await spec.handler(self.ctx, call, args)
            loop = asyncio.get_running_loop()
            when = loop.time() + (deadline - time.monotonic())
            try:
                async with asyncio.timeout_at(when):
                    return await spec.handler(self.ctx, call, args)
            except TimeoutError:
                if time.monotonic() + 0.005 < deadline:
                    raise  # not ours
                return await self._expired(call)
        finally:
            call.diag.timings.bridge_total_ms = (time.perf_counter() - t_bridge) * 1000.0

    async def _expired(self, call: Call) -> ToolOutcome:
        """The bounded budget ran out with this call in flight: cancel it, say what is known."""
        if call.dispatched:
            call.diag.action_outcome = ActionOutcome.UNKNOWN
        sess = self.ctx.sessions.get(call.agent_session)
        if sess is not None:
            # the host stops what the session is doing and forgets it; the session's records
            # stay readable in status, and its next use replaces it (implicit_sessions.py)
            sess.host_cancelled = True
            try:
                await self.ctx.kernel.cancel(sess.session_id)
            except Exception:
                log.warning("cancelling the host session after budget expiry failed")
        budget = call.turn.budget
        exc = refusal(
            ErrorCode.BUDGET_EXHAUSTED,
            f"The bounded budget of this task ({budget.duration_ms // 1000} s) ran out while "
            "this call was in flight; it was cancelled. Cancelling does not undo an action "
            "that already ran: observe before reporting.",
            budget="time",
            cancelledInFlight=True,
        )
        return self._failure(call, exc)

    def _failure(self, call: Call, exc: DeskpilotError) -> ToolOutcome:
        code, message, retryable, details = safe_error(exc)
        diag = call.diag
        diag.code = code.value
        diag.message = message
        diag.retryable = retryable
        if diag.action_outcome is ActionOutcome.UNKNOWN:
            diag.message += " The action may have run; it is not retried automatically."
            diag.retryable = False
        if details:
            diag.extra["details"] = details
        if (
            diag.observation_outcome is ObservationOutcome.NOT_ATTEMPTED
            and call.session_id is not None
            and diag.tool in ("get_app_state", "get_screen_state", "screenshot")
        ):
            diag.observation_outcome = ObservationOutcome.UNAVAILABLE
        return ToolOutcome(text="", diagnostic=diag)

    # ------------------------------------------------------------------ status

    def status(self, agent_session: str = "default") -> dict[str, Any]:
        turn = self.turns.peek(agent_session)
        sess = self.ctx.sessions.get(agent_session)
        halt = self.ctx.kernel.halt_state(agent_session)
        state = self.ctx.kernel.session_state(sess.session_id) if sess is not None else None
        budget = turn.budget if turn is not None else self._new_budget(self.turns.mode)
        return {
            "budget": budget.to_json(),
            "elapsedMs": round(budget.elapsed_ms()),
            "actions": budget.actions,
            "turn": None
            if turn is None
            else {
                "id": turn.key,
                "explicit": turn.explicit,
                "stopped": turn.stopped,
            },
            "recovery": None if turn is None or turn.recovery is None else turn.recovery.to_json(),
            "halt": {
                "halted": halt.halted,
                "cause": halt.cause,
                "sinceEpochMs": halt.since_epoch_ms,
            },
            "session": None if sess is None else sess.to_json(state.value if state else None),
            "takeover": self.ctx.kernel.takeover_state(),
            "kernel": self.ctx.kernel.name,
            **observation_tools.desktop_sharing(self.ctx),
            "snapshotVault": self.ctx.snapshots is not None,
            "lastDiagnostic": self._last_diag.get(agent_session),
        }

    def _status(self, call: Call) -> ToolOutcome:
        return ToolOutcome(
            text=observation_tools.json_text(self.status(call.agent_session)), diagnostic=call.diag
        )
