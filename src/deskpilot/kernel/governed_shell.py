"""Shell commands as governed actions: the launch's order (governed_launch.py), with a run.

A command passes the same gates as any action (kernel/broker/): the kill-switch halt, the
settings' ``enabled``, the session's executable state and its contract budgets; then the
shell policy (``policy/shell_rules.py``) rates it and decides; the ledger row and
``action_requested`` are written before anything runs; a denial is recorded as
``action_blocked``; L3 waits for the person's one-time confirmation (``deskpilot confirm
approve``), whose summary shows the exact command. Only then does the kernel call the
caller's runner (the kernel never spawns anything itself and never sees the output).

The command holds the desktop lane while it runs: it can drive the desktop through X tools,
so no other action interleaves with it. A pause or stop of the session during the run ends
it — the runner is cancelled, which kills its process group — and the ledger says so
(``interrupted``). What the ledger and the timeline keep is how it ran: exit code, timed out,
output sizes, duration; never the output, and never the command (the params hash is keyed).
The confirmation's summary is the one place the command text is stored, bounded, because the
person must see what they approve.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from deskpilot.kernel.broker import Broker
from deskpilot.kernel.policy import PolicyDecision
from deskpilot.kernel.policy.shell_rules import (
    SHELL_KIND,
    ShellRequest,
    evaluate_shell,
    validate_shell,
)
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import EXECUTABLE_STATES

#: runs the command as approved and reports how it ran; cancelled, it kills what it started
Run = Callable[[ShellRequest], Awaitable["ShellReport"]]

STATE_POLL_SECONDS = 0.1
SUMMARY_COMMAND_CHARS = 300


@dataclass(frozen=True, slots=True)
class ShellReport:
    """How the command ran, as the runner saw it (never its output)."""

    #: the shell's exit status; negative = killed by that signal; None = never started
    exit_code: int | None
    timed_out: bool = False
    duration_ms: float = 0
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    #: the run was ended by a session state change (paused, canceled …) or cancelled
    interrupted: str | None = None

    def outcome(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "method": "sh",
            "exitCode": self.exit_code,
            "timedOut": self.timed_out,
            "durationMs": round(self.duration_ms, 1),
            "stdoutBytes": self.stdout_bytes,
            "stderrBytes": self.stderr_bytes,
        }
        if self.interrupted is not None:
            out["interrupted"] = self.interrupted
        return out


@dataclass(frozen=True, slots=True)
class ShellResult:
    action_id: str
    report: ShellReport
    decision: PolicyDecision
    approval_ms: float = 0.0


class Shells:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def params_hash(self, req: ShellRequest) -> str:
        """Keyed like the broker's: equal commands compare equal, their text stays unreadable."""
        body = json.dumps([req.command, req.cwd, req.timeout_s], separators=(",", ":")).encode()
        return self.broker.keyed_hash(body)

    async def run(
        self, session_id: str, request: ShellRequest, run: Run, *, action_id: str | None = None
    ) -> ShellResult:
        validate_shell(request)
        b = self.broker
        row, settings = b.admit(session_id, "shell")

        decision = evaluate_shell(request, row.contract, settings)
        requested = {
            **b.event_payload(decision),
            "rating": decision.details.get("rating"),
            "cwd": request.cwd,
            "timeoutS": request.timeout_s,
            "commandChars": len(request.command),
        }
        aid, approval_id, approval_ms = await b.request_outside(
            session_id,
            kind=SHELL_KIND,
            decision=decision,
            params_hash=self.params_hash(request),
            requested=requested,
            summary=_summary(request, decision),
            settings=settings,
            noun="command",
            action_id=action_id,
        )
        async with b.lane_for(session_id, row.agent_session_id, aid, approval_id):
            report = await self._run(session_id, request, run, aid, decision)
        if report.interrupted is not None:
            b.sessions.require_executable(session_id)  # says paused / canceled
        return ShellResult(aid, report, decision, approval_ms)

    async def _run(
        self, session_id: str, request: ShellRequest, run: Run, aid: str, decision: PolicyDecision
    ) -> ShellReport:
        """Run the command while the session stays executable; record its report."""
        b = self.broker
        t0 = time.monotonic()
        task = asyncio.ensure_future(run(request))
        report: ShellReport | None = None
        try:
            while not task.done():
                state = b.sessions.require(session_id).state
                if state not in EXECUTABLE_STATES:
                    task.cancel()
                    with contextlib.suppress(BaseException):
                        await task  # the runner kills the process group
                    report = ShellReport(None, interrupted=state.value, duration_ms=_ms(t0))
                    break
                await asyncio.wait({task}, timeout=STATE_POLL_SECONDS)
            if report is None:
                report = task.result()
        except DeskpilotError as exc:  # the runner could not start the command
            b.finish_failed(session_id, aid, exc)
            raise
        except asyncio.CancelledError:
            self._executed(session_id, aid, ShellReport(None, interrupted="cancelled"), decision)
            raise
        except Exception as exc:
            failed = DeskpilotError(ErrorCode.ACTION_FAILED, f"the command runner failed: {exc}")
            b.finish_failed(session_id, aid, failed)
            raise failed from exc
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        self._executed(session_id, aid, report, decision)
        return report

    def _executed(
        self, session_id: str, aid: str, report: ShellReport, decision: PolicyDecision
    ) -> None:
        self.broker.finish_outside(
            session_id, aid, SHELL_KIND, decision.risk.label, report.outcome()
        )


def _ms(t0: float) -> float:
    return (time.monotonic() - t0) * 1000


def _summary(req: ShellRequest, decision: PolicyDecision) -> str:
    """What the person confirms: the exact command (newlines shown as ⏎) and where it runs."""
    command = req.command.strip().replace("\n", " ⏎ ")
    if len(command) > SUMMARY_COMMAND_CHARS:
        command = command[: SUMMARY_COMMAND_CHARS - 1] + "…"
    why = ", ".join(decision.context.signals)
    return f"run `{command}` in {req.cwd} — {decision.risk.label} ({why})"
