"""The small D-Bus chores a desktop needs: find the AT-SPI bus, turn accessibility on.

``org.a11y.Status.IsEnabled = true`` on the session bus makes Chromium, Electron and Qt build
their trees (GTK does regardless). Kept here, not in the host, because the desktop sets it
before any app starts; the host sets it again at start for desktops it did not create.
"""

from __future__ import annotations

import asyncio
import time

from dbus_fast import BusType, Message, MessageFlag, MessageType, Variant
from dbus_fast.aio import MessageBus

A11Y_BUS_NAME = "org.a11y.Bus"
A11Y_BUS_PATH = "/org/a11y/bus"


async def _call(bus: MessageBus, msg: Message) -> Message:
    reply = await bus.call(msg)
    assert reply is not None
    if reply.message_type == MessageType.ERROR:
        raise RuntimeError(f"{reply.error_name}: {reply.body}")
    return reply


async def get_a11y_address(session_address: str | None = None, *, auto_start: bool = True) -> str:
    """The accessibility bus address. ``auto_start=False`` asks only an already running
    launcher: a desktop that starts its own launcher must not have the session bus activate a
    second one (``org.a11y.Bus.service``), which can win the bus name and make ours exit."""
    bus = await _connect(session_address)
    try:
        reply = await _call(
            bus,
            Message(
                destination=A11Y_BUS_NAME,
                path=A11Y_BUS_PATH,
                interface="org.a11y.Bus",
                member="GetAddress",
                flags=MessageFlag.NONE if auto_start else MessageFlag.NO_AUTOSTART,
            ),
        )
        return str(reply.body[0])
    finally:
        bus.disconnect()


async def enable_accessibility(session_address: str | None = None) -> None:
    bus = await _connect(session_address)
    try:
        await _call(
            bus,
            Message(
                destination=A11Y_BUS_NAME,
                path=A11Y_BUS_PATH,
                interface="org.freedesktop.DBus.Properties",
                member="Set",
                signature="ssv",
                body=["org.a11y.Status", "IsEnabled", Variant("b", True)],
            ),
        )
    finally:
        bus.disconnect()


def announce_on_display(display: str, address: str) -> None:
    """Put the accessibility bus's address on the X root window (``AT_SPI_BUS``), as a desktop
    session's bus launcher does where it can (this one does not, here).

    Qt 5 needs it. With the address on the display it connects to the bus as it starts;
    without it, it asks the session bus and registers before the answer comes, which fails,
    and it never registers again. The result is no tree at all (Qt 5.15.8, Debian 12).
    atk-bridge (GTK, Chromium) and Qt 6 read the same address either way."""
    from Xlib import X, Xatom
    from Xlib import display as xdisplay

    conn = xdisplay.Display(display)
    try:
        root = conn.screen().root
        root.change_property(
            conn.intern_atom("AT_SPI_BUS"), Xatom.STRING, 8, address.encode(), X.PropModeReplace
        )
        conn.sync()
    finally:
        conn.close()


async def wait_for_a11y_bus(
    session_address: str | None, timeout: float, *, auto_start: bool = True
) -> str:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            return await get_a11y_address(session_address, auto_start=auto_start)
        except Exception as exc:  # not up yet
            last = exc
            await asyncio.sleep(0.05)
    raise RuntimeError(f"the AT-SPI bus did not come up: {last}")


async def _connect(session_address: str | None) -> MessageBus:
    if session_address:
        return await MessageBus(bus_address=session_address).connect()
    return await MessageBus(bus_type=BusType.SESSION).connect()


async def list_accessible_apps(
    session_address: str | None = None, call_timeout: float = 2.0
) -> list[tuple[str, int]]:
    """(name, pid) of every application registered with the AT-SPI registry."""
    a11y = await MessageBus(bus_address=await get_a11y_address(session_address)).connect()
    try:
        reply = await asyncio.wait_for(
            _call(
                a11y,
                Message(
                    destination="org.a11y.atspi.Registry",
                    path="/org/a11y/atspi/accessible/root",
                    interface="org.a11y.atspi.Accessible",
                    member="GetChildren",
                ),
            ),
            timeout=call_timeout,
        )

        async def describe(bus_name: str, path: str) -> tuple[str, int] | None:
            try:
                name_reply, pid_reply = await asyncio.wait_for(
                    asyncio.gather(
                        _call(
                            a11y,
                            Message(
                                destination=bus_name,
                                path=path,
                                interface="org.freedesktop.DBus.Properties",
                                member="Get",
                                signature="ss",
                                body=["org.a11y.atspi.Accessible", "Name"],
                            ),
                        ),
                        _call(
                            a11y,
                            Message(
                                destination="org.freedesktop.DBus",
                                path="/org/freedesktop/DBus",
                                interface="org.freedesktop.DBus",
                                member="GetConnectionUnixProcessID",
                                signature="s",
                                body=[bus_name],
                            ),
                        ),
                    ),
                    timeout=call_timeout,
                )
            except Exception:  # a busy, hung or departed app must not stall the listing
                return None
            return str(name_reply.body[0].value), int(pid_reply.body[0])

        found = await asyncio.gather(*(describe(b, p) for b, p in reply.body[0]))
        out = [f for f in found if f is not None]
        return out
    finally:
        a11y.disconnect()
