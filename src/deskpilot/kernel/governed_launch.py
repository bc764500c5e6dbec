"""App launches as governed actions: the broker's order, with a spawn instead of a host call.

A launch passes the same gates as any action (kernel/broker/): the kill-switch halt, the settings'
``enabled``, the session's executable state and its contract budgets; then the launch policy
(``policy/launch_rules.py``) rates it and decides; the ledger row and ``action_requested`` are
written before anything runs; a denial is recorded as ``action_blocked``; L3 and above wait
for the person's one-time confirmation (``deskpilot confirm approve``). Only then, holding the
desktop lane, does the kernel call the runtime's ``spawn`` (the kernel never imports the
runtime: the caller hands it the two callables).

The action is not over when the process exists: the runtime's ``watch`` then waits for the
app's window, and its report — a window, an exit code, or still running without a window —
is the action's recorded outcome. A pause or stop during that wait ends the watch; the
process keeps running (it is the person's to close) and the ledger says it was started.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from deskpilot.kernel.broker import Broker
from deskpilot.kernel.policy import PolicyDecision
from deskpilot.kernel.policy.launch_rules import LAUNCH_KIND, LaunchRequest, evaluate_launch
from deskpilot.protocol.errors import DeskpilotError
from deskpilot.protocol.session import EXECUTABLE_STATES

#: starts the program (argv as approved) and returns its pid; raises DeskpilotError if it
#: could not be started
Spawn = Callable[[tuple[str, ...]], int]
#: waits for what becomes of that pid
Watch = Callable[[int], Awaitable["LaunchReport"]]

STATE_POLL_SECONDS = 0.1
SUMMARY_ARGV_CHARS = 300


@dataclass(frozen=True, slots=True)
class LaunchReport:
    """What became of the started process, as the runtime saw it."""

    window_id: str | None = None
    #: the process exited before any window of it showed
    exit_code: int | None = None
    #: the wait ended with the process alive and no window
    running: bool = False
    #: the wait was ended by a session state change (paused, canceled, …)
    interrupted: str | None = None

    def outcome(self, pid: int) -> dict[str, Any]:
        out: dict[str, Any] = {"method": "spawn", "pid": pid}
        if self.window_id is not None:
            out["windowId"] = self.window_id
        if self.exit_code is not None:
            out["exitCode"] = self.exit_code
            out["exitedBeforeWindow"] = self.window_id is None
        if self.running:
            out["runningWithoutWindow"] = True
        if self.interrupted is not None:
            out["watchEnded"] = self.interrupted
        return out


@dataclass(frozen=True, slots=True)
class LaunchResult:
    action_id: str
    pid: int
    report: LaunchReport
    decision: PolicyDecision
    approval_ms: float = 0.0


class Launches:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def params_hash(self, req: LaunchRequest) -> str:
        """Keyed like the broker's: equal launches compare equal, arguments stay unreadable."""
        body = json.dumps(
            [req.program, req.entry_args, req.agent_args, req.desktop_id], separators=(",", ":")
        ).encode()
        return self.broker.keyed_hash(body)

    async def launch(
        self,
        session_id: str,
        request: LaunchRequest,
        spawn: Spawn,
        watch: Watch,
        *,
        action_id: str | None = None,
    ) -> LaunchResult:
        b = self.broker
        row, settings = b.admit(session_id, "launch")

        decision = evaluate_launch(request, row.contract, settings)
        requested = {
            **b.event_payload(decision),
            "rating": decision.details.get("rating"),
            "program": request.executable,
            "desktopId": request.desktop_id,
            "agentArgs": len(request.agent_args),
        }
        aid, approval_id, approval_ms = await b.request_outside(
            session_id,
            kind=LAUNCH_KIND,
            decision=decision,
            params_hash=self.params_hash(request),
            requested=requested,
            summary=_summary(request, decision),
            settings=settings,
            noun="launch",
            action_id=action_id,
        )
        async with b.lane_for(session_id, row.agent_session_id, aid, approval_id):
            try:
                pid = spawn(request.argv)
            except DeskpilotError as exc:
                b.finish_failed(session_id, aid, exc)
                raise
        report = await self._watch(session_id, pid, watch, aid, decision)
        if report.interrupted is not None:
            b.sessions.require_executable(session_id)  # says paused / canceled
        return LaunchResult(aid, pid, report, decision, approval_ms)

    async def _watch(
        self, session_id: str, pid: int, watch: Watch, aid: str, decision: PolicyDecision
    ) -> LaunchReport:
        """Run the runtime's watch while the session stays executable; record its report."""
        b = self.broker
        task = asyncio.ensure_future(watch(pid))
        report: LaunchReport | None = None
        try:
            while not task.done():
                state = b.sessions.require(session_id).state
                if state not in EXECUTABLE_STATES:
                    report = LaunchReport(interrupted=state.value)
                    break
                await asyncio.wait({task}, timeout=STATE_POLL_SECONDS)
            if report is None:
                report = task.result()
        except BaseException as exc:
            ended = "cancelled" if isinstance(exc, asyncio.CancelledError) else "watch_failed"
            self._executed(session_id, aid, pid, LaunchReport(interrupted=ended), decision)
            raise
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        self._executed(session_id, aid, pid, report, decision)
        return report

    def _executed(
        self, session_id: str, aid: str, pid: int, report: LaunchReport, decision: PolicyDecision
    ) -> None:
        self.broker.finish_outside(
            session_id, aid, LAUNCH_KIND, decision.risk.label, report.outcome(pid)
        )


def _summary(req: LaunchRequest, decision: PolicyDecision) -> str:
    """What the person confirms: the exact command, so they know what would run."""
    argv = shlex.join((req.program, *req.entry_args, *req.agent_args))
    if len(argv) > SUMMARY_ARGV_CHARS:
        argv = argv[: SUMMARY_ARGV_CHARS - 1] + "…"
    why = ", ".join(decision.context.signals)
    return f"start {argv} — {decision.risk.label} ({why})"
