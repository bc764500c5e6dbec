"""Calls on the accessibility bus: bounded, typed errors, and peer-to-peer where offered.

Why the extra machinery around dbus-fast:

* dbus-fast raises ``BlockingIOError`` (EAGAIN) from its socket writer when thousands of calls
  are queued at once, so every connection has a semaphore (64 calls in flight).
* Every call through the bus daemon costs a hop through ``dbus-daemon``. atk-bridge apps
  (GTK3, Chromium, Java) answer ``Application.GetApplicationBusAddress`` with a private
  socket; talking to them directly roughly halves the cost of a call (measured: 1,747 GetRole
  calls to Chromium 65 ms via the daemon, 46 ms direct). GTK4 has no such socket; its calls
  go through the daemon.
* Replies that are D-Bus errors become :class:`AtspiCallError` with the error name, so callers
  can tell "this object has no such interface" from "the app went away".
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from functools import partial
from typing import Any, Final

from dbus_fast import BusType, Message, MessageType, Variant
from dbus_fast.aio import MessageBus

from deskpilot.host.atspi.wire import method_call

MAX_IN_FLIGHT: Final = 64

# (destination, path, interface, member, signature, body)
Call = tuple[str, str, str, str, str, Sequence[Any]]

A11Y_BUS_NAME: Final = "org.a11y.Bus"
A11Y_BUS_PATH: Final = "/org/a11y/bus"
REGISTRY: Final = "org.a11y.atspi.Registry"
ROOT_PATH: Final = "/org/a11y/atspi/accessible/root"
NULL_PATH: Final = "/org/a11y/atspi/null"
CACHE_PATH: Final = "/org/a11y/atspi/cache"

I_ACCESSIBLE: Final = "org.a11y.atspi.Accessible"
I_ACTION: Final = "org.a11y.atspi.Action"
I_APPLICATION: Final = "org.a11y.atspi.Application"
I_CACHE: Final = "org.a11y.atspi.Cache"
I_COLLECTION: Final = "org.a11y.atspi.Collection"
I_COMPONENT: Final = "org.a11y.atspi.Component"
I_DOCUMENT: Final = "org.a11y.atspi.Document"
I_EDITABLE_TEXT: Final = "org.a11y.atspi.EditableText"
I_SELECTION: Final = "org.a11y.atspi.Selection"
I_TABLE: Final = "org.a11y.atspi.Table"
I_TEXT: Final = "org.a11y.atspi.Text"
I_VALUE: Final = "org.a11y.atspi.Value"
I_PROPERTIES: Final = "org.freedesktop.DBus.Properties"

# Error names that mean "the object or its app is gone", not "this call is unsupported".
GONE_ERRORS: Final = frozenset(
    {
        "org.freedesktop.DBus.Error.ServiceUnknown",
        "org.freedesktop.DBus.Error.NoReply",
        "org.freedesktop.DBus.Error.Disconnected",
        "org.freedesktop.DBus.Error.NameHasNoOwner",
        "org.freedesktop.DBus.Error.UnknownObject",
        "org.a11y.atspi.Error.Defunct",
    }
)


class AtspiCallError(Exception):
    """A D-Bus error reply (``name`` is the D-Bus error name) or a lost connection."""

    def __init__(self, name: str, message: str = "") -> None:
        super().__init__(f"{name}: {message}" if message else name)
        self.name = name
        self.message = message

    @property
    def gone(self) -> bool:
        return self.name in GONE_ERRORS


class Conn:
    """One D-Bus connection with bounded concurrency.

    ``direct`` connections are peer-to-peer sockets to one application: messages carry no
    destination there.
    """

    __slots__ = ("_sem", "bus", "direct")

    def __init__(self, bus: MessageBus, *, direct: bool = False) -> None:
        self.bus = bus
        self.direct = direct
        self._sem = asyncio.Semaphore(MAX_IN_FLIGHT)

    @property
    def connected(self) -> bool:
        return bool(self.bus.connected)

    async def call(
        self,
        dest: str,
        path: str,
        iface: str,
        member: str,
        signature: str = "",
        body: Sequence[Any] = (),
    ) -> list[Any]:
        msg = Message(
            destination=None if self.direct else dest,
            path=path,
            interface=iface,
            member=member,
            signature=signature,
            body=list(body),
            validate=False,
        )
        async with self._sem:
            try:
                reply = await self.bus.call(msg)
            except (EOFError, OSError, ConnectionError) as exc:
                raise AtspiCallError("org.freedesktop.DBus.Error.Disconnected", str(exc)) from exc
        if reply is None:
            raise AtspiCallError("org.freedesktop.DBus.Error.NoReply")
        if reply.message_type == MessageType.ERROR:
            text = str(reply.body[0]) if reply.body else ""
            raise AtspiCallError(reply.error_name or "org.freedesktop.DBus.Error.Failed", text)
        return list(reply.body)

    def batch(self, calls: Sequence[Call]) -> asyncio.Future[list[Any]]:
        """Issue many calls with at most ``MAX_IN_FLIGHT`` outstanding; one future for all.

        Each result is the reply body (a list) or an :class:`AtspiCallError`. Driven by reply
        callbacks rather than one task per call: for thousands of calls the per-task cost
        of ``asyncio.gather`` is larger than the D-Bus work itself.
        """
        loop = asyncio.get_running_loop()
        done: asyncio.Future[list[Any]] = loop.create_future()
        n = len(calls)
        results: list[Any] = [None] * n
        if n == 0:
            done.set_result(results)
            return done
        bus = self.bus
        direct = self.direct
        state = [0, 0, 0]  # next index, in flight, completed

        def on_reply(i: int, reply: Message | None, err: Exception | None) -> None:
            if complete(i, reply, err):
                pump()

        def complete(i: int, reply: Message | None, err: Exception | None) -> bool:
            """Record one result; True while more calls remain to be sent or answered."""
            if err is not None:
                results[i] = AtspiCallError("org.freedesktop.DBus.Error.Disconnected", str(err))
            elif reply is None:
                results[i] = AtspiCallError("org.freedesktop.DBus.Error.NoReply")
            elif reply.message_type == MessageType.ERROR:
                text = str(reply.body[0]) if reply.body else ""
                results[i] = AtspiCallError(reply.error_name or "Failed", text)
            else:
                results[i] = reply.body
            state[1] -= 1
            state[2] += 1
            if state[2] == n:
                if not done.done():
                    done.set_result(results)
                return False
            return True

        writer = getattr(bus, "_writer", None)
        handlers = getattr(bus, "_method_return_handlers", None)
        fast = writer is not None and handlers is not None and hasattr(writer, "messages")

        outbuf: list[bytes] = []
        flush_pending = [False]

        def flush() -> None:
            # one buffer (one send) for everything queued since the last loop iteration
            flush_pending[0] = False
            if outbuf and bus.connected:
                writer.messages.append((b"".join(outbuf), None, None))  # type: ignore[union-attr]
                outbuf.clear()
                writer.schedule_write()  # type: ignore[union-attr]

        def pump() -> None:
            queued = False
            while state[1] < MAX_IN_FLIGHT and state[0] < n:
                i = state[0]
                state[0] += 1
                state[1] += 1
                dest, path, iface, member, sig, body = calls[i]
                target = None if direct else dest
                try:
                    if fast and bus.connected:
                        serial = bus.next_serial()
                        raw = method_call(serial, target, path, iface, member, sig, body)
                        if raw is not None:
                            # the reply comes back through the bus's own reply table
                            handlers[serial] = partial(on_reply, i)  # type: ignore[index]
                            outbuf.append(raw)
                            queued = True
                            continue
                    msg = Message(
                        destination=target,
                        path=path,
                        interface=iface,
                        member=member,
                        signature=sig,
                        body=list(body),
                        validate=False,
                    )
                    bus._call(msg, partial(on_reply, i))
                except Exception as exc:  # connection already closed: no recursion here
                    complete(i, None, exc)
            if queued and not flush_pending[0]:
                flush_pending[0] = True
                loop.call_soon(flush)

        pump()
        return done

    async def get_property(self, dest: str, path: str, iface: str, name: str) -> Any:
        body = await self.call(dest, path, I_PROPERTIES, "Get", "ss", (iface, name))
        value = body[0]
        return value.value if isinstance(value, Variant) else value

    async def get_all(self, dest: str, path: str, iface: str) -> dict[str, Any]:
        body = await self.call(dest, path, I_PROPERTIES, "GetAll", "s", (iface,))
        return {k: v.value if isinstance(v, Variant) else v for k, v in body[0].items()}

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.bus.disconnect()


async def connect_session(session_address: str | None) -> MessageBus:
    if session_address:
        return await MessageBus(bus_address=session_address).connect()
    return await MessageBus(bus_type=BusType.SESSION).connect()


async def a11y_address(session: MessageBus) -> str:
    reply = await session.call(
        Message(
            destination=A11Y_BUS_NAME,
            path=A11Y_BUS_PATH,
            interface="org.a11y.Bus",
            member="GetAddress",
        )
    )
    if reply is None or reply.message_type == MessageType.ERROR:
        name = reply.error_name if reply is not None else "NoReply"
        raise AtspiCallError(name or "org.freedesktop.DBus.Error.Failed", "org.a11y.Bus")
    return str(reply.body[0])


async def enable_accessibility(session: MessageBus) -> bool:
    """Set ``org.a11y.Status.IsEnabled``; Chromium, Electron and Qt build trees only then."""
    reply = await session.call(
        Message(
            destination=A11Y_BUS_NAME,
            path=A11Y_BUS_PATH,
            interface=I_PROPERTIES,
            member="Set",
            signature="ssv",
            body=["org.a11y.Status", "IsEnabled", Variant("b", True)],
        )
    )
    return reply is not None and reply.message_type != MessageType.ERROR
