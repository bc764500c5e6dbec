"""The kernel's side of the kill switch: start the thread, arm it from the settings, follow
the setting when it changes, and carry presses back onto the event loop.

The listener's thread calls back from outside the loop; every callback here hops onto the
loop first (``call_soon_threadsafe``). A chord press runs the kernel's ``kill``; a physical
Escape ends the action in flight when ``escapeCancelsAction`` and the ``escapeInterrupt`` flag
allow it (docs/kernel.md, "Kill switch").

The chord follows the ``killSwitch`` setting in two ways: a write in this process arrives
through the settings listener at once; a write by another process (the dashboard,
``deskpilot settings set``) is seen by polling the settings table's revision every
:data:`SETTINGS_POLL_SECONDS`, so a running ``deskpilot serve`` re-arms within about half a
second without a restart. A fresh install has no row and arms the default chord
(``Settings.load`` fills defaults in), which is what seed 003 §12.1 found missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from deskpilot.kernel.flags import Flags
from deskpilot.kernel.interrupts import InFlightRegistry
from deskpilot.store.db import Database
from deskpilot.store.settings import Settings, SettingsModel

from .listener import KillSwitchListener
from .state import ArmState, KillSwitchError

log = logging.getLogger(__name__)
#: how often another process's settings write is looked for (one tiny SQL read)
SETTINGS_POLL_SECONDS = 0.5


class KillSwitchArming:
    def __init__(
        self,
        db: Database,
        flags: Flags,
        *,
        kill: Callable[[], Awaitable[object]],
        settings: Callable[[], SettingsModel],
        inflight: InFlightRegistry,
    ) -> None:
        self.db = db
        self.flags = flags
        self._kill = kill
        self._settings = settings
        self._inflight = inflight
        self.listener: KillSwitchListener | None = None
        self.state = ArmState(False, "")
        self.escape_interrupts = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._poll_task: asyncio.Task[None] | None = None

    async def start(self, display: str | None = None) -> ArmState:
        """Start the X thread and arm it from the settings (defaults on a fresh install)."""
        self._loop = asyncio.get_running_loop()
        if self.listener is None:
            self.listener = KillSwitchListener(
                self._from_thread_chord,
                self._from_thread_escape if self.flags.enabled("escapeInterrupt") else None,
                display_name=display,
                on_state=self._from_thread_state,
            )
            try:
                await asyncio.to_thread(self.listener.start)
            except KillSwitchError as exc:  # no display: say why in status, then raise
                self.listener = None
                chord = Settings.load(self.db).kill_switch
                self.state = ArmState(False, chord, str(exc), mode="unavailable")
                raise
            self._unsubscribe = Settings.subscribe(self._on_settings)
            self._poll_task = asyncio.ensure_future(self._poll_settings())
        return await self.arm(Settings.load(self.db).kill_switch)

    async def arm(self, chord: str) -> ArmState:
        if self.listener is None:
            return self.state
        try:
            self.state = await asyncio.to_thread(self.listener.arm, chord)
        except KillSwitchError as exc:
            self.state = ArmState(False, chord, str(exc))
        if chord and self.state.state == "unavailable":
            log.error("kill switch %r not armed: %s", chord, self.state.error)
        elif self.state.state == "watching":
            log.info("kill switch %r: %s", chord, self.state.to_json()["cause"])
        return self.state

    async def close(self) -> None:
        if self._poll_task is not None:
            self._poll_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poll_task
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self.listener is not None:
            await asyncio.to_thread(self.listener.stop)
            self.listener = None

    # ------------------------------------------------------------------ following the setting
    def _on_settings(self, db: Database, old: SettingsModel, new: SettingsModel) -> None:
        if db.path != self.db.path or old.kill_switch == new.kill_switch or self._loop is None:
            return
        self._loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self.arm(new.kill_switch)))

    async def _poll_settings(self) -> None:
        """Another process may change the chord: its write shows in the revision."""
        rev = Settings.revision(self.db)
        while True:
            await asyncio.sleep(SETTINGS_POLL_SECONDS)
            try:
                now = Settings.revision(self.db)
                if now == rev:
                    continue
                chord = Settings.load(self.db).kill_switch
            except Exception as exc:  # a busy database must not end the following for good
                log.warning("kill switch: settings not readable now: %s", type(exc).__name__)
                continue
            rev = now
            if chord != self.state.chord or not self.state.armed:
                await self.arm(chord)

    # ------------------------------------------------------------------ from the X thread
    def _from_thread_state(self, state: ArmState) -> None:
        """The X thread took the chord over (its holder exited) or lost track of it."""
        loop = self._loop
        if loop is not None:
            loop.call_soon_threadsafe(setattr, self, "state", state)

    def _from_thread_chord(self) -> None:
        loop = self._loop
        if loop is not None:
            loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self._kill()))

    def _from_thread_escape(self, _keycode: int) -> None:
        loop = self._loop
        if loop is not None:
            loop.call_soon_threadsafe(self._escape)

    def _escape(self) -> None:
        if not self.flags.enabled("escapeInterrupt"):
            return
        if not self._settings().escape_cancels_action:
            return
        if self._inflight.physical_escape():
            self.escape_interrupts += 1
