"""The provider turn, thin: prepare, request, judge, repair within budget, return.

Policy lives in ``turn``/``tools``/``protocol``; this module only sequences them (its length is
capped by the architecture test so it stays that way).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Collection, Sequence

from deskpilot.provider.config import ProviderConfig, load_config
from deskpilot.provider.contract import ProviderError
from deskpilot.provider.protocol import PROTOCOL_VERSION, ChatMessage, build_payload, serialise
from deskpilot.provider.telemetry import DebugLog, NullTelemetry, Telemetry
from deskpilot.provider.tools import ToolSpec, tools_hash
from deskpilot.provider.transport import ChatClient
from deskpilot.provider.turn import (
    ExecutionLedger,
    PreparedTurn,
    RecoveryBudget,
    Step,
    TurnResult,
    fallback_plan,
    judge,
    prepare_turn,
    repair_prompt,
    vision_gate,
)


class Provider:
    """Messages + tools in; a validated tool call or a final answer out, with the ledger."""

    def __init__(
        self,
        config: ProviderConfig,
        *,
        telemetry: Telemetry | None = None,
        client: ChatClient | None = None,
    ) -> None:
        self.config = config
        if telemetry is None:
            telemetry = DebugLog(config.debug_path) if config.debug_path else NullTelemetry()
        self.telemetry = telemetry
        self.client = client or ChatClient(config, telemetry=telemetry)

    @classmethod
    def from_environment(cls, **overrides: object) -> Provider:
        return cls(load_config(**overrides))  # type: ignore[arg-type]

    async def __aenter__(self) -> Provider:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.client.aclose()

    async def decide(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        *,
        ledger: ExecutionLedger | None = None,
        plan_mode: bool = False,
        abort: asyncio.Event | None = None,
        pinned: Collection[str] = (),
    ) -> TurnResult:
        limits = self.config.limits
        prepared = prepare_turn(
            messages, tools, max_tools=limits.max_tools, plan_mode=plan_mode, pinned=pinned
        )
        ledger = ledger if ledger is not None else ExecutionLedger()
        ledger.sync(messages)
        budget = RecoveryBudget(limits)
        self.telemetry.emit(
            "turn.start",
            protocol_version=PROTOCOL_VERSION,
            profile=self.config.profile,
            toolSelectionSummary=prepared.selection.summary(),
            selected_tool_hash=tools_hash(prepared.selected),
            runtime_bounds=limits.bounds(),
            **prepared.selection.telemetry(),
        )
        repair: str | None = None
        requests, warnings = 0, list[str]()
        blocked = vision_gate(prepared)  # an image task with no vision tool: nothing is sent
        if blocked is not None:
            return self._end(prepared, ledger, budget, requests, warnings, error=blocked)
        while True:
            chat = serialise(
                messages,
                prepared.system,
                max_result_chars=limits.max_tool_result_chars,
                max_history_chars=limits.max_tool_history_chars,
                repair=repair,
            )
            payload = build_payload(
                self.config.model,
                chat,
                max_tokens=limits.max_output_tokens,
                json_object_hint=self.config.json_object_hint,
                temperature=self.config.temperature,
            )
            requests += 1
            try:
                response = await self.client.complete(payload, abort=abort)
            except ProviderError as err:
                return self._end(prepared, ledger, budget, requests, warnings, error=err)
            step = judge(response.content, response.native_tool_calls, prepared, messages, ledger)
            self._note_warnings(step, warnings)
            if step.accepted:
                if step.call is not None:
                    ledger.propose(step.call)
                return self._end(prepared, ledger, budget, requests, warnings, step=step)
            assert step.code is not None
            allowed, cat = budget.spend(step.code)
            ledger.note_recovery(step.code, cat, allowed)
            self.telemetry.emit(
                f"recovery.{cat}",
                code=step.code,
                reason=step.reason,
                allowed=allowed,
                form=step.verdict.form if step.verdict else "",
            )
            if not allowed:
                return self._exhausted(step, prepared, ledger, budget, requests, warnings)
            raw = response.content or json.dumps(response.native_tool_calls or [])
            named = step.tool_name
            repair = repair_prompt(
                step.code,
                step.message,
                selected=prepared.selected,
                raw=raw,
                tool=prepared.tools.get(named) if named else None,
                suggestion=step.suggestion,
            )

    def _note_warnings(self, step: Step, warnings: list[str]) -> None:
        if step.verdict is None or not step.verdict.warnings:
            return
        warnings.extend(w for w in step.verdict.warnings if w not in warnings)
        self.telemetry.emit(
            "argument_validation.warning",
            argument_validation_warning_count=len(step.verdict.warnings),
            argument_validation_warning_codes=list(step.verdict.warnings),
            tool=step.verdict.name,
        )

    def _exhausted(
        self,
        step: Step,
        prepared: PreparedTurn,
        ledger: ExecutionLedger,
        budget: RecoveryBudget,
        requests: int,
        warnings: list[str],
    ) -> TurnResult:
        """Plan mode falls back to a local plan; an unrepaired premature final is returned
        with a warning; everything else stops with ``recovery_exhausted``."""
        if step.code == "plan_missing":
            text = fallback_plan(prepared.latest_user, step.final or "")
            warnings.append("plan_fallback")
            return self._end(prepared, ledger, budget, requests, warnings, step=Step(final=text))
        if step.code == "premature_final" and step.final is not None:
            warnings.append("premature_final_unrepaired")
            return self._end(
                prepared, ledger, budget, requests, warnings, step=Step(final=step.final)
            )
        error = ProviderError(
            "recovery_exhausted",
            f"recovery budget spent; last problem {step.code}: {step.message}",
            detail={"cause": step.code},
        )
        return self._end(prepared, ledger, budget, requests, warnings, error=error)

    def _end(
        self,
        prepared: PreparedTurn,
        ledger: ExecutionLedger,
        budget: RecoveryBudget,
        requests: int,
        warnings: list[str],
        *,
        step: Step | None = None,
        error: ProviderError | None = None,
    ) -> TurnResult:
        if error is not None:
            kind = "error"
        elif step is not None and step.call is not None:
            kind = "tool_call"
        else:
            kind = "final"
        result = TurnResult(
            kind=kind,  # type: ignore[arg-type]
            ledger=ledger,
            tool_call=step.call if step else None,
            text=step.final if step and step.call is None else None,
            error=error,
            selected_tools=tuple(t.name for t in prepared.selected),
            recoveries=dict(budget.used),
            requests=requests,
            warnings=tuple(warnings),
        )
        self.telemetry.emit(
            "turn.end",
            kind=kind,
            tool=result.tool_call.name if result.tool_call else None,
            requests=requests,
            recoveries=budget.total,
            errorCode=error.code if error else None,
            warnings=list(warnings),
        )
        return result
