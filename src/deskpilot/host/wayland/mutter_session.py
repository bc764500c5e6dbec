"""A Mutter remote-desktop session: one stream of frames, and input aimed in its coordinates.

Mutter serves two private D-Bus APIs on the session bus of the desktop it runs (GNOME's own
remote desktop is built on them; the xdg-desktop-portal GNOME backend too):

* ``org.gnome.Mutter.RemoteDesktop``: a session that sends pointer, button, scroll and key
  events as if from a device;
* ``org.gnome.Mutter.ScreenCast``: a session, tied to the remote-desktop one by its
  ``remote-desktop-session-id``, that records a monitor (``RecordMonitor``) or the focused
  window (``RecordWindow`` with no ``window-id``: plain Mutter has no API that names windows;
  GNOME Shell's Introspect does) into a PipeWire stream.

Pointer positions are given in the stream's coordinates (``NotifyPointerMotionAbsolute``
names the stream), so a point of a frame is where the pointer goes — no guess at where a
window lies on the screen, which Wayland does not tell a client. For a window stream, the
window's accessible coordinates (relative to the window under Wayland) are moved by where
the window lies in the frame (:func:`.frames.window_box`: its shadow comes first).

Keys are sent as keysyms (``NotifyKeyboardKeysym``), which Mutter maps to a key of its
layout. A character a US layout types with Shift is sent inside a Shift_L press (the
issue's own measurement had ``*`` arrive unshifted). The first key event of a session was
lost (measured: "3*2" typed as "×2", every later one whole): Mutter makes the session's
virtual keyboard on its first event, so a lone Shift press and release goes first, then a
pause; the first pointer motion is sent twice for the same reason. Events sent back to back
with no pause were lost (measured), so each event goes at least ``EVENT_GAP_S`` after the
one before.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any, Final, Literal

from dbus_fast import Message, MessageType, Variant
from dbus_fast.aio import MessageBus

from deskpilot.host.wayland.frames import FrameStream
from deskpilot.protocol.errors import DeskpilotError, ErrorCode

SCREEN_CAST: Final = "org.gnome.Mutter.ScreenCast"
REMOTE_DESKTOP: Final = "org.gnome.Mutter.RemoteDesktop"
#: the pause between two input events (Mutter lost events sent back to back)
EVENT_GAP_S: Final = 0.02
#: the pause after a session's first event, which makes its virtual device
DEVICE_READY_S: Final = 0.05
#: how long a started stream may take to name its PipeWire node
NODE_TIMEOUT_S: Final = 5.0
#: evdev button codes
BUTTONS: Final = {"left": 0x110, "right": 0x111, "middle": 0x112}
SHIFT_L: Final = 0xFFE1
#: characters a US layout types with Shift (sent inside a Shift_L press)
_SHIFTED: Final = frozenset('~!@#$%^&*()_+{}|:"<>?ABCDEFGHIJKLMNOPQRSTUVWXYZ')
#: keysyms of characters that are not their code point
_CONTROL_KEYSYMS: Final = {"\n": 0xFF0D, "\t": 0xFF09, "\b": 0xFF08, "\x1b": 0xFF1B}

Target = Literal["monitor", "window"]


def keysym_of(ch: str) -> int:
    """The X keysym of a character: Latin-1 is its code point, the rest of Unicode is
    ``0x01000000`` plus it (the keysym convention Mutter's keymap follows)."""
    if ch in _CONTROL_KEYSYMS:
        return _CONTROL_KEYSYMS[ch]
    code = ord(ch)
    return code if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF else 0x01000000 + code


class MutterSession:
    """A started remote-desktop session with one screen-cast stream (see the module
    docstring). Made by :meth:`open`; :meth:`close` ends it (Mutter also ends it when our
    bus connection goes)."""

    def __init__(self, bus: MessageBus, remote: str, stream: str, frames: FrameStream) -> None:
        self._bus = bus
        self._remote = remote
        self.stream = stream
        self.frames = frames
        self._closed = False
        self._keyboard_ready = False
        self._last_event = 0.0
        self._pointer_ready = False

    @classmethod
    async def open(
        cls, env: dict[str, str], size: tuple[int, int], target: Target = "monitor"
    ) -> MutterSession:
        """A session on the desktop whose ``DBUS_SESSION_BUS_ADDRESS`` and
        ``XDG_RUNTIME_DIR`` are in ``env`` and whose screen is ``size``, recording ``target``
        (the monitor, or the window that has the focus)."""
        address = env.get("DBUS_SESSION_BUS_ADDRESS")
        if not address:
            raise DeskpilotError(
                ErrorCode.ENVIRONMENT_UNAVAILABLE, "no DBUS_SESSION_BUS_ADDRESS for Mutter"
            )
        bus = await MessageBus(bus_address=address).connect()
        try:
            (remote,) = await _call(
                bus,
                REMOTE_DESKTOP,
                "/org/gnome/Mutter/RemoteDesktop",
                REMOTE_DESKTOP,
                "CreateSession",
            )
            prop = await _call(
                bus,
                REMOTE_DESKTOP,
                remote,
                "org.freedesktop.DBus.Properties",
                "Get",
                "ss",
                (f"{REMOTE_DESKTOP}.Session", "SessionId"),
            )
            linked = {"remote-desktop-session-id": Variant("s", str(prop[0].value))}
            (cast,) = await _call(
                bus,
                SCREEN_CAST,
                "/org/gnome/Mutter/ScreenCast",
                SCREEN_CAST,
                "CreateSession",
                "a{sv}",
                (linked,),
            )
            hidden = {"cursor-mode": Variant("u", 0)}  # no pointer painted into frames
            if target == "window":
                (stream,) = await _call(
                    bus,
                    SCREEN_CAST,
                    cast,
                    f"{SCREEN_CAST}.Session",
                    "RecordWindow",
                    "a{sv}",
                    (hidden,),
                )
            else:
                (stream,) = await _call(
                    bus,
                    SCREEN_CAST,
                    cast,
                    f"{SCREEN_CAST}.Session",
                    "RecordMonitor",
                    "sa{sv}",
                    ("", hidden),
                )
            node = await _started_node(bus, remote, str(stream))
            frames = FrameStream(node, size, env)
        except BaseException:
            bus.disconnect()
            raise
        return cls(bus, str(remote), str(stream), frames)

    async def frame(self, *, after: int = 0) -> bytes:
        """The stream's last frame as PNG bytes (RGBA), once more than ``after`` frames
        came (``self.frames.count`` before an action: the picture after it)."""
        return await asyncio.to_thread(self.frames.png, after=after)

    async def move(self, x: float, y: float) -> None:
        """The pointer to (x, y) of the stream."""
        if not self._pointer_ready:  # the session's first event makes its device
            await self._send("NotifyPointerMotionAbsolute", "sdd", (self.stream, x, y))
            await asyncio.sleep(DEVICE_READY_S)
            self._pointer_ready = True
        await self._send("NotifyPointerMotionAbsolute", "sdd", (self.stream, x, y))

    async def click(self, x: float, y: float, button: str = "left", count: int = 1) -> None:
        """A click (``count`` presses) of ``button`` at (x, y) of the stream."""
        code = BUTTONS.get(button)
        if code is None:
            raise DeskpilotError(ErrorCode.INVALID_REQUEST, f"unknown button {button!r}")
        await self.move(x, y)
        for _ in range(count):
            await self._send("NotifyPointerButton", "ib", (code, True))
            await self._send("NotifyPointerButton", "ib", (code, False))

    async def keysyms(self, syms: Sequence[int]) -> None:
        """A chord: every keysym pressed in order, then released in reverse."""
        if not self._keyboard_ready:  # the session's first key event makes its keyboard
            await self._send("NotifyKeyboardKeysym", "ub", (SHIFT_L, True))
            await self._send("NotifyKeyboardKeysym", "ub", (SHIFT_L, False))
            await asyncio.sleep(DEVICE_READY_S)
            self._keyboard_ready = True
        for sym in syms:
            await self._send("NotifyKeyboardKeysym", "ub", (sym, True))
        for sym in reversed(syms):
            await self._send("NotifyKeyboardKeysym", "ub", (sym, False))

    async def type_text(self, text: str) -> None:
        """Each character as its keysym (inside Shift where a US layout needs it)."""
        for ch in text:
            sym = keysym_of(ch)
            await self.keysyms([SHIFT_L, sym] if ch in _SHIFTED else [sym])

    async def close(self) -> None:
        """Stop the session (its stream ends with it) and drop the bus connection."""
        if self._closed:
            return
        self._closed = True
        await asyncio.to_thread(self.frames.close)
        try:
            await _call(
                self._bus, REMOTE_DESKTOP, self._remote, f"{REMOTE_DESKTOP}.Session", "Stop"
            )
        except DeskpilotError:
            pass  # already stopped (Mutter went, or ended it)
        finally:
            self._bus.disconnect()

    async def __aenter__(self) -> MutterSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _send(self, member: str, signature: str, body: tuple[Any, ...]) -> None:
        """One input event, at least ``EVENT_GAP_S`` after the one before (no pause after
        the last: the caller's next step does not wait for nothing)."""
        wait = self._last_event + EVENT_GAP_S - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        await _call(
            self._bus,
            REMOTE_DESKTOP,
            self._remote,
            f"{REMOTE_DESKTOP}.Session",
            member,
            signature,
            body,
        )
        self._last_event = time.monotonic()


async def _started_node(bus: MessageBus, remote: str, stream: str) -> int:
    """Start the session and wait for the stream's PipeWire node id
    (``PipeWireStreamAdded``, sent once the session started)."""
    loop = asyncio.get_running_loop()
    node: asyncio.Future[int] = loop.create_future()

    def on_signal(msg: Message) -> None:
        if msg.member == "PipeWireStreamAdded" and msg.path == stream and not node.done():
            node.set_result(int(msg.body[0]))

    bus.add_message_handler(on_signal)
    try:
        await _call(
            bus,
            "org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus",
            "AddMatch",
            "s",
            (f"type='signal',path='{stream}'",),
        )
        await _call(bus, REMOTE_DESKTOP, remote, f"{REMOTE_DESKTOP}.Session", "Start")
        try:
            return await asyncio.wait_for(node, NODE_TIMEOUT_S)
        except TimeoutError:
            raise DeskpilotError(
                ErrorCode.CAPTURE_FAILED,
                f"Mutter named no PipeWire node for its stream within {NODE_TIMEOUT_S:g} s "
                "(is pipewire running on the desktop's session?)",
                retryable=True,
            ) from None
    finally:
        bus.remove_message_handler(on_signal)


async def _call(
    bus: MessageBus,
    dest: str,
    path: str,
    iface: str,
    member: str,
    signature: str = "",
    body: tuple[Any, ...] = (),
) -> list[Any]:
    reply = await bus.call(
        Message(
            destination=dest,
            path=path,
            interface=iface,
            member=member,
            signature=signature,
            body=list(body),
        )
    )
    if reply is None or reply.message_type == MessageType.ERROR:
        why = f"{reply.error_name}: {reply.body}" if reply is not None else "no reply"
        raise DeskpilotError(ErrorCode.ENVIRONMENT_UNAVAILABLE, f"Mutter refused {member}: {why}")
    return list(reply.body)
