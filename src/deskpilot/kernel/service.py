"""The kernel as one object: what the runtime, the MCP server and the CLI talk to.

``Kernel`` owns the broker (and through it sessions, policy, ledger, coordinator, halt and
confirmations), the flags and rollout controller of this process, and the kill-switch thread.
Its method names follow the runtime's ``KernelPort`` seam (open_session, execute, pause,
resume, stop, bind_target, session_state, halt_state, check_halt).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from deskpilot.hostclient.api import DesktopBackend, ObservedState
from deskpilot.kernel.broker import Broker, BrokerResult
from deskpilot.kernel.flags import Flags
from deskpilot.kernel.halt import halted_error
from deskpilot.kernel.killswitch import ArmState, KillSwitchError, KillSwitchListener
from deskpilot.kernel.launches import Launches, LaunchResult, Spawn, Watch
from deskpilot.kernel.policy.launch import LaunchRequest
from deskpilot.kernel.rollout import RolloutController
from deskpilot.protocol.session import CancelReason, SessionState, TaskContract
from deskpilot.protocol.wire import Action, TargetSpec
from deskpilot.store.db import Database
from deskpilot.store.sessions import SessionMode, SessionRow
from deskpilot.store.settings import Settings, SettingsModel

log = logging.getLogger(__name__)
SETTINGS_POLL_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class HaltInfo:
    halted: bool
    cause: str | None = None
    since_epoch_ms: int | None = None


class Kernel:
    name = "kernel"

    def __init__(
        self,
        backend: DesktopBackend,
        db: Database | None = None,
        *,
        flags: Flags | None = None,
    ) -> None:
        self.db = db or Database()
        self.flags = flags or Flags()
        self.rollout = RolloutController(self.flags)
        self.broker = Broker(self.db, backend, flags=self.flags, rollout=self.rollout)
        self.sessions = self.broker.sessions
        self.halt = self.broker.halt
        self.confirmations = self.broker.confirmations
        self.coordinator = self.broker.coordinator
        self._kill_task: asyncio.Task[list[str]] | None = None
        self._listener: KillSwitchListener | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._unsubscribe_settings: object | None = None
        self._poll_task: asyncio.Task[None] | None = None
        self.kill_switch_state = ArmState(False, "")
        self.escape_interrupts = 0

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
        self.sessions.transition(row.id, SessionState.OBSERVING)
        return row.id

    async def observe(
        self, session_id: str, target: TargetSpec | None = None, *, include_screenshot: bool = True
    ) -> ObservedState:
        return await self.broker.observe(session_id, target, include_screenshot=include_screenshot)

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
        """Run one action through the broker; with ``observe_after`` the result's ``post`` is
        the settled window afterwards (when the host could see it), already the session's
        current observation."""
        return await self.broker.execute(
            session_id,
            frame_id,
            tree_version,
            action,
            action_id=action_id,
            expected_app=expected_app,
            observe_after=observe_after,
        )

    async def launch(
        self, session_id: str, request: LaunchRequest, spawn: Spawn, watch: Watch
    ) -> LaunchResult:
        """Start a program as a governed action (halt, budgets, launch policy, ledger,
        confirmation, lane), then record what became of it; see kernel/launches.py."""
        return await Launches(self.broker).launch(session_id, request, spawn, watch)

    async def pause(
        self, session_id: str, *, takeover: bool = False, by: str | None = None
    ) -> SessionState:
        return (await self.broker.pause(session_id, takeover=takeover, by=by)).state

    async def resume(self, session_id: str) -> SessionState:
        return (await self.broker.resume(session_id)).state

    async def stop(
        self, session_id: str, reason: CancelReason = CancelReason.USER_STOP
    ) -> SessionState:
        return (await self.broker.stop(session_id, reason)).state

    async def bind_target(self, session_id: str, target: TargetSpec) -> None:
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
        self.halt.check(agent_session_id)

    def unhalt(self, by: str = "person") -> int:
        return self.halt.lift(by)

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
        """Start the X thread and arm it from the settings (defaults on a fresh install)."""
        self._loop = asyncio.get_running_loop()
        if self._listener is None:
            self._listener = KillSwitchListener(
                self._from_thread_chord,
                self._from_thread_escape if self.flags.enabled("escapeInterrupt") else None,
                display_name=display,
                on_state=self._from_thread_state,
            )
            try:
                await asyncio.to_thread(self._listener.start)
            except KillSwitchError as exc:  # no display: say why in status, then raise
                self._listener = None
                chord = Settings.load(self.db).kill_switch
                self.kill_switch_state = ArmState(False, chord, str(exc), mode="unavailable")
                raise
            self._unsubscribe_settings = Settings.subscribe(self._on_settings)
            self._poll_task = asyncio.ensure_future(self._poll_settings())
        return await self._arm(Settings.load(self.db).kill_switch)

    async def _arm(self, chord: str) -> ArmState:
        if self._listener is None:
            return self.kill_switch_state
        try:
            self.kill_switch_state = await asyncio.to_thread(self._listener.arm, chord)
        except KillSwitchError as exc:
            self.kill_switch_state = ArmState(False, chord, str(exc))
        if chord and self.kill_switch_state.state == "unavailable":
            log.error("kill switch %r not armed: %s", chord, self.kill_switch_state.error)
        elif self.kill_switch_state.state == "watching":
            log.info("kill switch %r: %s", chord, self.kill_switch_state.to_json()["cause"])
        return self.kill_switch_state

    def _from_thread_state(self, state: ArmState) -> None:
        """The X thread took the chord over (its holder exited) or lost track of it."""
        loop = self._loop
        if loop is not None:
            loop.call_soon_threadsafe(setattr, self, "kill_switch_state", state)

    def _on_settings(self, db: Database, old: SettingsModel, new: SettingsModel) -> None:
        if db.path != self.db.path or old.kill_switch == new.kill_switch or self._loop is None:
            return
        self._loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self._arm(new.kill_switch)))

    async def _poll_settings(self) -> None:
        rev = Settings.revision(self.db)
        while True:
            await asyncio.sleep(SETTINGS_POLL_SECONDS)
            now = Settings.revision(self.db)
            if now != rev:
                rev = now
                chord = Settings.load(self.db).kill_switch
                if chord != self.kill_switch_state.chord or not self.kill_switch_state.armed:
                    await self._arm(chord)

    def _from_thread_chord(self) -> None:
        loop = self._loop
        if loop is not None:
            loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self.kill("kill_switch")))

    def _from_thread_escape(self, _keycode: int) -> None:
        loop = self._loop
        if loop is not None:
            loop.call_soon_threadsafe(self._escape)

    def _escape(self) -> None:
        if not self.flags.enabled("escapeInterrupt"):
            return
        if not self.broker.settings().escape_cancels_action:
            return
        if self.broker.inflight.physical_escape():
            self.escape_interrupts += 1

    async def close(self) -> None:
        if self._poll_task is not None:
            self._poll_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poll_task
        if callable(self._unsubscribe_settings):
            self._unsubscribe_settings()
        if self._listener is not None:
            await asyncio.to_thread(self._listener.stop)
            self._listener = None
        self.coordinator.close()
        self.broker.close()

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
            "rollout": self.rollout.status(),
        }
