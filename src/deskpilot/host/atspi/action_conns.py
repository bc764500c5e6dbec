"""Connections that carry actions, kept apart from the connection that reads trees.

Why (measured with mousepad on at-spi2-core 2.46 / GTK 3.24, see docs/host.md):

* atk-bridge answers ``Action.DoAction`` *before* it calls ``atk_action_do_action``, and GTK3
  menu items and buttons then run the app's handler synchronously, still inside libdbus's
  ``dbus_connection_dispatch`` of the connection the call came on. A handler that runs a modal
  dialog (``gtk_dialog_run``) keeps that dispatch open until the dialog closes.
* Meanwhile that connection answers nothing: its GLib source is "in call" and GLib does not
  recurse into it. Anything sent on it waits — and when the app next handles a key press,
  atk-bridge's ``send_and_allow_reentry`` attaches the connection to a private main context,
  dispatches the waiting message, re-enters ``dbus_connection_dispatch`` on the same thread and
  blocks forever on libdbus's dispatch lock. Closing the connection (our host exiting) queues
  ``Disconnected`` on it and deadlocks the app the same way.

So every state-changing call goes out on an *action connection*: a private peer-to-peer socket
to the app used for nothing else. Reads keep using the app's main direct connection, which stays
responsive while the dialog runs. An action connection is reused only when no modal window of
the app appeared since its last action (the window may be run from inside that action); else
it is *held* — never written to, never closed — until the app shows no modal window at all and
its last call was answered. A tiny holder process shares each action socket, so it is not
closed under the app even when the host is killed; it exits when we shut the socket down, when
the app exits, or after ``HOLD_MAX_S``.

Where an app offers no private socket (GTK4, Qt), actions use the given fallback connection; the
wait for a reply is bounded either way (``ACTION_REPLY_WAIT_S``).
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
from collections.abc import Sequence
from typing import Any, Final

from dbus_fast.aio import MessageBus

from deskpilot.host.atspi.bus import (
    I_ACCESSIBLE,
    ROOT_PATH,
    AtspiCallError,
    Conn,
    app_bus_address,
)
from deskpilot.host.atspi.vocab import State, bit, state_mask
from deskpilot.protocol.errors import DeskpilotError, ErrorCode

ACTION_REPLY_WAIT_S: Final = 0.8  # then the action counts as dispatched, still running
MODAL_LOOKUP_TIMEOUT_S: Final = 1.0
CONNECT_TIMEOUT_S: Final = 2.0
MAX_HELD: Final = 8  # per app; beyond, semantic actions are refused (synthetic input is used)
HOLD_MAX_S: Final = 12 * 3600

_B_MODAL: Final = bit(State.MODAL)

# Keeps one socket open without reading it; ends when the socket is shut down on our side or
# closed by the app (POLLHUP/POLLRDHUP), when the app exits, or after the time limit.
_HOLDER: Final = """
import os, select, sys, time
fd, pid, end = int(sys.argv[1]), int(sys.argv[2]), time.monotonic() + float(sys.argv[3])
poller = select.poll()
poller.register(fd, select.POLLRDHUP)
while time.monotonic() < end:
    if poller.poll(2000):
        break
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        break
    except PermissionError:
        pass
"""


class ActionConn:
    """One private socket to an app that carries actions only."""

    __slots__ = ("conn", "holder", "modal_before", "pending")

    def __init__(self, conn: Conn, holder: subprocess.Popen[bytes] | None) -> None:
        self.conn = conn
        self.holder = holder
        #: the app's modal windows when this connection's last action was sent
        self.modal_before: frozenset[str] = frozenset()
        #: its last call has not been answered yet: the app is still inside it
        self.pending = False

    @property
    def connected(self) -> bool:
        return self.conn.connected

    def release(self) -> None:
        """Close for good (the app is known to be out of every action sent here)."""
        self.conn.close()  # shuts the socket down: the holder sees it and exits
        self.reap()

    def reap(self) -> None:
        if self.holder is not None and self.holder.poll() is not None:
            self.holder = None


class ActionLane:
    """The action connections of one app."""

    __slots__ = ("address", "held", "idle", "pid")

    def __init__(self, pid: int, address: str) -> None:
        self.pid = pid
        self.address = address
        self.idle: ActionConn | None = None
        self.held: list[ActionConn] = []


class ActionConns:
    """Action connections per app (by bus name); see the module docstring."""

    def __init__(self, a11y: Conn) -> None:
        self._a11y = a11y
        self._lanes: dict[str, ActionLane | None] = {}
        self._running: set[asyncio.Future[list[Any]]] = set()
        self._watchers: set[asyncio.Future[None]] = set()

    async def call(
        self,
        bus: str,
        pid: int,
        fallback: Conn,
        path: str,
        iface: str,
        member: str,
        signature: str = "",
        body: Sequence[Any] = (),
    ) -> list[Any] | None:
        """The reply body, or None when the app has not answered within
        ``ACTION_REPLY_WAIT_S`` (the call was delivered; the app is still inside it)."""
        lane = await self._lane(bus, pid)
        ac = await self._pick(lane, bus) if lane is not None else None
        conn = ac.conn if ac is not None else fallback
        fut: asyncio.Future[list[Any]] = asyncio.ensure_future(
            conn.call(bus, path, iface, member, signature, body)
        )
        try:
            done, _ = await asyncio.wait({fut}, timeout=ACTION_REPLY_WAIT_S)
        except asyncio.CancelledError:
            self._leave_running(fut, ac)
            raise
        if fut in done:
            return fut.result()
        self._leave_running(fut, ac)
        return None

    def _leave_running(self, fut: asyncio.Future[list[Any]], ac: ActionConn | None) -> None:
        """The call stays in flight (it is never cancelled: its reply frees the connection)."""
        if ac is not None:
            ac.pending = True
        self._running.add(fut)

        def done(f: asyncio.Future[list[Any]]) -> None:
            self._running.discard(f)
            if ac is not None:
                ac.pending = False
            if not f.cancelled():
                f.exception()  # retrieved: nobody waits for it any more

        fut.add_done_callback(done)

    async def _lane(self, bus: str, pid: int) -> ActionLane | None:
        if bus in self._lanes:
            return self._lanes[bus]
        address = await app_bus_address(self._a11y, bus)  # raises when the app is gone
        lane = ActionLane(pid, address) if address else None
        self._lanes[bus] = lane
        return lane

    async def _pick(self, lane: ActionLane, bus: str) -> ActionConn | None:
        """A connection no action of ours may still be running in (None: use the fallback)."""
        modal = await self.modal_windows(bus)
        for h in lane.held:
            h.reap()
        if modal is not None and not modal:
            # no modal window left: every dialog an earlier action ran has returned
            for h in [h for h in lane.held if not h.pending]:
                lane.held.remove(h)
                h.release()
        lane.held = [h for h in lane.held if h.connected]
        ac = lane.idle
        if ac is not None and not ac.connected:
            ac = lane.idle = None
        if ac is not None and (ac.pending or modal is None or not modal <= ac.modal_before):
            # a modal window appeared since its last action: it may be running inside it
            lane.held.append(ac)
            ac = lane.idle = None
        if ac is None:
            if len(lane.held) >= MAX_HELD:
                raise DeskpilotError(
                    ErrorCode.UNSUPPORTED_ACTION,
                    "the app is still inside earlier actions (modal dialogs); "
                    "no safe accessibility connection is left for another one",
                    details={"reason": "app_busy_in_actions", "held": len(lane.held)},
                )
            ac = await self._open(lane)
            if ac is None:
                return None
            lane.idle = ac
        ac.modal_before = modal if modal is not None else frozenset()
        return ac

    async def _open(self, lane: ActionLane) -> ActionConn | None:
        try:
            bus_ = await asyncio.wait_for(
                MessageBus(bus_address=lane.address).connect(), CONNECT_TIMEOUT_S
            )
        except Exception:
            return None
        ac = ActionConn(Conn(bus_, direct=True), _spawn_holder(bus_, lane.pid))
        # the app exiting ends this connection with EOFError: expected, not an error
        watcher = asyncio.ensure_future(_quietly(bus_.wait_for_disconnect()))  # type: ignore[no-untyped-call]
        self._watchers.add(watcher)
        watcher.add_done_callback(self._watchers.discard)
        return ac

    async def modal_windows(self, bus: str) -> frozenset[str] | None:
        """Paths of the app's top-level windows in the modal state; None when unknown.

        Read over the bus daemon (the app's bus connection), never an action connection.
        """
        try:
            async with asyncio.timeout(MODAL_LOOKUP_TIMEOUT_S):
                body = await self._a11y.call(bus, ROOT_PATH, I_ACCESSIBLE, "GetChildren")
                refs = [(str(b) or bus, str(p)) for b, p in body[0]]
                res = await self._a11y.batch(
                    [(b, p, I_ACCESSIBLE, "GetState", "", ()) for b, p in refs]
                )
        except (TimeoutError, AtspiCallError):
            return None
        return frozenset(
            p
            for (_, p), r in zip(refs, res, strict=True)
            if not isinstance(r, AtspiCallError) and state_mask(r[0]) & _B_MODAL
        )

    async def close(self) -> None:
        """Close what is known idle; leave the rest to their holders (closing a connection
        the app is still dispatching would deadlock it)."""
        for bus, lane in self._lanes.items():
            if lane is None:
                continue
            conns = lane.held + ([lane.idle] if lane.idle is not None else [])
            modal = await self.modal_windows(bus) if conns else None
            for ac in conns:
                if modal is not None and not modal and not ac.pending:
                    ac.release()
                # else: not shut down; its holder keeps the app's end open
        self._lanes.clear()
        for w in self._watchers:
            w.cancel()
        self._watchers.clear()


def _spawn_holder(bus: MessageBus, pid: int) -> subprocess.Popen[bytes] | None:
    sock = getattr(bus, "_sock", None)
    if sock is None:
        return None
    try:
        fd = sock.fileno()
        return subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _HOLDER, str(fd), str(pid), str(HOLD_MAX_S)],
            pass_fds=(fd,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a kill of the host's process group spares it
        )
    except OSError:
        return None


async def _quietly(aw: Any) -> None:
    with contextlib.suppress(BaseException):
        await aw
