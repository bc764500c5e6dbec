"""The kernel as one object: what the runtime, the MCP server and the CLI talk to.

``Kernel`` implements the kernel's port (kernel/port.py) and is the only owner of the desktop
backend: capabilities, windows, observations, captures and actions all pass it. It owns the
broker (and through it sessions, policy, ledger, frames, coordinator, halt, the takeover
hold and confirmations), the flags and rollout controller of this process, the kill-switch
thread, and the control inbox that carries out other processes' controls of the sessions it
opened (kernel/control_requests.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from deskpilot.hostclient.api import DesktopBackend
from deskpilot.kernel import visual_tree
from deskpilot.kernel.broker import Broker
from deskpilot.kernel.broker.dispatch import host_sample
from deskpilot.kernel.broker.records import observed
from deskpilot.kernel.control_requests import (
    INBOX_POLL_S,
    ControlInbox,
    ControlVerb,
    register_owner,
    unregister_owner,
    validate,
)
from deskpilot.kernel.flags import Flags
from deskpilot.kernel.governed_launch import Launches, LaunchResult, Spawn, Watch
from deskpilot.kernel.governed_shell import Run, ShellResult, Shells
from deskpilot.kernel.halt import halted_error
from deskpilot.kernel.handback import HandBackStart
from deskpilot.kernel.killswitch import ArmState, KillSwitchListener
from deskpilot.kernel.killswitch.arming import KillSwitchArming
from deskpilot.kernel.policy.launch_rules import LaunchRequest
from deskpilot.kernel.policy.shell_rules import ShellRequest
from deskpilot.kernel.results import ExecutedAction, HaltInfo
from deskpilot.kernel.rollout import RolloutController
from deskpilot.kernel.task_records import TaskRecords
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.session import (
    PHASES,
    TERMINAL_STATES,
    CancelReason,
    EventType,
    SessionState,
    TaskContract,
)
from deskpilot.protocol.wire import Action, Capabilities, ExecuteAction, TargetSpec, WindowInfo
from deskpilot.store.db import Database
from deskpilot.store.session_rows import SessionMode, SessionRow
from deskpilot.store.settings import SettingsModel
from deskpilot.store.timeline import TimelineEventRow
from deskpilot.store.verifications import VerificationRow

log = logging.getLogger(__name__)


class Kernel:
    name = "kernel"

    def __init__(
        self,
        backend: DesktopBackend,
        db: Database | None = None,
        *,
        flags: Flags | None = None,
    ) -> None:
        self.backend = backend
        self.db = db or Database()
        self.flags = flags or Flags()
        self.rollout = RolloutController(self.flags)
        self.broker = Broker(self.db, backend, flags=self.flags, rollout=self.rollout)
        self.sessions = self.broker.sessions
        self.halt = self.broker.halt
        self.confirmations = self.broker.confirmations
        self.coordinator = self.broker.coordinator
        self.takeover = self.broker.takeover
        self.records = TaskRecords(self.db, self.sessions)
        #: the sessions this kernel opened: the ones whose controls it carries out for
        #: other processes (another kernel of this process has its own)
        self._owned: set[str] = set()
        #: agent (client) session → the latest session this kernel opened for it: where a
        #: refusal before any session is named (the runtime's halt / takeover check) is
        #: recorded (``action_refused``)
        self._latest: dict[str, str] = {}
        self.inbox = ControlInbox(self.db, self)
        register_owner(self)
        self._kill_task: asyncio.Task[list[str]] | None = None
        self.kill_switch = KillSwitchArming(
            self.db,
            self.flags,
            kill=lambda: self.kill("kill_switch"),
            settings=self.broker.settings,
            inflight=self.broker.inflight,
        )

    # ------------------------------------------------------------------ sessions
    async def open_session(
        self,
        agent_session: str,
        contract: TaskContract | None = None,
        *,
        mode: SessionMode = "atomic",
        target: TargetSpec | None = None,
    ) -> str:
        row = self.sessions.create(agent_session, mode, contract, target)
        self._owned.add(row.id)
        self._latest[agent_session] = row.id
        self.sessions.transition(row.id, SessionState.OBSERVING)
        return row.id

    def owns(self, session_id: str) -> bool:
        """True for a session this kernel opened (its controls run here)."""
        return session_id in self._owned

    async def run_control(
        self, session_id: str, verb: ControlVerb, args: dict[str, Any], by: str
    ) -> SessionRow:
        """One control, as a control request names it, through the broker's controls (so
        the runtime's hooks run as for its own tools); the session's row afterwards. A
        resume of a session the person was handed (handoff_required) pauses it first, as
        the runtime's task resume does."""
        verb, args = validate(verb, args)
        if verb == "pause":
            await self.broker.pause(session_id, by=by)
        elif verb == "takeover":
            await self.broker.pause(session_id, takeover=True, by=by)
        elif verb == "resume":
            if self.sessions.require(session_id).state == SessionState.HANDOFF_REQUIRED:
                await self.broker.pause(session_id, by=by)
            await self.broker.resume(session_id, by=by)
        elif verb == "stop":
            await self.broker.stop(session_id, CancelReason.USER_STOP, note=args.get("note"))
        else:
            await self.broker.bind_target(session_id, TargetSpec(window_id=args["windowId"]))
        return self.sessions.require(session_id)

    async def claim(self, session_id: str) -> None:
        """Take the desktop lane for a session (the coordinator's last-claim rule)."""
        row = self.sessions.require(session_id)
        await self.coordinator.claim(session_id, row.agent_session_id)

    def set_phase(self, session_id: str, phase: SessionState) -> SessionState:
        """Move a live session between its phases (observing, planning, acting, verifying);
        a paused or ended session is left as it is and its state returned, so an operator
        that raced a pause sees the pause instead of an error."""
        row = self.sessions.require(session_id)
        if row.state == phase or row.state not in PHASES or phase not in PHASES:
            return row.state
        try:
            return self.sessions.transition(session_id, phase).state
        except DeskpilotError:
            return self.sessions.require(session_id).state

    async def finish(
        self,
        session_id: str,
        state: SessionState,
        *,
        reason: str,
        payload: dict[str, object] | None = None,
    ) -> SessionState:
        """End a delegated task as ``completed`` or ``failed``, or hand it to the person
        (``handoff_required``), with the reason code in its timeline event. A canceled end is
        ``stop``'s. An ended session lets the desktop go and the host forgets it."""
        if state not in (
            SessionState.COMPLETED,
            SessionState.FAILED,
            SessionState.HANDOFF_REQUIRED,
        ):
            raise DeskpilotError(ErrorCode.INVALID_REQUEST, f"finish cannot end in {state}")
        row = self.sessions.require(session_id)
        if row.terminal or row.state == SessionState.PAUSED:
            return row.state
        row = self.sessions.transition(
            session_id, state, payload={"reason": reason, **(payload or {})}
        )
        self.coordinator.release(session_id)
        if state in TERMINAL_STATES:
            self.broker.frames.drop(session_id)
            self.broker.handbacks.forget(session_id)
            try:
                await self.backend.cancel_session(session_id)
            except DeskpilotError:
                log.debug("the host had already forgotten session %s", session_id)
        return row.state

    def record_verification(
        self,
        session_id: str,
        verdict: dict[str, object],
        *,
        action_id: str | None = None,
        source: str = "task",
    ) -> str:
        return self.records.record_verification(
            session_id, verdict, action_id=action_id, source=source
        )

    def verifications(self, session_id: str) -> list[VerificationRow]:
        return self.records.list(session_id)

    def verification(self, verification_id: str) -> VerificationRow | None:
        return self.records.get(verification_id)

    def timeline(self, session_id: str, after_seq: int = 0) -> list[TimelineEventRow]:
        return self.sessions.events(session_id, after_seq)

    async def wait_for_state(
        self, session_id: str, states: frozenset[SessionState], timeout_s: float
    ) -> tuple[SessionRow, bool]:
        return await self.sessions.wait_for(session_id, states, timeout_s)

    def record_batch(self, *, broke: bool) -> None:
        """A delegated operator's batch ended; a break counts toward rolling back
        ``actionBatch`` (kernel/rollout.py)."""
        self.rollout.record_batch(broke)

    def add_control_hooks(
        self,
        *,
        on_pause: Callable[[SessionRow, CancelReason | None], None] | None = None,
        on_stop: Callable[[SessionRow, CancelReason | None], None] | None = None,
        on_resume: Callable[[SessionRow, CancelReason | None], None] | None = None,
    ) -> None:
        """Be told, in this process, when a session is paused, stopped or resumed, from any
        path (a tool, a control request of another process, the kill switch): the operator
        of a delegated task stops at once instead of at its next kernel call. A failing
        ``on_resume`` is logged; it does not undo the resume."""
        if on_pause is not None:
            self.broker.hooks.on_pause.append(on_pause)
        if on_stop is not None:
            self.broker.hooks.on_stop.append(on_stop)
        if on_resume is not None:
            told = on_resume

            async def resumed(row: SessionRow) -> None:
                try:
                    told(row, None)
                except Exception:
                    log.exception("resume hook failed")

            self.broker.hooks.on_resume.append(resumed)

    # ------------------------------------------------------------------ the desktop
    async def capabilities(self) -> Capabilities:
        return await self.backend.capabilities()

    async def windows(self) -> list[WindowInfo]:
        return await self.backend.list_windows()

    async def observe(
        self, session_id: str, target: TargetSpec | None = None, *, include_screenshot: bool = True
    ) -> ObservedState:
        """Observe for a session; it becomes the session's current observation (the frame an
        action is checked against), unless a pause, stop or takeover dropped the session's
        frame while OCR read it (kernel/frames.py). Works while halted and while paused (not
        once ended)."""
        row = self._readable(session_id)
        try:
            state = await self.backend.observe(
                session_id, target or row.target, include_screenshot=include_screenshot
            )
        except DeskpilotError as exc:
            host_sample(self.rollout, exc)
            if (
                target is None
                and exc.code is ErrorCode.TARGET_NOT_FOUND
                and await self.broker.drop_closed_binding(row)
            ):
                raise DeskpilotError(
                    ErrorCode.TARGET_NOT_FOUND,
                    "the window this session was bound to has closed; the binding was dropped",
                    details={"reason": "bound_window_closed"},
                ) from None
            raise
        host_sample(self.rollout, None)
        # a pause, stop or takeover while OCR reads (a drop) is not undone by the put
        since = self.broker.frames.generation(session_id)
        state = await visual_tree.outlined(state)  # no tree: an OCR outline
        self.broker.frames.put(session_id, state, since=since)
        self.broker.handbacks.seen(session_id, state)
        self.sessions.record(
            session_id, EventType.OBSERVATION_CREATED, payload=observed(state.observation)
        )
        return state

    async def capture(self, session_id: str, target: TargetSpec | None = None) -> ObservedState:
        """A screenshot with its tree (so its secure regions are known) that does not become
        the session's current observation; like observe, it works while halted or paused."""
        row = self._readable(session_id)
        return await self.backend.observe(
            session_id, target or row.target, include_screenshot=True, bind=False
        )

    def _readable(self, session_id: str) -> SessionRow:
        row = self.sessions.require(session_id)
        if row.terminal:
            self.sessions.require_executable(session_id)  # raises with the reason it ended
        return row

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
    ) -> ExecutedAction:
        """Run one action through the broker (kernel/broker/: admission, idempotency,
        freshness, policy, ledger, confirmation, lane, dispatch); with ``observe_after`` the
        result's ``post`` is the settled window afterwards, by value."""
        request = ExecuteAction(
            id=0,
            session_id=session_id,
            frame_id=frame_id,
            tree_version=tree_version,
            action=action,
            observe_after=observe_after,
        )
        return await self.broker.execute(request, action_id=action_id, expected_app=expected_app)

    async def refuse_if_denied(
        self,
        session_id: str,
        frame_id: str,
        tree_version: str,
        action: Action,
        *,
        expected_app: str | None = None,
    ) -> None:
        """Rate a later action of one tool call before its first is dispatched: a denial is
        recorded and raised (``action_blocked``) as ``execute`` would, anything else
        dispatches and records nothing (kernel/broker/, ``refuse_if_denied``)."""
        request = ExecuteAction(
            id=0,
            session_id=session_id,
            frame_id=frame_id,
            tree_version=tree_version,
            action=action,
        )
        await self.broker.refuse_if_denied(request, expected_app=expected_app)

    async def cancel(self, session_id: str) -> None:
        """Stop what the session has in flight at the host now (the host stops typing and
        forgets the session); the session keeps its records until it is stopped."""
        self.broker.frames.drop(session_id)
        await self.backend.cancel_session(session_id)

    async def launch(
        self, session_id: str, request: LaunchRequest, spawn: Spawn, watch: Watch
    ) -> LaunchResult:
        """Start a program as a governed action (halt, budgets, launch policy, ledger,
        confirmation, lane), then record what became of it; see kernel/governed_launch.py."""
        return await Launches(self.broker).launch(session_id, request, spawn, watch)

    async def run_shell(self, session_id: str, request: ShellRequest, run: Run) -> ShellResult:
        """Run a shell command as a governed action (halt, budgets, shell policy, ledger,
        confirmation, lane); ``run`` runs it; see kernel/governed_shell.py."""
        return await Shells(self.broker).run(session_id, request, run)

    async def pause(
        self, session_id: str, *, takeover: bool = False, by: str | None = None
    ) -> SessionState:
        return (await self.broker.pause(session_id, takeover=takeover, by=by)).state

    async def resume(self, session_id: str, *, by: str | None = None) -> SessionState:
        """Back to observing; the resume of a taken-over session is the hand back."""
        return (await self.broker.resume(session_id, by=by)).state

    async def stop(
        self,
        session_id: str,
        reason: CancelReason = CancelReason.USER_STOP,
        *,
        note: str | None = None,
    ) -> SessionState:
        return (await self.broker.stop(session_id, reason, note=note)).state

    async def bind_target(self, session_id: str, target: TargetSpec) -> None:
        """Bind the paused session to a window that exists and is shown (else
        ``target_not_found`` naming it, nothing changed)."""
        await self.broker.bind_target(session_id, target)

    def session_state(self, session_id: str) -> SessionState | None:
        row = self.sessions.get(session_id)
        return None if row is None else row.state

    def session(self, session_id: str) -> SessionRow | None:
        return self.sessions.get(session_id)

    def session_ended(self, session_id: str) -> str | None:
        """None while the session lives (paused counts); once it ended, why: its cancel
        reason (``desktop_claimed``, ``kill_switch``, …) or else its terminal state. Read from
        the database, so a stop by another process on this data dir shows too."""
        row = self.sessions.get(session_id)
        if row is None:
            return "session_not_found"
        if not row.terminal:
            return None
        return row.cancel_reason or row.state.value

    # ------------------------------------------------------------------ halt
    def settings(self) -> SettingsModel:
        return self.broker.settings()

    def client_session_began(self, agent_session_id: str) -> None:
        """Call when an MCP client session (or an own agent run) begins: a halt engaged before
        this moment does not bind it."""
        self.halt.client_session_began(agent_session_id)

    def halt_state(self, agent_session_id: str | None = None) -> HaltInfo:
        row = (
            self.halt.active() if agent_session_id is None else self.halt.binding(agent_session_id)
        )
        if row is None:
            return HaltInfo(False)
        return HaltInfo(True, row.reason, int(row.engaged_at * 1000))

    def check_halt(self, agent_session_id: str | None = None) -> None:
        if agent_session_id is None:
            row = self.halt.active()
            if row is not None:
                raise halted_error(row, self.broker.settings().kill_switch)
            return
        try:
            self.halt.check(agent_session_id)
        except DeskpilotError as exc:
            self._refused(agent_session_id, exc)
            raise

    def _refused(self, agent_session_id: str | None, exc: DeskpilotError) -> None:
        """Record a refusal made before the broker (the runtime's own halt / takeover check)
        on the agent session's latest session, as admission records its own."""
        sid = self._latest.get(agent_session_id) if agent_session_id else None
        if sid is not None:
            self.broker.refusals.record(sid, None, exc)

    def unhalt(self, by: str = "person") -> int:
        return self.halt.lift(by)

    # ------------------------------------------------------------------ takeover
    def takeover_state(self, session_id: str | None = None) -> dict[str, Any]:
        """The desktop-wide hold (JSON: held, by, since in epoch ms, sessionId); with
        ``session_id``, that session's own hold only."""
        return self.takeover.state(session_id)

    def check_takeover(self, agent_session_id: str | None = None) -> None:
        """Refuse an agent action while the person holds the desktop (handoff_required);
        with the agent session, the refusal is recorded on its latest session."""
        try:
            self.takeover.check()
        except DeskpilotError as exc:
            self._refused(agent_session_id, exc)
            raise

    def take_handback(self, session_id: str) -> HandBackStart | None:
        """The session's pending hand back (the person handed the desktop back; what the
        window showed when they took it), once; None when there is none."""
        return self.broker.handbacks.take(session_id)

    async def kill(self, source: str = "kill_switch") -> list[str]:
        """Cancel every active session through the stop path and halt the agent side.

        Presses that arrive while a kill is running join it (coalesced).
        """
        if self._kill_task is not None and not self._kill_task.done():
            return await asyncio.shield(self._kill_task)
        self._kill_task = asyncio.ensure_future(self._kill(source))
        return await asyncio.shield(self._kill_task)

    async def _kill(self, source: str) -> list[str]:
        self.halt.engage(source)
        active = self.sessions.active()
        await asyncio.gather(
            *(self.broker.stop(s.id, CancelReason.KILL_SWITCH) for s in active),
            return_exceptions=True,
        )
        log.warning("kill switch: %d session(s) canceled, agent side halted", len(active))
        return [s.id for s in active]

    # ------------------------------------------------------------------ kill switch
    async def start_kill_switch(self, display: str | None = None) -> ArmState:
        """Start the X thread and arm it from the settings (kernel/killswitch/arming.py)."""
        return await self.kill_switch.start(display)

    @property
    def kill_switch_state(self) -> ArmState:
        return self.kill_switch.state

    @property
    def escape_interrupts(self) -> int:
        return self.kill_switch.escape_interrupts

    @property
    def _listener(self) -> KillSwitchListener | None:
        return self.kill_switch.listener

    async def start_control_inbox(self, interval_s: float = INBOX_POLL_S) -> None:
        """Carry out the controls other processes ask for this kernel's sessions (the
        dashboard, ``deskpilot session``), polling every ``interval_s``."""
        self.inbox.interval_s = interval_s
        self.inbox.start()

    async def close(self) -> None:
        await self.inbox.close()
        unregister_owner(self)
        await self.kill_switch.close()
        self.coordinator.close()
        self.broker.close()
        await self.backend.close()

    def status(self, agent_session_id: str | None = None) -> dict[str, object]:
        halt = self.halt_state(agent_session_id)
        return {
            "killSwitch": self.kill_switch_state.to_json(),
            "desktopLease": self.coordinator.lease_status(),
            "halt": {
                "halted": halt.halted,
                "cause": halt.cause,
                "sinceEpochMs": halt.since_epoch_ms,
                "liftWith": "deskpilot unhalt" if halt.halted else None,
            },
            "takeover": self.takeover_state(),
            "rollout": self.rollout.status(),
        }
