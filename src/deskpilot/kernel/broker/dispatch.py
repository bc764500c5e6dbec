"""Step 5: the desktop lane, then the backend; the outcome is written and told.

The lane (kernel/coordinator.py) is claimed on a session's first action and its action lock
held for the call, so input of two sessions never interleaves; the move to acting happens
under it, still before anything reaches the desktop. The frame is consumed on the way (the
host forgets it too); a complete post-action observation the host carried back becomes the
session's current one. While the call runs the action is in flight (kernel/interrupts.py):
the person's physical Escape ends this action only and hands the session to them
(docs/kernel.md, "Broker").
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from deskpilot.hostclient.api import ActionReply, DesktopBackend
from deskpilot.kernel import visual_tree
from deskpilot.kernel.broker.controls import end_inflight
from deskpilot.kernel.broker.ledger import Ledger
from deskpilot.kernel.coordinator import DesktopCoordinator
from deskpilot.kernel.flags import Flags
from deskpilot.kernel.frames import CurrentFrames
from deskpilot.kernel.interrupts import InFlight, InFlightRegistry
from deskpilot.kernel.policy import PolicyDecision
from deskpilot.kernel.results import ExecutedAction
from deskpilot.kernel.rollout import RolloutController
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import ExecuteAction
from deskpilot.store.ledger import ActionRow
from deskpilot.store.session_rows import SessionRow

#: a backend call failing with one of these is a host-crash sample for rollout
HOST_DEATH_CODES = frozenset(
    {
        ErrorCode.NATIVE_HOST_UNAVAILABLE,
        ErrorCode.ACTION_TIMEOUT,
        ErrorCode.PROTOCOL_ERROR,
        ErrorCode.HOST_HANDSHAKE_FAILED,
    }
)


def host_sample(rollout: RolloutController, exc: DeskpilotError | None) -> None:
    """Every backend call (observe, execute) is one host-crash and one artifact sample
    (docs/kernel.md, "Flags and rollback")."""
    code = None if exc is None else exc.code
    rollout.record_host_call(code in HOST_DEATH_CODES)
    rollout.record_artifact_check(code == ErrorCode.NATIVE_HOST_UNTRUSTED)


@dataclass
class Dispatcher:
    backend: DesktopBackend
    coordinator: DesktopCoordinator
    inflight: InFlightRegistry
    frames: CurrentFrames
    ledger: Ledger
    flags: Flags
    rollout: RolloutController
    #: a last check under the lane, just before the desktop is touched (the takeover hold:
    #: an action that waited for the lane or a confirmation meanwhile is refused there);
    #: called with the session, the action id and whether its ledger row is written yet
    gate: Callable[[str, str, bool], None] | None = None

    async def dispatch(
        self,
        row: SessionRow,
        ledger: ActionRow,
        requested: dict[str, Any] | None,
        request: ExecuteAction,
        decision: PolicyDecision,
        approval_id: str | None = None,
        approval_ms: float = 0.0,
    ) -> ExecutedAction:
        """Run an allowed action. ``requested`` is the action_requested payload when the ledger
        row is not written yet (allowed at once); None when it was (after a confirmation)."""
        session_id, aid, action = row.id, ledger.id, request.action
        if not self.coordinator.holds(session_id):
            await self.coordinator.claim(session_id, row.agent_session_id)
        async with self.coordinator.action_lock:
            if self.gate is not None:
                self.gate(session_id, aid, requested is None)
            self.ledger.move_to_acting(
                session_id,
                aid,
                approval_id,
                insert=(ledger, requested) if requested is not None else None,
            )
            item = self.inflight.add(session_id, aid, action)
            try:
                reply = await self._run(item, request)
            except DeskpilotError as exc:
                self.ledger.finish_failed(session_id, aid, exc)
                raise
            finally:
                self.inflight.remove(item)
        result, post = reply.result, reply.post
        if post is not None:
            # the host bound it: the next action may use it, unless a pause, stop or takeover
            # dropped the session's frame while OCR read it
            since = self.frames.generation(session_id)
            post = await visual_tree.outlined(post)  # no tree: an OCR outline
            self.frames.put(session_id, post, since=since)
        self.ledger.record_executed(session_id, aid, action.kind, result, decision, post)
        return ExecutedAction(
            result,
            aid,
            decision.risk,
            decision.decision,
            decision.reason,
            approval_ms,
            signals=decision.context.signals,
            post=post,
        )

    async def _run(self, item: InFlight, request: ExecuteAction) -> ActionReply:
        """The backend call, raced against the person's Escape for this in-flight item."""
        self.frames.consume(item.session_id)  # the host forgets it too, whatever happens
        task: asyncio.Task[ActionReply] = asyncio.ensure_future(self.backend.execute(request))
        item.task = task
        interrupted = asyncio.ensure_future(item.interrupted.wait())
        try:
            done, _ = await asyncio.wait({task, interrupted}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            interrupted.cancel()
        if task in done:
            try:
                result = task.result()
            except DeskpilotError as exc:
                host_sample(self.rollout, exc)
                raise
            host_sample(self.rollout, None)
            return result
        # the person pressed Escape: end this action only, hand the session to them
        await end_inflight(self.backend, self.flags, item, "the person pressed Escape")
        raise DeskpilotError(
            ErrorCode.HANDOFF_REQUIRED,
            "the person pressed Escape during this action, so it was cancelled; the session "
            "waits for them (handoff_required). Do not repeat the action.",
            retryable=False,
            details={"reason": item.interrupt_reason or "physical_escape"},
        )
