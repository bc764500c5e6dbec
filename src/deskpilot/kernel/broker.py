"""The broker: every action passes here, in this order.

1. The session exists and may act (executable state); the kill-switch halt does not bind its
   agent; computer use is enabled; the contract's step/runtime/no-op budgets are not spent.
2. Idempotency: a reused actionId with different parameters → ``approval_mismatch``; an
   actionId that already executed answers its recorded outcome without running again.
3. Freshness: frameId and treeVersion must equal the session's current observation
   (``stale_frame`` / ``stale_tree``). The foreground app is *not* checked: a bound session
   keeps working on its window while the person uses another one.
4. Policy (risk, decision, reason), and the ledger row written with them, before anything
   reaches the desktop; a denial is recorded (``action_blocked`` with its reason code) and
   raised as ``action_blocked``; a required confirmation waits for the person.
5. The desktop lane (coordinator), then the backend; the outcome is written and told.

Control: pause/takeover (hard pause: observation cache cleared, in-flight action ended,
pending confirmations expired, lane released), resume (only from paused; re-claims the lane
and restarts the operator through the resume hooks on every path), stop (terminal), kill
(stop with reason ``kill_switch``), bind_target (only while paused).

In-flight actions end this way: the backend's ``cancel_session`` (stop/kill) makes the host
forget the session; an action still running is aborted through the backend's
``abort_session`` when it has one (the host client stops the host process — there is no finer
cancellation inside the host; it releases held keys and buttons on the way out). With the
``gracefulCancel`` flag the broker first gives the in-flight action a short grace to end on its
own, which keeps the host process alive for quick actions.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import secrets
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from deskpilot.hostclient.api import DesktopBackend, ObservedState
from deskpilot.kernel.confirmation import Confirmations
from deskpilot.kernel.coordinator import DesktopCoordinator
from deskpilot.kernel.flags import Flags
from deskpilot.kernel.halt import Halt
from deskpilot.kernel.interrupts import InFlight, InFlightRegistry
from deskpilot.kernel.policy import PolicyDecision, Reason, evaluate
from deskpilot.kernel.rollout import RolloutController
from deskpilot.kernel.sessions import SessionManager
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import (
    EXECUTABLE_STATES,
    TERMINAL_STATES,
    CancelReason,
    Decision,
    EventType,
    RiskLevel,
    SessionState,
)
from deskpilot.protocol.wire import Action, ActionResult, ObservationBody, TargetSpec
from deskpilot.store.actions import ActionRepository, ActionRow, ActionStatus
from deskpilot.store.confirmations import ConfirmationRepository
from deskpilot.store.db import Database
from deskpilot.store.sessions import SessionRow
from deskpilot.store.settings import Settings, SettingsModel

log = logging.getLogger(__name__)

HOST_DEATH_CODES = frozenset(
    {
        ErrorCode.NATIVE_HOST_UNAVAILABLE,
        ErrorCode.ACTION_TIMEOUT,
        ErrorCode.PROTOCOL_ERROR,
        ErrorCode.HOST_HANDSHAKE_FAILED,
    }
)
NOT_ACTION_ERRORS = frozenset({ErrorCode.STALE_FRAME, ErrorCode.STALE_TREE})
CANCEL_GRACE_SECONDS = 0.25
SETTINGS_RECHECK_SECONDS = 1.0
_SALT_KEY = "kernel.paramsHashSalt"


@runtime_checkable
class AbortableBackend(Protocol):
    """A backend that can end a session's call in flight (the host client's HostBackend)."""

    async def abort_session(self, session_id: str, reason: str = ...) -> bool: ...


@dataclass(frozen=True, slots=True)
class BrokerResult:
    result: ActionResult
    action_id: str
    risk: RiskLevel
    decision: Decision
    reason: str
    #: time spent waiting for the person's confirmation (a subset of the call)
    approval_ms: float = 0.0
    replayed: bool = False
    signals: tuple[str, ...] = ()
    #: the settled window after the action, when it was asked for and the host could see it
    post: ObservedState | None = None


ResumeHook = Callable[[SessionRow], Awaitable[None]]
StopHook = Callable[[SessionRow, CancelReason | None], None]


@dataclass
class ControlHooks:
    """Where the runtime plugs its operator in: resume relaunches it (every resume path comes
    through the broker), pause/stop tell it to let go."""

    on_resume: list[ResumeHook] = field(default_factory=list)
    on_pause: list[StopHook] = field(default_factory=list)
    on_stop: list[StopHook] = field(default_factory=list)


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
        self.confirmations = Confirmations(db, self.sessions)
        self.coordinator = DesktopCoordinator(db, self._stop_for_claim)
        self.inflight = InFlightRegistry()
        self.hooks = ControlHooks()
        self._salt = self._params_salt()
        self._settings = Settings.load(db)
        self._settings_rev = Settings.revision(db)
        self._settings_checked = time.monotonic()
        self._unsubscribe = Settings.subscribe(self._on_settings)

    # ------------------------------------------------------------------ settings
    def _on_settings(self, db: Database, old: SettingsModel, new: SettingsModel) -> None:
        if db.path == self.db.path:
            self._settings = new

    def settings(self) -> SettingsModel:
        """Current settings; rows written by another process are picked up within 1 s."""
        now = time.monotonic()
        if now - self._settings_checked >= SETTINGS_RECHECK_SECONDS:
            self._settings_checked = now
            rev = Settings.revision(self.db)
            if rev != self._settings_rev:
                self._settings_rev = rev
                self._settings = Settings.load(self.db)
        return self._settings

    def _params_salt(self) -> bytes:
        row = self.db.query_one("SELECT value_json FROM settings WHERE key = ?", (_SALT_KEY,))
        if row is not None:
            return bytes.fromhex(str(row["value_json"]).strip('"'))
        salt = secrets.token_bytes(16)
        self.db.execute(
            "INSERT OR IGNORE INTO settings(key, value_json, updated_at) VALUES (?, ?, ?)",
            (_SALT_KEY, f'"{salt.hex()}"', time.time()),
        )
        return self._params_salt()

    def params_hash(self, action: Action) -> str:
        """A keyed hash of the action's parameters: equal actions compare equal, and typed
        text cannot be recovered from the ledger by guessing."""
        return self.keyed_hash(action.model_dump_json(by_alias=True, exclude_none=True).encode())

    def keyed_hash(self, body: bytes) -> str:
        """The ledger's keyed hash of some parameters (the key never leaves this process)."""
        return hashlib.blake2b(body, key=self._salt, digest_size=16).hexdigest()

    # ------------------------------------------------------------------ observe
    async def observe(
        self,
        session_id: str,
        target: TargetSpec | None = None,
        *,
        include_screenshot: bool = True,
    ) -> ObservedState:
        """Observe for a session; works while halted and while paused (not once ended)."""
        row = self.sessions.require(session_id)
        if row.terminal:
            self.sessions.require_executable(session_id)
        try:
            state = await self.backend.observe(
                session_id, target or row.target, include_screenshot=include_screenshot
            )
        except DeskpilotError as exc:
            self._host_sample(exc)
            if (
                target is None
                and exc.code is ErrorCode.TARGET_NOT_FOUND
                and await self._drop_closed_binding(row)
            ):
                raise DeskpilotError(
                    ErrorCode.TARGET_NOT_FOUND,
                    "the window this session was bound to has closed; the binding was dropped",
                    details={"reason": "bound_window_closed"},
                ) from None
            raise
        self._host_sample(None)
        self.sessions.record(
            session_id, EventType.OBSERVATION_CREATED, payload=_observed(state.observation)
        )
        return state

    # ------------------------------------------------------------------ execute
    async def execute(
        self,
        session_id: str,
        frame_id: str,
        tree_version: str,
        action: Action,
        *,
        action_id: str | None = None,
        expected_app: str | None = None,
        observe_after: bool = False,
    ) -> BrokerResult:
        row, settings = self.admit(session_id)
        aid = action_id or f"act_{uuid.uuid4().hex[:20]}"
        phash = self.params_hash(action)
        existing = self.actions.get(aid)
        if existing is not None:
            replay = self._replay(existing, session_id, phash)
            if replay is not None:
                return replay

        # freshness: against the session's current observation, not the foreground
        obs = self.backend.latest_observation(session_id)
        if obs is None or obs.frame_id != frame_id:
            raise DeskpilotError(
                ErrorCode.STALE_FRAME,
                f"frame {frame_id!r} is not the session's current observation; observe again "
                "and use the new element ids",
                details={"frameId": frame_id, "currentFrameId": obs.frame_id if obs else None},
            )
        if obs.tree_version != tree_version:
            raise DeskpilotError(
                ErrorCode.STALE_TREE,
                "the element tree changed since that observation; observe again and use the "
                "new element ids",
                details={"treeVersion": tree_version, "currentTreeVersion": obs.tree_version},
            )

        decision = evaluate(
            action,
            obs,
            row.contract,
            settings,
            bound=row.target,
            expected_app=expected_app,
        )
        if (
            decision.reason == Reason.FOCUS_MISMATCH
            and "expectedWindow" in decision.details
            and await self._drop_closed_binding(row)
        ):
            # bound to a window that has closed (a dialog, say): the binding lapsed with it
            row = self.sessions.require_executable(session_id)
            decision = evaluate(
                action, obs, row.contract, settings, bound=None, expected_app=expected_app
            )
        if existing is not None:
            self._check_same_decision(existing, decision)
            self._raise_recorded(existing)

        ledger = ledger_row(
            aid,
            session_id,
            action.kind,
            phash,
            decision,
            frame_id=frame_id,
            tree_version=tree_version,
        )
        requested = self.event_payload(decision)
        if decision.decision == Decision.ALLOW:
            # the row and its action_requested event are written together with the move to
            # acting, under the desktop lane, still before anything reaches the desktop
            return await self._dispatch(
                row, ledger, requested, action, decision, None, 0.0, observe_after=observe_after
            )
        self.record_request(session_id, ledger, requested, decision)
        approval_ms = 0.0
        approval_id: str | None = None
        if decision.decision == Decision.REQUIRE_APPROVAL:
            approval_id, approval_ms = await self.confirm(
                session_id,
                aid,
                action.kind,
                decision,
                _summary(action.kind, decision),
                requested,
                settings.confirmation_timeout_seconds,
            )
            row = self.sessions.require_executable(session_id)

        return await self._dispatch(
            row,
            ledger,
            None,
            action,
            decision,
            approval_id,
            approval_ms,
            observe_after=observe_after,
        )

    def admit(self, session_id: str) -> tuple[SessionRow, SettingsModel]:
        """The checks every desktop-changing request passes first: the halt, the enabled
        setting, a session that accepts actions, its budgets."""
        row = self.sessions.require(session_id)
        self.halt.check(row.agent_session_id)
        settings = self.settings()
        if not settings.enabled:
            raise DeskpilotError(
                ErrorCode.COMPUTER_DISABLED,
                "computer use is turned off in the settings (enabled=false); observing works",
            )
        row = self.sessions.require_executable(session_id)
        self.check_budgets(row)
        return row, settings

    def move_to_acting(
        self,
        session_id: str,
        aid: str,
        approval_id: str | None,
        *,
        insert: tuple[ActionRow, dict[str, Any]] | None = None,
    ) -> None:
        """Under the desktop lane, just before the desktop is touched: the session moves to
        acting and the ledger row to executing (written now with its action_requested event
        when ``insert`` gives it). Paused or stopped while waiting for the lane: the row fails
        and that is raised."""
        current = self.sessions.require(session_id)
        moved = False
        with self.db.transaction() as conn:
            if current.state in EXECUTABLE_STATES:
                moved = current.state == SessionState.ACTING or self.sessions.rows.set_state(
                    session_id, SessionState.ACTING, expect=current.state, conn=conn
                )
            status: ActionStatus = "executing" if moved else "failed"
            if insert is not None:
                ledger, requested = insert
                self.actions.insert(replace(ledger, status=status), conn=conn)
                self.sessions.timeline.append(
                    session_id,
                    EventType.ACTION_REQUESTED,
                    action_id=aid,
                    payload=requested,
                    conn=conn,
                )
            else:
                self.actions.set_status(aid, status, approval_id=approval_id, conn=conn)
        if not moved:
            try:
                self.sessions.require_executable(session_id)
                raise DeskpilotError(
                    ErrorCode.STATE_CHANGED, "the session changed state; observe again"
                )
            except DeskpilotError as exc:
                self.actions.finish(aid, "failed", error_code=exc.code.value)
                raise

    def record_request(
        self,
        session_id: str,
        ledger: ActionRow,
        requested: dict[str, Any],
        decision: PolicyDecision,
    ) -> None:
        """Write an action's ledger row with its action_requested event; a denied one is
        finished and recorded as action_blocked in the same transaction, then raised."""
        with self.db.transaction() as conn:
            self.actions.insert(ledger, conn=conn)
            self.sessions.timeline.append(
                session_id,
                EventType.ACTION_REQUESTED,
                action_id=ledger.id,
                payload=requested,
                conn=conn,
            )
            if decision.decision == Decision.DENY:
                self.actions.finish(ledger.id, "blocked", error_code="action_blocked", conn=conn)
                self.sessions.timeline.append(
                    session_id,
                    EventType.ACTION_BLOCKED,
                    action_id=ledger.id,
                    payload={**requested, **decision.details},
                    conn=conn,
                )
        if decision.decision == Decision.DENY:
            raise self.blocked_error(decision)

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
            raise DeskpilotError(
                ErrorCode.APPROVAL_DENIED,
                f"the person did not confirm this {decision.risk.label} {noun} ({reason}); "
                "do not retry it unchanged",
                details={"reason": reason, "confirmationId": confirmation.id},
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

    async def _dispatch(
        self,
        row: SessionRow,
        ledger: ActionRow,
        requested: dict[str, Any] | None,
        action: Action,
        decision: PolicyDecision,
        approval_id: str | None,
        approval_ms: float,
        *,
        observe_after: bool = False,
    ) -> BrokerResult:
        """Run an allowed action. ``requested`` is the action_requested payload when the ledger
        row is not written yet (allowed at once); None when it was (after a confirmation)."""
        session_id, aid = row.id, ledger.id
        frame_id, tree_version = ledger.frame_id or "", ledger.tree_version or ""
        if not self.coordinator.holds(session_id):
            await self.coordinator.claim(session_id, row.agent_session_id)
        async with self.coordinator.action_lock:
            self.move_to_acting(
                session_id,
                aid,
                approval_id,
                insert=(ledger, requested) if requested is not None else None,
            )
            item = self.inflight.add(session_id, aid, action)
            try:
                result = await self._run(
                    item, session_id, frame_id, tree_version, action, observe_after
                )
            except DeskpilotError as exc:
                self.finish_failed(session_id, aid, exc)
                raise
            finally:
                self.inflight.remove(item)
        outcome = _outcome(result)
        noop = not result.dispatched
        post = self.backend.latest_state(session_id) if result.observation is not None else None
        with self.db.transaction() as conn:
            self.actions.finish(aid, "executed" if not noop else "noop", outcome=outcome, conn=conn)
            self.sessions.timeline.append(
                session_id,
                EventType.ACTION_EXECUTED,
                action_id=aid,
                payload={"kind": action.kind, "method": result.method, "risk": decision.risk.label},
                conn=conn,
            )
            self.sessions.rows.count_step(session_id, noop=noop, conn=conn)
            self.sessions.rows.set_state(
                session_id, SessionState.OBSERVING, expect=SessionState.ACTING, conn=conn
            )
        if post is not None:
            self.sessions.record(
                session_id, EventType.OBSERVATION_CREATED, payload=_observed(post.observation)
            )
        self.rollout.record_action(False)
        return BrokerResult(
            result,
            aid,
            decision.risk,
            decision.decision,
            decision.reason,
            approval_ms,
            signals=decision.context.signals,
            post=post,
        )

    async def _run(
        self,
        item: InFlight,
        session_id: str,
        frame_id: str,
        tree_version: str,
        action: Action,
        observe_after: bool,
    ) -> ActionResult:
        task: asyncio.Task[ActionResult] = asyncio.ensure_future(
            self.backend.execute(
                session_id, frame_id, tree_version, action, observe_after=observe_after
            )
        )
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
                self._host_sample(exc)
                raise
            self._host_sample(None)
            return result
        # the person pressed Escape: end this action only, hand the session to them
        await self._end_inflight(item, "the person pressed Escape")
        raise DeskpilotError(
            ErrorCode.HANDOFF_REQUIRED,
            "the person pressed Escape during this action, so it was cancelled; the session "
            "waits for them (handoff_required). Do not repeat the action.",
            retryable=False,
            details={"reason": item.interrupt_reason or "physical_escape"},
        )

    def finish_failed(self, session_id: str, aid: str, exc: DeskpilotError) -> None:
        handoff = exc.code == ErrorCode.HANDOFF_REQUIRED
        with self.db.transaction() as conn:
            self.actions.finish(aid, "failed", error_code=exc.code.value, conn=conn)
            self.sessions.timeline.append(
                session_id,
                EventType.ACTION_FAILED,
                action_id=aid,
                payload={"code": exc.code.value, "retryable": exc.retryable},
                conn=conn,
            )
            if not handoff:  # back to observing unless a pause/stop moved it meanwhile
                self.sessions.rows.set_state(
                    session_id, SessionState.OBSERVING, expect=SessionState.ACTING, conn=conn
                )
        if exc.code not in NOT_ACTION_ERRORS:
            self.rollout.record_action(True)
        if handoff and self.sessions.require(session_id).state not in TERMINAL_STATES:
            with contextlib.suppress(DeskpilotError):
                self.sessions.transition(
                    session_id,
                    SessionState.HANDOFF_REQUIRED,
                    payload={
                        "reason": exc.details.get("reason", "physical_escape"),
                        "actionId": aid,
                    },
                )

    # ------------------------------------------------------------------ helpers
    def check_budgets(self, row: SessionRow) -> None:
        c = row.contract
        if row.steps >= c.max_steps:
            raise DeskpilotError(
                ErrorCode.TASK_STEP_LIMIT_EXCEEDED,
                f"the session used its {c.max_steps} steps",
                details={"maxSteps": c.max_steps},
            )
        if (time.time() - row.created_at) * 1000 > c.max_runtime_ms:
            raise DeskpilotError(
                ErrorCode.TASK_RUNTIME_EXCEEDED,
                f"the session ran longer than {c.max_runtime_ms} ms",
                details={"maxRuntimeMs": c.max_runtime_ms},
            )
        if row.consecutive_noops >= c.max_consecutive_noops:
            raise DeskpilotError(
                ErrorCode.TASK_NOOP_LIMIT_EXCEEDED,
                f"{row.consecutive_noops} actions in a row changed nothing",
                details={"maxConsecutiveNoops": c.max_consecutive_noops},
            )

    def _replay(self, existing: ActionRow, session_id: str, phash: str) -> BrokerResult | None:
        if existing.session_id != session_id or existing.params_hash != phash:
            raise DeskpilotError(
                ErrorCode.APPROVAL_MISMATCH,
                f"actionId {existing.id} was already used for a different action; use a new "
                "actionId",
                details={"actionId": existing.id, "field": "params"},
            )
        if existing.status in ("executed", "noop") and existing.outcome is not None:
            result = ActionResult(id=None, **existing.outcome)
            return BrokerResult(
                result,
                existing.id,
                existing.risk_level,
                existing.decision,
                existing.reason,
                replayed=True,
            )
        if existing.status in ("requested", "executing"):
            raise DeskpilotError(
                ErrorCode.INVALID_REQUEST,
                f"action {existing.id} is still running",
                details={"actionId": existing.id},
            )
        return None  # blocked / failed: re-evaluated, then answered as recorded

    @staticmethod
    def _check_same_decision(existing: ActionRow, decision: PolicyDecision) -> None:
        if existing.risk_level != decision.risk or existing.decision != decision.decision:
            raise DeskpilotError(
                ErrorCode.APPROVAL_MISMATCH,
                f"actionId {existing.id} was recorded as {existing.risk_level.label}/"
                f"{existing.decision.value}, now it rates {decision.risk.label}/"
                f"{decision.decision.value}; use a new actionId",
                details={
                    "actionId": existing.id,
                    "field": "risk" if existing.risk_level != decision.risk else "decision",
                },
            )

    @staticmethod
    def _raise_recorded(existing: ActionRow) -> None:
        if existing.status == "blocked":
            code = ErrorCode(existing.error_code or "action_blocked")
            raise DeskpilotError(
                code,
                f"action {existing.id} was refused ({existing.reason}); use a new actionId to "
                "try something else",
                details={"reason": existing.reason, "actionId": existing.id},
            )
        raise DeskpilotError(
            ErrorCode(existing.error_code or "action_failed"),
            f"action {existing.id} already failed ({existing.error_code}); use a new actionId",
            details={"actionId": existing.id},
        )

    @staticmethod
    def event_payload(decision: PolicyDecision) -> dict[str, Any]:
        ctx = decision.context
        return {
            "kind": ctx.kind,
            "risk": decision.risk.label,
            "decision": decision.decision.value,
            "reason": decision.reason,
            "effect": ctx.effect.value,
            "targetKind": ctx.target_kind.value,
            "dataClasses": sorted(c.value for c in ctx.data_classes),
            "signals": list(ctx.signals),
        }

    @staticmethod
    def blocked_error(decision: PolicyDecision) -> DeskpilotError:
        if decision.reason == Reason.FOCUS_MISMATCH:
            return DeskpilotError(
                ErrorCode.FOCUS_MISMATCH,
                "the observation is not of the session's bound window/app; observe again",
                retryable=True,
                details={"reason": decision.reason, **decision.details},
            )
        return DeskpilotError(
            ErrorCode.ACTION_BLOCKED,
            f"the policy refused this {decision.risk.label} action: {decision.reason}",
            retryable=False,
            details={"reason": decision.reason, "risk": decision.risk.label, **decision.details},
        )

    def _host_sample(self, exc: DeskpilotError | None) -> None:
        code = None if exc is None else exc.code
        self.rollout.record_host_call(code in HOST_DEATH_CODES)
        self.rollout.record_artifact_check(code == ErrorCode.NATIVE_HOST_UNTRUSTED)

    # ------------------------------------------------------------------ control
    async def _end_inflight(self, item: InFlight, reason: str) -> None:
        task = item.task
        if task is None or task.done():
            return
        if self.flags.enabled("gracefulCancel"):
            with contextlib.suppress(TimeoutError, Exception):
                await asyncio.wait_for(asyncio.shield(task), CANCEL_GRACE_SECONDS)
            if task.done():
                return
        if isinstance(self.backend, AbortableBackend):
            with contextlib.suppress(DeskpilotError):
                await self.backend.abort_session(item.session_id, reason)
        if not task.done():
            task.cancel()
        with contextlib.suppress(BaseException):
            await task

    async def _quiesce(self, session_id: str, reason: str, *, forget: bool) -> None:
        self.backend.clear_observations(session_id)
        ConfirmationRepository(self.db).expire_session(session_id)
        if forget:
            with contextlib.suppress(DeskpilotError):
                await self.backend.cancel_session(session_id)
        items = self.inflight.for_session(session_id)
        if items:
            await asyncio.gather(*(self._end_inflight(i, reason) for i in items))

    async def pause(
        self, session_id: str, *, takeover: bool = False, by: str | None = None
    ) -> SessionRow:
        """Hard pause (and takeover, which also records who took over)."""
        t0 = time.monotonic()
        row = self.sessions.require(session_id)
        if row.state == SessionState.PAUSED:
            return row
        who = by or ("person" if takeover else "agent")
        row = self.sessions.transition(
            session_id,
            SessionState.PAUSED,
            payload={"by": who, "takeover": takeover},
            paused_by=who,
            taken_over_by=who if takeover else None,
        )
        self.coordinator.release(session_id)
        # pausing keeps the session: the backend keeps its binding; only work in flight ends
        await self._quiesce(session_id, "paused", forget=False)
        self.rollout.record_takeover_stop((time.monotonic() - t0) * 1000)
        for hook in list(self.hooks.on_pause):
            _call_hook(hook, row, None)
        return row

    async def resume(self, session_id: str) -> SessionRow:
        row = self.sessions.require(session_id)
        if row.state != SessionState.PAUSED:
            raise DeskpilotError(
                ErrorCode.INVALID_STATE_TRANSITION,
                f"only a paused session resumes; session {session_id} is {row.state.value}"
                + (" (canceled sessions never resume; start a new one)" if row.terminal else ""),
                details={"state": row.state.value},
            )
        self.halt.check(row.agent_session_id)
        await self.coordinator.claim(session_id, row.agent_session_id)
        row = self.sessions.transition(
            session_id, SessionState.OBSERVING, allowed_from=[SessionState.PAUSED]
        )
        try:
            for hook in list(self.hooks.on_resume):
                await hook(row)
        except Exception:
            # the operator did not restart: do not leave a running session nobody drives
            self.sessions.transition(
                session_id, SessionState.PAUSED, payload={"by": "kernel", "reason": "resume_failed"}
            )
            self.coordinator.release(session_id)
            raise
        return row

    async def stop(
        self, session_id: str, reason: CancelReason = CancelReason.USER_STOP
    ) -> SessionRow:
        t0 = time.monotonic()
        row = self.sessions.require(session_id)
        if row.terminal:
            return row
        row = self.sessions.transition(session_id, SessionState.CANCELED, cancel_reason=reason)
        self.coordinator.release(session_id)
        await self._quiesce(session_id, f"stopped ({reason.value})", forget=True)
        self.rollout.record_takeover_stop((time.monotonic() - t0) * 1000)
        for hook in list(self.hooks.on_stop):
            _call_hook(hook, row, reason)
        return row

    async def _stop_for_claim(self, session_id: str, reason: CancelReason) -> object:
        return await self.stop(session_id, reason)

    async def _drop_closed_binding(self, row: SessionRow) -> bool:
        """Forget a bound window that no longer exists; True when it was dropped."""
        bound = row.target
        if bound is None or not bound.window_id:
            return False
        try:
            windows = await self.backend.list_windows()
        except DeskpilotError:
            return False
        if any(w.window_id.lower() == bound.window_id.lower() for w in windows):
            return False
        await self.backend.bind_target(row.id, TargetSpec())
        self.sessions.rows.set_target(row.id, TargetSpec())
        self.sessions.record(
            row.id,
            EventType.TARGET_BOUND,
            payload={"target": None, "reason": "bound_window_closed"},
        )
        return True

    async def bind_target(self, session_id: str, target: TargetSpec) -> SessionRow:
        row = self.sessions.require(session_id)
        if row.state != SessionState.PAUSED:
            raise DeskpilotError(
                ErrorCode.INVALID_STATE_TRANSITION,
                "Pause the computer session before changing its bound target window.",
                details={"state": row.state.value},
            )
        await self.backend.bind_target(session_id, target)
        self.backend.clear_observations(session_id)
        self.sessions.rows.set_target(session_id, target)
        self.sessions.record(session_id, EventType.TARGET_BOUND, payload={"target": target.wire()})
        return self.sessions.require(session_id)

    def close(self) -> None:
        self._unsubscribe()


def _call_hook(hook: StopHook, row: SessionRow, reason: CancelReason | None) -> None:
    try:
        hook(row, reason)
    except Exception:  # a runtime hook must not break a stop
        log.exception("control hook failed")


def ledger_row(
    aid: str,
    session_id: str,
    kind: str,
    params_hash: str,
    decision: PolicyDecision,
    *,
    frame_id: str | None = None,
    tree_version: str | None = None,
) -> ActionRow:
    """A new ledger row for a rated request: what was asked, how it was rated and why."""
    return ActionRow(
        id=aid,
        session_id=session_id,
        kind=kind,
        params_hash=params_hash,
        frame_id=frame_id,
        tree_version=tree_version,
        risk_level=decision.risk,
        decision=decision.decision,
        reason=decision.reason,
        status="requested",
        effect_class=decision.context.effect.value,
        target_kind=decision.context.target_kind.value,
        data_classes=sorted(c.value for c in decision.context.data_classes),
    )


def _outcome(result: ActionResult) -> dict[str, Any]:
    """What the ledger keeps of a result: how it ran, never the post-action tree or image."""
    out = result.model_dump(mode="json", exclude={"observation", "id", "type"}, exclude_none=True)
    return out


def _summary(kind: str, decision: PolicyDecision) -> str:
    ctx = decision.context
    app = ctx.app.name or ctx.app.executable or "an app"
    where = f" on {ctx.target_label}" if ctx.target_label else ""
    site = f" at {ctx.host}" if ctx.host else ""
    why = ", ".join(ctx.signals) or ctx.effect.value
    return f"{kind}{where} in {app}{site} — {decision.risk.label} ({why})"


def _observed(obs: ObservationBody) -> dict[str, Any]:
    """The timeline payload of an observation: identity and size, never its text or pixels."""
    return {
        "frameId": obs.frame_id,
        "treeVersion": obs.tree_version,
        "app": obs.app.executable or obs.app.name,
        "windowId": obs.window.window_id,
        "elementCount": obs.element_count,
    }
