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
I_HYPERLINK: Final = "org.a11y.atspi.Hyperlink"
I_SELECTION: Final = "org.a11y.atspi.Selection"
I_TABLE: Final = "org.a11y.atspi.Table"
I_TEXT: Final = "org.a11y.atspi.Text"
I_VALUE: Final = "org.a11y.atspi.Value"
I_PROPERTIES: Final = "org.freedesktop.DBus.Properties"

#: the properties a refused ``Properties.GetAll`` is read as, one ``Get`` each: what the
#: host reads of each interface (Qt answers GetAll with UnknownInterface, Get it answers)
GET_ALL_PROPERTIES: Final[dict[str, tuple[str, ...]]] = {
    I_ACCESSIBLE: ("Name", "Description", "Parent", "ChildCount"),
    I_TEXT: ("CharacterCount", "CaretOffset"),
    I_TABLE: ("NRows", "NColumns"),
}
#: the error names of a GetAll refused as unknown, not failed
_GET_ALL_UNKNOWN: Final = frozenset(
    {
        "org.freedesktop.DBus.Error.UnknownInterface",
        "org.freedesktop.DBus.Error.UnknownMethod",
        "org.freedesktop.DBus.Error.NotSupported",
    }
)

# Error names that mean "the object or its app is gone", not "this call is unsupported".
UNKNOWN_OBJECT: Final = "org.freedesktop.DBus.Error.UnknownObject"
GONE_ERRORS: Final = frozenset(
    {
        "org.freedesktop.DBus.Error.ServiceUnknown",
        "org.freedesktop.DBus.Error.NoReply",
        "org.freedesktop.DBus.Error.Disconnected",
        "org.freedesktop.DBus.Error.NameHasNoOwner",
        UNKNOWN_OBJECT,
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


#: the answer a GetAll held back from an app of ``Conn.get_only`` stands in with
_HELD_BACK: Final = AtspiCallError("org.freedesktop.DBus.Error.UnknownMethod", "held back")


class Conn:
    """One D-Bus connection with bounded concurrency.

    ``direct`` connections are peer-to-peer sockets to one application: messages carry no
    destination there.
    """

    __slots__ = ("_sem", "bus", "direct", "get_only")

    def __init__(self, bus: MessageBus, *, direct: bool = False) -> None:
        self.bus = bus
        self.direct = direct
        self._sem = asyncio.Semaphore(MAX_IN_FLIGHT)
        #: the bus names of the apps never sent a ``Properties.GetAll``, asked one ``Get``
        #: per property instead: Qt's (Qt 6.4 crashes on it) and any that refused one
        self.get_only: set[str] = set()

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

        A ``Properties.GetAll`` to an app of :attr:`get_only`, or that the app refuses as
        unknown (Qt 6.12 implements only ``Get``), is answered with one ``Get`` per property
        of :data:`GET_ALL_PROPERTIES`, sent together in a second round, in the reply shape
        ``GetAll`` has: callers never see the difference.
        """
        loop = asyncio.get_running_loop()
        errors: list[int] = []
        out: asyncio.Future[list[Any]] = loop.create_future()
        get_only = self.get_only
        held = (
            {i for i, c in enumerate(calls) if c[0] in get_only and _asks_get_all(c)}
            if get_only
            else set()
        )

        def first(sent: asyncio.Future[list[Any]]) -> None:
            if not _still_wanted(out, sent):
                return
            results = sent.result()
            redo = [i for i in errors if _get_all_refused(calls[i], results[i])]
            get_only.update(calls[i][0] for i in redo)
            if not redo:
                out.set_result(results)
                return
            gets: list[Call] = []
            for i in redo:
                dest, path, _iface, _member, _sig, body = calls[i]
                gets += [
                    (dest, path, I_PROPERTIES, "Get", "ss", (body[0], name))
                    for name in GET_ALL_PROPERTIES[body[0]]
                ]

            def second(got: asyncio.Future[list[Any]]) -> None:
                if not _still_wanted(out, got):
                    return
                values, k = got.result(), 0
                for i in redo:
                    names = GET_ALL_PROPERTIES[calls[i][5][0]]
                    answers = values[k : k + len(names)]
                    k += len(names)
                    results[i] = [
                        {
                            name: answer[0]
                            for name, answer in zip(names, answers, strict=True)
                            if not isinstance(answer, AtspiCallError)
                        }
                    ]
                out.set_result(results)

            self._send(gets, [], set()).add_done_callback(second)

        self._send(calls, errors, held).add_done_callback(first)
        return out

    def _send(
        self, calls: Sequence[Call], errors: list[int], held: set[int]
    ) -> asyncio.Future[list[Any]]:
        """The calls issued but those ``held`` back (answered as refused GetAlls); their
        results in order (``errors``: the indexes that failed)."""
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
                errors.append(i)
            else:
                results[i] = reply.body
            return count_done()

        def count_done() -> bool:
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
                if held and i in held:
                    results[i] = _HELD_BACK
                    errors.append(i)
                    if not count_done():
                        return
                    continue
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
        (body,) = await self.batch([(dest, path, I_PROPERTIES, "GetAll", "s", (iface,))])
        if isinstance(body, AtspiCallError):
            raise body
        return {k: v.value if isinstance(v, Variant) else v for k, v in body[0].items()}

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.bus.disconnect()


async def app_bus_address(conn: Conn, bus: str) -> str:
    """The app's peer-to-peer socket address, "" when it offers none; AtspiCallError when the
    app is gone. Qt does not implement the method and answers UnknownObject about its own
    root: an answer from the app itself, so it is there."""
    try:
        body = await conn.call(bus, ROOT_PATH, I_APPLICATION, "GetApplicationBusAddress")
    except AtspiCallError as exc:
        if exc.gone and exc.name != UNKNOWN_OBJECT:
            raise
        return ""
    return str(body[0])


def _still_wanted(out: asyncio.Future[Any], round_: asyncio.Future[Any]) -> bool:
    """Whether a round's results still go to ``out``: not when ``out`` was given up (a read
    past its deadline), nor when the round was cancelled (then ``out`` is too)."""
    if out.done():
        return False
    if round_.cancelled():
        out.cancel()
        return False
    return True


def _asks_get_all(call: Call) -> bool:
    """Whether ``call`` is a GetAll of an interface :data:`GET_ALL_PROPERTIES` can answer."""
    _dest, _path, iface, member, _sig, body = call
    return (
        member == "GetAll"
        and iface == I_PROPERTIES
        and bool(body)
        and body[0] in GET_ALL_PROPERTIES
    )


def _get_all_refused(call: Call, result: Any) -> bool:
    """Whether ``result`` is an app's refusal of ``call`` as a GetAll it does not know (or
    one held back from an app of ``Conn.get_only``)."""
    return (
        isinstance(result, AtspiCallError)
        and result.name in _GET_ALL_UNKNOWN
        and _asks_get_all(call)
    )


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
