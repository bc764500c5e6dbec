"""The broker: every action passes here, in this order (docs/kernel.md, "Broker").

1. Admission (admission.py): the session exists and may act; the kill-switch halt does not
   bind its agent; no takeover holds the desktop (kernel/takeover.py); computer use is
   enabled; the contract's budgets are not spent.
2. Idempotency (idempotency.py): an actionId names one action, once.
3. Freshness: frameId and treeVersion must equal the session's current observation
   (``CurrentFrames.check``, kernel/frames.py; ``stale_frame`` / ``stale_tree``). The
   foreground app is *not* checked: a bound session keeps working on its window while the
   person uses another one.
4. Policy (risk, decision, reason; rating.py), and the ledger row written with them
   (ledger.py), before anything reaches the desktop; a denial is recorded and raised as
   ``action_blocked``; a required confirmation waits for the person (confirm.py).
5. The desktop lane, then the backend (dispatch.py); the outcome is written and told. Under
   the lane the takeover hold is checked once more, so an action that waited for the lane
   (or for a confirmation) while the person took the desktop over is refused there.

Pause, resume, stop, kill and bind_target, and how an action in flight is ended, are in
controls.py; observing (which makes a frame current) is the kernel's own (kernel/kernel.py).
This module only wires the steps together; each holds the state it needs,
shared through the objects the broker creates.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

from deskpilot.hostclient.api import DesktopBackend
from deskpilot.kernel import visual_tree
from deskpilot.kernel.broker import admission, idempotency, rating
from deskpilot.kernel.broker.confirm import ConfirmationWait, summary
from deskpilot.kernel.broker.controls import ControlHooks, Controls, ResumeHook, StopHook
from deskpilot.kernel.broker.dispatch import Dispatcher
from deskpilot.kernel.broker.idempotency import ParamsHasher
from deskpilot.kernel.broker.ledger import Ledger
from deskpilot.kernel.broker.records import blocked_error, dispatched, event_payload, ledger_row
from deskpilot.kernel.broker.settings import SettingsCache
from deskpilot.kernel.confirmation import Confirmations
from deskpilot.kernel.coordinator import DesktopCoordinator
from deskpilot.kernel.flags import Flags
from deskpilot.kernel.frames import CurrentFrames
from deskpilot.kernel.halt import Halt
from deskpilot.kernel.interrupts import InFlightRegistry
from deskpilot.kernel.policy import PolicyDecision
from deskpilot.kernel.results import ExecutedAction
from deskpilot.kernel.rollout import RolloutController
from deskpilot.kernel.session_manager import SessionManager
from deskpilot.kernel.takeover import Takeover
from deskpilot.protocol.errors import DeskpilotError
from deskpilot.protocol.session import CancelReason, Decision, EventType
from deskpilot.protocol.wire import ExecuteAction
from deskpilot.store.db import Database
from deskpilot.store.ledger import ActionRepository
from deskpilot.store.session_rows import SessionRow
from deskpilot.store.settings import SettingsModel

__all__ = ["Broker", "ControlHooks", "ResumeHook", "StopHook", "ledger_row"]


class Broker:
    def __init__(
        self,
        db: Database,
        backend: DesktopBackend,
        *,
        sessions: SessionManager | None = None,
        flags: Flags | None = None,
        rollout: RolloutController | None = None,
    ) -> None:
        self.db = db
        self.backend = backend
        self.sessions = sessions or SessionManager(db)
        self.actions = ActionRepository(db)
        self.flags = flags or Flags()
        self.rollout = rollout or RolloutController(self.flags)
        self.halt = Halt(db)
        self.takeover = Takeover(db)
        self.confirmations = Confirmations(db, self.sessions)
        self.coordinator = DesktopCoordinator(db, self._stop_for_claim)
        self.inflight = InFlightRegistry()
        self.frames = CurrentFrames()
        backend.on_reconnect(self.frames.drop)
        self.hooks = ControlHooks()
        self._hasher = ParamsHasher(db)
        self._settings = SettingsCache(db)
        self.refusals = admission.RefusalLog(self.sessions)
        self._ledger = Ledger(db, self.sessions, self.actions, self.rollout)
        self._confirm = ConfirmationWait(db, self.sessions, self.actions, self.confirmations)
        self._dispatcher = Dispatcher(
            backend,
            coordinator=self.coordinator,
            inflight=self.inflight,
            frames=self.frames,
            ledger=self._ledger,
            flags=self.flags,
            rollout=self.rollout,
            gate=self._gate,
        )
        self._controls = Controls(
            db,
            backend,
            self.sessions,
            halt=self.halt,
            coordinator=self.coordinator,
            frames=self.frames,
            inflight=self.inflight,
            flags=self.flags,
            rollout=self.rollout,
            hooks=self.hooks,
            takeover=self.takeover,
        )
        self.handbacks = self._controls.handbacks
        # the steps' entry points, as kernel/kernel.py and kernel/governed_launch.py call them
        self.keyed_hash = self._hasher.keyed_hash
        self.params_hash = self._hasher.params_hash
        self.record_request = self._ledger.record_request
        self.move_to_acting = self._ledger.move_to_acting
        self.finish_failed = self._ledger.finish_failed
        self.finish_outside = self._ledger.finish_outside
        self.confirm = self._confirm.confirm
        self.pause = self._controls.pause
        self.resume = self._controls.resume
        self.stop = self._controls.stop
        self.bind_target = self._controls.bind_target
        self.drop_closed_binding = self._controls.drop_closed_binding

    event_payload = staticmethod(event_payload)
    blocked_error = staticmethod(blocked_error)
    check_budgets = staticmethod(admission.check_budgets)

    def settings(self) -> SettingsModel:
        """Current settings; rows written by another process are picked up within 1 s."""
        return self._settings.get()

    def admit(self, session_id: str, kind: str | None = None) -> tuple[SessionRow, SettingsModel]:
        """Step 1, for actions and launches alike (admission.py); a refusal is recorded
        (``action_refused``, collapsed)."""
        return admission.admit(
            self.sessions,
            self.halt,
            self.takeover,
            self.settings,
            session_id,
            kind=kind,
            refusals=self.refusals,
        )

    def _gate(self, session_id: str, aid: str, written: bool) -> None:
        """The takeover hold, under the lane just before the desktop is touched; a refused
        action whose ledger row is written already (it waited for a confirmation) ends
        there as blocked, with its action_blocked event."""
        try:
            self.takeover.check()
        except DeskpilotError as exc:
            if written:
                self.actions.finish(aid, "blocked", error_code=exc.code.value)
                self.sessions.record(
                    session_id,
                    EventType.ACTION_BLOCKED,
                    action_id=aid,
                    payload={"reason": exc.details.get("reason"), "code": exc.code.value},
                )
            raise

    async def request_outside(
        self,
        session_id: str,
        *,
        kind: str,
        decision: PolicyDecision,
        params_hash: str,
        requested: dict[str, Any],
        summary: str,
        settings: SettingsModel,
        noun: str,
        action_id: str | None = None,
    ) -> tuple[str, str | None, float]:
        """Steps 3–4 for a governed action outside every window (a launch, a shell command):
        the ledger row and action_requested before anything runs (a denial is recorded and
        raised), then the person's one-time confirmation when the decision asks for it.
        Returns the action id, the approval id and the time the person took."""
        aid = action_id or f"act_{uuid.uuid4().hex[:20]}"
        ledger = ledger_row(aid, session_id, kind, params_hash, decision)
        self.record_request(session_id, ledger, requested, decision)
        if decision.decision != Decision.REQUIRE_APPROVAL:
            return aid, None, 0.0
        approval_id, approval_ms = await self.confirm(
            session_id,
            aid,
            kind,
            decision,
            summary,
            requested,
            settings.confirmation_timeout_seconds,
            noun=noun,
        )
        self.sessions.require_executable(session_id)
        return aid, approval_id, approval_ms

    @contextlib.asynccontextmanager
    async def lane_for(
        self, session_id: str, agent_session_id: str, aid: str, approval_id: str | None
    ) -> AsyncIterator[None]:
        """Step 5 for such an action: the desktop lane (claimed if the session does not hold
        it), then the session to acting and the row to executing, while the body runs."""
        if not self.coordinator.holds(session_id):
            await self.coordinator.claim(session_id, agent_session_id)
        async with self.coordinator.action_lock:
            self._gate(session_id, aid, True)
            self.move_to_acting(session_id, aid, approval_id)
            yield

    async def execute(
        self,
        request: ExecuteAction,
        *,
        action_id: str | None = None,
        expected_app: str | None = None,
    ) -> ExecutedAction:
        """One action through the five steps of the module docstring, in that order; the
        request is the wire model the host client sends as it is."""
        session_id, action = request.session_id or "", request.action
        # 1. admission
        row, settings = self.admit(session_id, action.kind)
        # 2. idempotency: an executed actionId answers its recorded outcome
        aid = action_id or f"act_{uuid.uuid4().hex[:20]}"
        phash = self.params_hash(action)
        existing = self.actions.get(aid)
        if existing is not None:
            replay = idempotency.replay(existing, session_id, phash)
            if replay is not None:
                return replay
        # 3. freshness: against the session's current observation, not the foreground
        obs = self.frames.check(session_id, request.frame_id, request.tree_version)
        # a visual (OCR) frame: the host's version, element actions as points of the image
        # (what only an accessibility element can do is refused here, before the rating);
        # the action rated below is the one requested: what passes activates as the left
        # click sent for it does, and on a visual tree its target is unknown (policy)
        host_request = visual_tree.for_host(self.frames.get(session_id), request)
        # 4. policy, then the ledger row (and the person, when the policy asks for them)
        row, decision = await rating.rate(
            self.sessions, self._controls, row, obs, action, settings, expected_app
        )
        if existing is not None:  # blocked / failed before: answered as recorded
            idempotency.answer_recorded(existing, decision)
        ledger = ledger_row(
            aid,
            session_id,
            action.kind,
            phash,
            decision,
            frame_id=request.frame_id,
            tree_version=request.tree_version,
        )
        requested = event_payload(decision)
        if host_request.action != action:  # rewritten: the timeline says what was sent
            requested["dispatched"] = dispatched(host_request.action)
        if decision.decision == Decision.ALLOW:
            # the row and its action_requested event are written together with the move to
            # acting, under the desktop lane, still before anything reaches the desktop
            done = await self._dispatcher.dispatch(row, ledger, requested, host_request, decision)
            self.handbacks.seen(session_id, done.post)
            return done
        self.record_request(session_id, ledger, requested, decision)  # a denial raises here
        approval_ms = 0.0
        approval_id: str | None = None
        if decision.decision == Decision.REQUIRE_APPROVAL:
            approval_id, approval_ms = await self.confirm(
                session_id,
                aid,
                action.kind,
                decision,
                summary(action.kind, decision),
                requested,
                settings.confirmation_timeout_seconds,
            )
            row = self.sessions.require_executable(session_id)
        # 5. the desktop lane, then the backend
        done = await self._dispatcher.dispatch(
            row, ledger, None, host_request, decision, approval_id, approval_ms
        )
        self.handbacks.seen(session_id, done.post)  # what a takeover's hand back compares with
        return done

    async def refuse_if_denied(
        self, request: ExecuteAction, *, expected_app: str | None = None
    ) -> None:
        """Steps 1, 3 and 4 for a later step of one tool call, before its first step is
        dispatched: a tool call of several actions (focus, then type) is refused whole when
        the policy denies any of them, so a refused call has no effect. A denial is recorded
        (ledger row, ``action_blocked`` event) and raised as ``execute`` would; anything
        else records nothing and dispatches nothing (the step runs through ``execute``
        later, rated again against the frame it is sent with)."""
        session_id, action = request.session_id or "", request.action
        row, settings = self.admit(session_id, action.kind)
        obs = self.frames.check(session_id, request.frame_id, request.tree_version)
        row, decision = await rating.rate(
            self.sessions, self._controls, row, obs, action, settings, expected_app
        )
        if decision.decision != Decision.DENY:
            return
        aid = f"act_{uuid.uuid4().hex[:20]}"
        ledger = ledger_row(
            aid,
            session_id,
            action.kind,
            self.params_hash(action),
            decision,
            frame_id=request.frame_id,
            tree_version=request.tree_version,
        )
        self.record_request(session_id, ledger, event_payload(decision), decision)  # raises

    async def _stop_for_claim(self, session_id: str, reason: CancelReason) -> object:
        """The coordinator's way to stop a sibling session that holds the desktop."""
        return await self.stop(session_id, reason)

    def close(self) -> None:
        self._settings.close()
