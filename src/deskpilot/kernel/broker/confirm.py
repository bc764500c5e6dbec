"""Step 4's wait: an action (or launch) the policy sends to the person runs only once they
confirm it (kernel/confirmation.py holds the path end to end; docs/kernel.md,
"Confirmations").

Its ledger row is written before the wait. Anything but an approval — a denial, the timeout,
a pause/stop/kill meanwhile, or the wait itself cancelled — is recorded on that row and as
``action_blocked``, so the ledger never holds an action left waiting.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from deskpilot.kernel.confirmation import Confirmations
from deskpilot.kernel.policy import PolicyDecision, Reason
from deskpilot.kernel.session_manager import SessionManager
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import EventType
from deskpilot.store.db import Database
from deskpilot.store.ledger import ActionRepository


@dataclass
class ConfirmationWait:
    db: Database
    sessions: SessionManager
    actions: ActionRepository
    confirmations: Confirmations

    async def confirm(
        self,
        session_id: str,
        aid: str,
        kind: str,
        decision: PolicyDecision,
        summary: str,
        requested: dict[str, Any],
        timeout_s: float,
        *,
        noun: str = "action",
    ) -> tuple[str, float]:
        """Ask the person to confirm (L3+): (confirmation id, ms waited) when approved; a
        denial, expiry or abandoned wait is recorded (ledger + action_blocked) and raised."""
        t0 = time.monotonic()
        try:
            confirmation, outcome = await self.confirmations.request(
                session_id, aid, kind, decision.risk, decision.reason, summary, timeout_s
            )
        except BaseException:  # cancelled while waiting (a stop, the bounded budget ran out)
            self._record_refusal(session_id, aid, None, requested, decision, "abandoned")
            raise
        if outcome != "approved":
            reason = self._record_refusal(
                session_id, aid, confirmation.id, requested, decision, outcome
            )
            # a pause/stop during the wait is reported as that, not as a refusal
            self.sessions.require_executable(session_id)
            waited_ms = (time.monotonic() - t0) * 1000
            if outcome == "denied":
                what = f"the person denied this {decision.risk.label} {noun} (approval_denied)"
            else:
                what = (
                    f"the confirmation of this {decision.risk.label} {noun} expired before the "
                    "person answered; asking again later is fine if the user still wants it"
                )
            raise DeskpilotError(
                ErrorCode.APPROVAL_DENIED,
                f"{what}; nothing was done; do not retry it unchanged",
                details={
                    "reason": reason,
                    "confirmationId": confirmation.id,
                    # the time the person was waited for (the call's approvalMs)
                    "approvalMs": round(waited_ms),
                },
            )
        return confirmation.id, (time.monotonic() - t0) * 1000

    def _record_refusal(
        self,
        session_id: str,
        aid: str,
        approval_id: str | None,
        requested: dict[str, Any],
        decision: PolicyDecision,
        outcome: str,
    ) -> str:
        reason = {
            "denied": Reason.CONFIRMATION_DENIED.value,
            "expired": Reason.CONFIRMATION_EXPIRED.value,
        }.get(outcome, "confirmation_abandoned")
        with self.db.transaction() as conn:
            if approval_id is not None:
                self.actions.set_status(aid, "blocked", approval_id=approval_id, conn=conn)
            self.actions.finish(aid, "blocked", error_code="approval_denied", conn=conn)
            self.sessions.timeline.append(
                session_id,
                EventType.ACTION_BLOCKED,
                action_id=aid,
                payload={**requested, "reason": reason, "policyReason": decision.reason},
                conn=conn,
            )
        return reason


def summary(kind: str, decision: PolicyDecision) -> str:
    """What the person is asked to confirm: kind, target, app, site, level and signals —
    never typed text."""
    ctx = decision.context
    app = ctx.app.name or ctx.app.executable or "an app"
    where = f" on {ctx.target_label}" if ctx.target_label else ""
    site = f" at {ctx.host}" if ctx.host else ""
    why = ", ".join(ctx.signals) or ctx.effect.value
    return f"{kind}{where} in {app}{site} — {decision.risk.label} ({why})"
