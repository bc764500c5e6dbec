"""The ``remote`` setting's reader: what a dashboard browser on another machine may do.

A request whose peer address is loopback comes from this machine and may do everything the
dashboard offers. Any other peer (``deskpilot ui --bind ADDRESS``, e.g. a LAN address) gets
exactly what ``remote`` allows, read on every request so a change applies at once:

* ``observe`` — every page that only shows (live view, sessions, timelines, readiness,
  confirmations list, error codes); off, even looking is refused;
* ``approveL2`` — approve/deny confirmations of actions rated L2 or lower (needs observe);
  L3 and L4 confirmations are answered only from this machine;
* ``control`` — pause, take over, hand back, stop, change window (needs observe).

Changing settings and lifting a halt are never remote.
"""

from __future__ import annotations

import ipaddress
from typing import Literal

from deskpilot.store.settings import RemoteAccess

Capability = Literal["observe", "approve", "control", "local"]


def is_loopback(peer: str | None) -> bool:
    """True for 127.0.0.0/8, ::1 and v4-mapped loopback; False for anything unparsable."""
    if not peer:
        return False
    try:
        address = ipaddress.ip_address(peer)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def refusal(
    remote: RemoteAccess, peer: str | None, capability: Capability, *, risk: int | None = None
) -> str | None:
    """None when ``peer`` may use ``capability``; else the setting that forbids it (the
    dashboard shows it in its 403 page). ``risk`` is the confirmation's level for approve."""
    if is_loopback(peer):
        return None
    if capability == "local":
        return "local_only"
    if not remote.observe:
        return "remote.observe"
    if capability == "observe":
        return None
    if capability == "approve":
        if not remote.approve_l2:
            return "remote.approveL2"
        if risk is None or risk > 2:
            return "local_only"
        return None
    if capability == "control":
        return None if remote.control else "remote.control"
    return "local_only"
