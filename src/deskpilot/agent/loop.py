"""The agent loop, thin: decide through the provider, execute, show, repeat — per user task.

The model only writes chat text; the provider (deskpilot.provider) owns selection, the local
JSON protocol, validation, repair and retries, and hands back either one validated call or a
final answer. This module sequences that with execution and nothing else:

* each user message is a new user task: a new ``turn_id`` (its own stateIds) and a new bounded
  budget (180 s and 30 action attempts by default, waits and model time included; reads still
  work when the actions are spent), ended with ``DesktopTools.end_turn``;
* desktop tools run in-process through the runtime (``DesktopTools``), the agent's own tools
  (read, bash, vision_read) through ``LocalTool``; ``bash`` is a kernel action;
* the conversation keeps the newest states whole and says when it drops older trees
  (agent/history.py); the execution ledger lets the provider refuse a repeated identical call
  until the desktop was touched again (the desktop is live, so a call to it advances it);
* plan mode offers only tools that read and needs a ``<proposed_plan>``; leaving plan mode
  after a plan turns the next message into the provider's accepted-plan form, so the model
  implements the plan instead of planning again.

Every step's time is split into the model's, the tool's and the agent's own (agent/timing.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from deskpilot.agent.arguments import summarise
from deskpilot.agent.confirmations import ConfirmationWatch
from deskpilot.agent.events import AgentEvent, EventKind, EventSink
from deskpilot.agent.history import Conversation
from deskpilot.agent.instructions import instructions
from deskpilot.agent.timing import StepTiming, TimedChatClient
from deskpilot.agent.tools import ACT, READ, DesktopTools, LocalTool, ToolResult, TurnScope
from deskpilot.protocol.errors import DeskpilotError
from deskpilot.provider import ChatMessage, ExecutionLedger, Provider, ToolCall, TurnResult
from deskpilot.provider import ToolSpec as ModelTool

#: model replies per user task, whatever the budget mode (a loop that never ends is a bug)
MAX_REPLIES = 120
ACCEPT_PLAN = "Plan mode is now disabled: implement the proposed plan above."
#: calls refused in a row for a spent budget before the task ends (the model was told)
MAX_SPENT_ATTEMPTS = 3

Status = Literal["answered", "planned", "failed", "budget_exhausted", "interrupted"]


@dataclass
class TurnReport:
    """How a user task ended, for the CLI's exit code and the JSONL's last line."""

    turn_id: str
    status: Status
    text: str | None = None
    code: str | None = None
    message: str | None = None
    steps: int = 0
    tool_calls: int = 0
    actions: int = 0
    elapsed_ms: float = 0.0
    timings: list[StepTiming] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        own = sorted(t.own_ms for t in self.timings)
        return {
            "turnId": self.turn_id,
            "status": self.status,
            "code": self.code,
            "steps": self.steps,
            "toolCalls": self.tool_calls,
            "actions": self.actions,
            "elapsedMs": round(self.elapsed_ms),
            "ownMsMedian": round(own[len(own) // 2], 2) if own else None,
        }


class Agent:
    def __init__(
        self,
        model: Provider,
        desktop: DesktopTools,
        *,
        cwd: Path,
        sink: EventSink,
        local_tools: Sequence[LocalTool] = (),
        max_replies: int = MAX_REPLIES,
        offered: Collection[str] | None = None,
    ) -> None:
        self.model = model
        self.desktop = desktop
        self.cwd = cwd
        self.sink = sink
        self.local = {t.spec.name: t for t in local_tools}
        self.max_replies = max_replies
        self.conversation = Conversation([ChatMessage.system(instructions(str(cwd)))])
        self.ledger = ExecutionLedger()
        self.plan_mode = False
        self._plan_pending = False
        self._specs = self._all_specs()
        if offered is not None:  # the person's own list (``--tools``): nothing else is shown
            wanted = set(offered)
            self._specs = [t for t in self._specs if t.name in wanted]
        #: the desktop's core and the agent's own tools are in every request
        self._pinned = (desktop.core() | frozenset(self.local)) & {t.name for t in self._specs}
        self._recoveries_seen = 0
        self._confirmations = ConfirmationWatch(desktop.kernel, desktop.current_session, self._emit)

    # ------------------------------------------------------------------ the person's switches

    def toggle_plan(self) -> bool:
        self.plan_mode = not self.plan_mode
        self._emit("notice", code="plan_mode", on=self.plan_mode)
        return self.plan_mode

    def _all_specs(self) -> list[ModelTool]:
        desktop = self.desktop.specs()
        names = {t.name for t in desktop}
        clash = names & set(self.local)
        if clash:
            raise ValueError(f"local tools shadow desktop tools: {sorted(clash)}")
        return [*desktop, *(t.spec for t in self.local.values())]

    def _kind(self, name: str) -> str:
        if name in self.local:
            return self.local[name].kind
        return self.desktop.kind_of(name) or ACT

    def tools(self) -> list[ModelTool]:
        """What the model may be offered now (plan mode: only tools that read)."""
        if not self.plan_mode:
            return list(self._specs)
        return [t for t in self._specs if self._kind(t.name) == READ]

    # ------------------------------------------------------------------ one user task

    async def run_turn(self, text: str) -> TurnReport:
        turn_id = f"agent-{uuid.uuid4().hex[:12]}"
        report = TurnReport(turn_id, "failed")
        scope = TurnScope(turn_id, self.cwd, self.desktop)
        budget = scope.budget
        budget.start()
        t0 = time.perf_counter()
        message = text
        if self._plan_pending and not self.plan_mode:
            message = f"{ACCEPT_PLAN}\n\n{text}"
        self._plan_pending = False
        self.conversation.add_user(message)
        self._emit("turn_start", turnId=turn_id, planMode=self.plan_mode, budget=budget.to_json())
        try:
            await self._steps(scope, report)
        except asyncio.CancelledError:  # Ctrl-C: what already ran is not undone
            report.status, report.code = "interrupted", "interrupted"
            raise
        finally:
            report.elapsed_ms = (time.perf_counter() - t0) * 1000.0
            report.actions = int(budget.to_json().get("actions") or 0)
            self.desktop.end_turn(turn_id)
            self._emit("turn_end", **report.to_json())
        return report

    async def _steps(self, scope: TurnScope, report: TurnReport) -> None:
        spent = 0  # calls refused in a row because the budget is spent
        for _ in range(self.max_replies):
            remaining = scope.budget.remaining_ms()
            if remaining is not None and remaining <= 0:
                self._end_budget(report, "time")
                return
            step_t0 = time.perf_counter()
            model_t0 = self._model_s()
            self._emit("thinking", turnId=report.turn_id)
            result = await self._decide(remaining)
            report.steps += 1
            model_ms = (self._model_s() - model_t0) * 1000.0
            self._emit_thought(result, model_ms)
            if result.kind == "error":
                assert result.error is not None
                if result.error.code == "request_aborted" and remaining is not None:
                    self._end_budget(report, "time")
                else:
                    report.code, report.message = result.error.code, result.error.message
                    self._emit("error", code=result.error.code, message=result.error.message)
                report.timings.append(StepTiming(_since(step_t0), model_ms, 0.0))
                return
            if result.kind == "final":
                final = result.text or ""
                self.conversation.add_final(final)
                report.text = final
                report.status = "planned" if self.plan_mode else "answered"
                self._plan_pending = self.plan_mode
                self._emit("model_text", text=final, plan=self.plan_mode)
                report.timings.append(StepTiming(_since(step_t0), model_ms, 0.0))
                return
            assert result.tool_call is not None
            tool_ms, code = await self._execute(result.tool_call, scope, report)
            report.timings.append(StepTiming(_since(step_t0), model_ms, tool_ms))
            spent = spent + 1 if code == "budget_exhausted" else 0
            if spent >= MAX_SPENT_ATTEMPTS:
                self._end_budget(report, "actions")
                return
        report.code = "step_limit"
        report.message = f"the model made {self.max_replies} replies without finishing the task"
        self._emit("error", code=report.code, message=report.message)

    async def _decide(self, remaining_ms: float | None) -> TurnResult:
        abort: asyncio.Event | None = None
        timer: asyncio.TimerHandle | None = None
        if remaining_ms is not None:
            abort = asyncio.Event()
            timer = asyncio.get_running_loop().call_later(remaining_ms / 1000.0, abort.set)
        try:
            return await self.model.decide(
                self.conversation.messages,
                self.tools(),
                ledger=self.ledger,
                plan_mode=self.plan_mode,
                abort=abort,
                pinned=self._pinned,
            )
        finally:
            if timer is not None:
                timer.cancel()

    async def _execute(
        self, call: ToolCall, scope: TurnScope, report: TurnReport
    ) -> tuple[float, str | None]:
        """Run one validated call; the result goes into the conversation by value. Returns
        the tool's own time and its error code."""
        kind = self._kind(call.name)
        report.tool_calls += 1
        self._emit(
            "tool_call",
            id=call.call_id,
            name=call.name,
            toolKind=kind,
            summary=summarise(call.name, call.arguments),
            **_named_path(call.arguments),
        )
        self.conversation.add_call(call)
        async with self._confirmations.during():
            if call.name in self.local:
                result = await self._run_local(self.local[call.name], call.arguments, scope)
            else:
                result = await self.desktop.call(call.name, call.arguments, turn_id=scope.turn_id)
                # the desktop is live: after any call to it, the same call again is not a repeat
                self.ledger.advance()
        if result.frame is not None and result.state_id is not None:
            scope.frames[result.state_id] = result.frame
        self.conversation.add_result(
            call,
            result.text,
            is_error=result.is_error,
            state_id=result.state_id,
            header=result.state_header,
        )
        self._emit(
            "tool_result",
            id=call.call_id,
            name=call.name,
            ok=not result.is_error,
            code=result.code,
            risk=result.risk,
            toolMs=round(result.elapsed_ms, 2),
            **({"details": result.details} if result.details else {}),
        )
        if result.state_id is not None:
            self._emit("state", stateId=result.state_id, header=result.state_header or "")
        return result.elapsed_ms, result.code

    async def _run_local(
        self, tool: LocalTool, arguments: Mapping[str, Any], scope: TurnScope
    ) -> ToolResult:
        t0 = time.perf_counter()
        try:
            if tool.kind == ACT:
                scope.budget.admit_action()
            else:
                scope.budget.check_read()
            remaining = scope.budget.remaining_ms()
            try:
                async with asyncio.timeout(None if remaining is None else remaining / 1000.0):
                    result = await tool.run(arguments, scope)
                # the whole run, confirmation waits included: never the agent's own time
                return replace(result, elapsed_ms=_since(t0))
            except TimeoutError:
                return ToolResult(
                    "The bounded budget of this task ran out while this tool ran; it was "
                    "cancelled (what already ran is not undone).",
                    is_error=True,
                    code="budget_exhausted",
                    kind=tool.kind,
                    elapsed_ms=_since(t0),
                )
        except DeskpilotError as exc:
            return ToolResult(
                f"{exc.code.value}: {exc.message}",
                is_error=True,
                code=exc.code.value,
                kind=tool.kind,
                elapsed_ms=_since(t0),
                details=dict(exc.details or {}),
            )

    # ------------------------------------------------------------------ bookkeeping

    def _model_s(self) -> float:
        client = self.model.client
        return client.model_s if isinstance(client, TimedChatClient) else 0.0

    def _end_budget(self, report: TurnReport, which: str) -> None:
        report.status = "budget_exhausted"
        report.code = "budget_exhausted"
        report.message = f"the bounded budget of this task ({which}) is spent"
        self._emit("notice", code="budget_exhausted", budget=which)

    def _emit_thought(self, result: TurnResult, model_ms: float) -> None:
        events = self.ledger.recovery_events
        for event in events[self._recoveries_seen :]:
            self._emit(
                "recovery",
                code=event["code"],
                category=event["category"],
                allowed=event["allowed"],
            )
        self._recoveries_seen = len(events)
        self._emit(
            "thought",
            result=result.kind,
            requests=result.requests,
            modelMs=round(model_ms, 2),
            selectedTools=len(result.selected_tools),
        )
        for warning in result.warnings:
            self._emit("notice", code=warning)

    def _emit(self, event: EventKind, /, **body: Any) -> None:
        with contextlib.suppress(Exception):  # a broken view must not break the task
            self.sink(AgentEvent(event, body))


def _named_path(arguments: Mapping[str, Any]) -> dict[str, str]:
    """The path a file tool was asked for, as the model wrote it (a path is not typed text;
    the smoke suite checks that a read used the cwd-relative path it was told)."""
    path = arguments.get("path")
    return {"path": path} if isinstance(path, str) else {}


def _since(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000.0
