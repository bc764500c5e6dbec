"""The connections reads go over: the accessibility bus, and each app's direct socket.

An app that offers a peer-to-peer socket (``Application.GetApplicationBusAddress``) is read over
it: a snapshot's calls, all issued at once, then skip dbus-daemon (docs/host-tree.md, "How the
tree is read"). Whether an app has one is asked once and remembered; a socket the app closed
is replaced on next use. State-changing calls never go
on these connections: they have their own (``action_conns``; docs/host.md).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from dbus_fast.aio import MessageBus

from deskpilot.host.atspi.bus import (
    Conn,
    a11y_address,
    app_bus_address,
    connect_session,
    enable_accessibility,
)
from deskpilot.protocol.errors import DeskpilotError, ErrorCode


async def open_buses(session_address: str | None) -> tuple[MessageBus, MessageBus]:
    """The session bus and the accessibility bus it names, accessibility switched on.

    Raises ENVIRONMENT_UNAVAILABLE when either is missing (nothing on this desktop can be read).
    """
    try:
        session = await connect_session(session_address)
    except Exception as exc:
        raise DeskpilotError(
            ErrorCode.ENVIRONMENT_UNAVAILABLE, f"no D-Bus session bus: {exc}"
        ) from exc
    try:
        with contextlib.suppress(Exception):
            await enable_accessibility(session)
        address = await a11y_address(session)
        a11y = await MessageBus(bus_address=address).connect()
    except Exception as exc:
        session.disconnect()
        raise DeskpilotError(
            ErrorCode.ENVIRONMENT_UNAVAILABLE, f"no accessibility bus (org.a11y.Bus): {exc}"
        ) from exc
    return session, a11y


class Connections:
    """The session bus, the accessibility bus (``bus``) and the direct socket of each app.

    Not thread-safe; use from one event loop.
    """

    def __init__(self, session: MessageBus, a11y: MessageBus) -> None:
        self.session = session
        self.bus = Conn(a11y)
        self._direct: dict[str, Conn | None] = {}  # None: the app offers no direct socket
        self._watchers: set[asyncio.Future[None]] = set()

    async def conn_for(self, bus: str) -> Conn:
        """The app's direct socket when it offers one, else the bus."""
        if bus in self._direct:
            conn = self._direct[bus]
            if conn is None:
                return self.bus
            if conn.connected:
                return conn
            del self._direct[bus]
        direct: Conn | None = None
        address = await app_bus_address(self.bus, bus)  # raises when the app is gone
        try:
            if address:
                bus_ = await asyncio.wait_for(MessageBus(bus_address=address).connect(), 2.0)
                direct = Conn(bus_, direct=True)
                # the app exiting ends this connection with EOFError: expected, not an error
                self._watchers.add(
                    asyncio.ensure_future(_quietly(bus_.wait_for_disconnect()))  # type: ignore[no-untyped-call]
                )
        except Exception:
            direct = None
        self._direct[bus] = direct
        return direct or self.bus

    def close(self) -> None:
        """Close the direct sockets, then the accessibility bus, then the session bus."""
        for conn in self._direct.values():
            if conn is not None:
                conn.close()
        self._direct.clear()
        for w in self._watchers:
            w.cancel()
        self._watchers.clear()
        self.bus.close()
        with contextlib.suppress(Exception):
            self.session.disconnect()


async def _quietly(aw: Any) -> None:
    with contextlib.suppress(BaseException):
        await aw
