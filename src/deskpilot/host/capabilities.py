"""What this desktop lets the host do, found by trying it, not by reading configuration.

X11 has no per-app permission prompts, so "granted" means the host actually did the thing:
a round trip on its X connection (screen), a working XTEST extension (input), a reply from the
AT-SPI registry (accessibility). The other states say why not:

- ``unsupported``: the platform lacks the mechanism (Wayland with no X server, an X server
  without XTEST, no AT-SPI bus launcher on the session bus);
- ``denied``: the mechanism exists and refused us (X authorization failure, a D-Bus
  AccessDenied);
- ``restricted``: we are connected but limited (an untrusted X client under the SECURITY
  extension cannot use XTEST or read other windows);
- ``not_determined``: the probe could not reach anything to ask (no DISPLAY, no session bus).
"""

from __future__ import annotations

import asyncio
import os
import platform
from dataclasses import dataclass, field

from dbus_fast import BusType, Message, MessageType, Variant
from dbus_fast.aio import MessageBus

from deskpilot.host.x11.connection import XConnection, is_wayland_only
from deskpilot.protocol.wire import Backends, PermissionState

A11Y_PROBE_TIMEOUT_S = 1.5

WAYLAND_REASON = (
    "Wayland session without an X server: screen capture and input need the "
    "xdg-desktop-portal backend, which this host does not implement yet; run the app under "
    "Xwayland or an X11 session, or use a private desktop (deskpilot desktop up)"
)


@dataclass(slots=True)
class Probe:
    session_type: str
    screen: PermissionState
    accessibility: PermissionState
    input: PermissionState
    reasons: list[str] = field(default_factory=list)
    shm: bool = False
    ewmh: bool = False

    @property
    def available(self) -> bool:
        return self.screen is PermissionState.GRANTED and self.input is PermissionState.GRANTED

    @property
    def backends(self) -> Backends:
        granted = PermissionState.GRANTED
        return Backends(
            screen="x11" if self.screen is granted else "none",
            accessibility="at_spi" if self.accessibility is granted else "none",
            input="xtest" if self.input is granted else "none",
        )

    @property
    def reason(self) -> str | None:
        return "; ".join(self.reasons) if self.reasons else None


def session_type() -> str:
    declared = os.environ.get("XDG_SESSION_TYPE", "").lower()
    if is_wayland_only():
        return "wayland"
    if os.environ.get("DISPLAY"):
        return "x11"
    return declared if declared in ("x11", "wayland") else "unknown"


def probe_x(conn: XConnection | None, connect_error: str | None) -> tuple[PermissionState, ...]:
    """(screen, input) states from the host's X connection (or why it could not open)."""
    if conn is None:
        text = (connect_error or "").lower()
        if "author" in text or "protocol specified" in text:
            return PermissionState.DENIED, PermissionState.DENIED
        return PermissionState.NOT_DETERMINED, PermissionState.NOT_DETERMINED
    try:
        conn.display.get_input_focus()  # one round trip: the server is still there
    except Exception:
        return PermissionState.NOT_DETERMINED, PermissionState.NOT_DETERMINED
    screen = PermissionState.GRANTED
    if not conn.extensions.xtest:
        return screen, PermissionState.UNSUPPORTED
    try:
        conn.display.xtest_get_version(2, 2)
    except Exception:
        return screen, PermissionState.RESTRICTED
    return screen, PermissionState.GRANTED


async def _a11y_call(bus: MessageBus, msg: Message) -> Message:
    reply = await bus.call(msg)
    if reply is None:
        raise RuntimeError("no reply")
    return reply


async def probe_accessibility(session_address: str | None = None) -> tuple[PermissionState, str]:
    """Ask the session bus for the AT-SPI bus and the registry for its applications."""
    address = session_address or os.environ.get("DBUS_SESSION_BUS_ADDRESS")
    if not address:
        return PermissionState.NOT_DETERMINED, "no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS)"
    try:
        session = await asyncio.wait_for(
            MessageBus(bus_address=address).connect(), A11Y_PROBE_TIMEOUT_S
        )
    except Exception as exc:
        return PermissionState.NOT_DETERMINED, f"cannot reach the D-Bus session bus: {exc}"
    try:
        reply = await asyncio.wait_for(
            _a11y_call(
                session,
                Message(
                    destination="org.a11y.Bus",
                    path="/org/a11y/bus",
                    interface="org.a11y.Bus",
                    member="GetAddress",
                ),
            ),
            A11Y_PROBE_TIMEOUT_S,
        )
    except Exception as exc:
        return PermissionState.NOT_DETERMINED, f"AT-SPI bus query failed: {exc}"
    finally:
        session.disconnect()
    if reply.message_type == MessageType.ERROR:
        if reply.error_name and "AccessDenied" in reply.error_name:
            return PermissionState.DENIED, "the session bus denied access to org.a11y.Bus"
        return PermissionState.UNSUPPORTED, (
            f"no AT-SPI bus launcher on the session bus ({reply.error_name}); install at-spi2-core"
        )
    try:
        a11y = await asyncio.wait_for(
            MessageBus(bus_address=str(reply.body[0])).connect(), A11Y_PROBE_TIMEOUT_S
        )
    except Exception as exc:
        return PermissionState.NOT_DETERMINED, f"cannot connect to the AT-SPI bus: {exc}"
    try:
        reg = await asyncio.wait_for(
            _a11y_call(
                a11y,
                Message(
                    destination="org.a11y.atspi.Registry",
                    path="/org/a11y/atspi/accessible/root",
                    interface="org.a11y.atspi.Accessible",
                    member="GetChildren",
                ),
            ),
            A11Y_PROBE_TIMEOUT_S,
        )
    except Exception as exc:
        return PermissionState.NOT_DETERMINED, f"the AT-SPI registry did not answer: {exc}"
    finally:
        a11y.disconnect()
    if reg.message_type == MessageType.ERROR:
        if reg.error_name and "AccessDenied" in reg.error_name:
            return PermissionState.DENIED, "the AT-SPI bus denied access to the registry"
        return PermissionState.RESTRICTED, f"the AT-SPI registry refused: {reg.error_name}"
    return PermissionState.GRANTED, ""


async def enable_accessibility(session_address: str | None = None) -> bool:
    """Set ``org.a11y.Status.IsEnabled`` so Chromium/Electron/Qt build their trees."""
    try:
        if session_address:
            bus = await MessageBus(bus_address=session_address).connect()
        else:
            bus = await MessageBus(bus_type=BusType.SESSION).connect()
    except Exception:
        return False
    try:
        reply = await asyncio.wait_for(
            bus.call(
                Message(
                    destination="org.a11y.Bus",
                    path="/org/a11y/bus",
                    interface="org.freedesktop.DBus.Properties",
                    member="Set",
                    signature="ssv",
                    body=["org.a11y.Status", "IsEnabled", Variant("b", True)],
                )
            ),
            A11Y_PROBE_TIMEOUT_S,
        )
        return reply is not None and reply.message_type != MessageType.ERROR
    except Exception:
        return False
    finally:
        bus.disconnect()


async def probe(conn: XConnection | None, connect_error: str | None) -> Probe:
    kind = session_type()
    if platform.system() != "Linux":
        unsupported = PermissionState.UNSUPPORTED
        return Probe(kind, unsupported, unsupported, unsupported, ["not a Linux system"])
    if conn is None and is_wayland_only():
        unsupported = PermissionState.UNSUPPORTED
        a11y, a11y_reason = await probe_accessibility()
        wayland_reasons = [WAYLAND_REASON]
        if a11y is not PermissionState.GRANTED and a11y_reason:
            wayland_reasons.append(a11y_reason)
        return Probe(kind, unsupported, a11y, unsupported, wayland_reasons)
    screen, input_state = probe_x(conn, connect_error)
    reasons: list[str] = []
    if conn is None:
        reasons.append(connect_error or "no X server")
    elif input_state is PermissionState.UNSUPPORTED:
        reasons.append("the X server does not offer the XTEST extension")
    elif input_state is PermissionState.RESTRICTED:
        reasons.append("XTEST is refused to this client (untrusted X connection)")
    a11y, a11y_reason = await probe_accessibility()
    if a11y_reason:
        reasons.append(a11y_reason)
    result = Probe(kind, screen, a11y, input_state, reasons)
    if conn is not None:
        result.shm = conn.extensions.shm
    return result
