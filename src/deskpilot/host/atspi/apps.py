"""The applications on the accessibility bus, and the process behind each bus name.

An app's name, toolkit and pid are learnt once per bus name and remembered: every snapshot
needs them (the toolkit picks how the tree is read and how names are cleaned,
docs/host-tree.md), and asking again would cost round trips each time. The pid is asked
afresh only where it is the question: whether an element is still the one observed
(docs/host-tree.md, "Staleness").
"""

from __future__ import annotations

import asyncio
from typing import Any

from deskpilot.host.atspi.bus import (
    I_ACCESSIBLE,
    I_APPLICATION,
    I_PROPERTIES,
    REGISTRY,
    ROOT_PATH,
    AtspiCallError,
    Conn,
)
from deskpilot.host.atspi.model import AppInfo, ElementRef
from deskpilot.host.atspi.vocab import State, bit, state_mask


class Applications:
    """What is known of each app by its bus name: its ``AppInfo`` and its pid."""

    def __init__(self, bus: Conn) -> None:
        self._bus = bus
        self._apps: dict[str, AppInfo] = {}
        self._pids: dict[str, int] = {}

    async def applications(self, pid: int | None = None) -> list[AppInfo]:
        """Every app the registry lists that answers and has a pid (only ``pid``'s, when
        given: their pids are asked of the bus daemon first, so an app that does not answer
        — stopped, hung — and was never asked before delays no other process's lookup)."""
        body = await self._bus.call(REGISTRY, ROOT_PATH, I_ACCESSIBLE, "GetChildren")
        refs = [(str(b), str(p)) for b, p in body[0]]
        if pid is not None:
            pids = await asyncio.gather(*(self.pid(b) for b, _ in refs))
            refs = [r for r, p in zip(refs, pids, strict=True) if p == pid]
        infos = await asyncio.gather(*(self.info(b, p) for b, p in refs))
        return [i for i in infos if i is not None]

    def known(self, bus: str) -> AppInfo | None:
        """The app's info if it was already read (no call)."""
        return self._apps.get(bus)

    async def info(self, bus: str, path: str) -> AppInfo | None:
        """The app's name, toolkit and pid; None when it does not answer or has no pid."""
        if bus in self._apps:
            return self._apps[bus]
        res = await self._bus.batch(
            [
                (bus, path, I_PROPERTIES, "Get", "ss", (I_ACCESSIBLE, "Name")),
                (bus, path, I_PROPERTIES, "Get", "ss", (I_APPLICATION, "ToolkitName")),
                (bus, path, I_PROPERTIES, "Get", "ss", (I_APPLICATION, "Version")),
            ]
        )
        if isinstance(res[0], AtspiCallError):
            return None
        pid = await self.pid(bus)
        if pid is None:
            return None

        def val(r: Any) -> str | None:
            return None if isinstance(r, AtspiCallError) else str(r[0].value)

        info = AppInfo(
            name=val(res[0]) or "",
            pid=pid,
            bus_name=bus,
            path=path,
            toolkit=val(res[1]),
            toolkit_version=val(res[2]),
        )
        self._apps[bus] = info
        return info

    async def pid(self, bus: str) -> int | None:
        """The pid dbus-daemon gives for the bus name; None when it has none (gone)."""
        if bus in self._pids:
            return self._pids[bus]
        try:
            body = await self._bus.call(
                "org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                "org.freedesktop.DBus",
                "GetConnectionUnixProcessID",
                "s",
                (bus,),
            )
        except AtspiCallError:
            return None
        pid = int(body[0])
        self._pids[bus] = pid
        return pid

    async def still_valid(self, element: ElementRef) -> bool:
        """The object still exists, is not defunct, and its bus name still belongs to its pid.

        The two questions go out at once (the app answers one, the bus daemon the other)."""
        self._pids.pop(element.bus_name, None)
        state, pid = await asyncio.gather(
            self._bus.call(element.bus_name, element.path, I_ACCESSIBLE, "GetState"),
            self.pid(element.bus_name),
            return_exceptions=True,
        )
        if isinstance(state, BaseException):
            if isinstance(state, AtspiCallError):
                return False
            raise state
        if isinstance(pid, BaseException):
            raise pid
        if state_mask(state[0]) & bit(State.DEFUNCT):
            return False
        return pid is not None and pid == element.pid
