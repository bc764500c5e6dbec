"""The apps' accessibility events, and whether our listener is registered for them yet.

Registration is started at connect and not awaited to the end (it is bounded there): an
action waits for it before it counts events, since atk-bridge apps emit only the events someone
registered for, and registering is also what makes them answer ``Cache.GetItems``
(docs/host-tree.md, "How the tree is read"). The settle rule itself is :mod:`.events`'; the
tree cache (:mod:`.tree_cache`) reads what changed from the same events.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from dbus_fast.aio import MessageBus

from deskpilot.host.atspi.events import Change, EventWatcher, PageLoad


class AppEvents:
    """The event watcher and the task registering it with the registry."""

    def __init__(self, a11y: MessageBus) -> None:
        self._watcher = EventWatcher(a11y)
        self._ready: asyncio.Task[None] | None = None

    async def start(self, wait_s: float) -> None:
        """Start registering; wait up to ``wait_s`` for it (it goes on in the background)."""
        self._ready = asyncio.ensure_future(self._watcher.start())
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(self._ready), wait_s)

    async def ready(self) -> None:
        """Wait until registering is over (whether it succeeded or not)."""
        if self._ready is not None:
            with contextlib.suppress(Exception):
                await self._ready

    def stop(self) -> None:
        """Stop a registration still under way."""
        if self._ready is not None and not self._ready.done():
            self._ready.cancel()

    async def settle(
        self,
        bus_name: str,
        since: float | None = None,
        *,
        first_ms: float = 600.0,
        quiet_ms: float = 50.0,
        max_ms: float = 1500.0,
    ) -> bool:
        """Wait until the app's accessibility events went quiet (see :mod:`.events`)."""
        await self.ready()
        return await self._watcher.wait_quiet(
            bus_name,
            time.monotonic() if since is None else since,
            first_ms=first_ms,
            quiet_ms=quiet_ms,
            max_ms=max_ms,
        )

    def last_event(self, bus_name: str) -> float:
        return self._watcher.last_event(bus_name)

    def went_quiet(self, bus_name: str, since: float, now: float, *, quiet_s: float) -> bool:
        return self._watcher.went_quiet(bus_name, since, now, quiet_s=quiet_s)

    def first_event_after(self, bus_name: str, since: float) -> float | None:
        return self._watcher.first_event_after(bus_name, since)

    async def next_event(self, bus_name: str, timeout: float) -> bool:
        return await self._watcher.next_event(bus_name, timeout)

    def page_load(self, bus_name: str, since: float) -> PageLoad:
        return self._watcher.page_load(bus_name, since)

    # ------------------------------------------------------------------ for the tree cache

    @property
    def registered(self) -> bool:
        """Registering with the registry is over (events of every class can come)."""
        return self._watcher.registered

    def heard_since_registration(self, bus_name: str) -> bool:
        return self._watcher.heard_since_registration(bus_name)

    def seq(self, bus_name: str) -> int:
        return self._watcher.seq(bus_name)

    def changes_since(self, bus_name: str, seq: int) -> list[Change] | None:
        return self._watcher.changes_since(bus_name, seq)

    def shown_paths(self, bus_name: str) -> list[str]:
        return self._watcher.shown_paths(bus_name)

    async def barrier(self, bus_name: str) -> bool:
        return await self._watcher.barrier(bus_name)
