"""The naive baseline: walk an accessible tree one D-Bus call after another.

Per node it reads what OSWorld's desktop_env accessibility-tree getter reads through pyatspi
(role name, name, states, attributes, the interface list behind each ``queryX``, screen
position and size, text, the four Value properties, action count and each action's name) and
then the children — every call awaited before the next, through the bus daemon, the way a
synchronous pyatspi client does it. Its output is a simple indented line per node; what
matters is the time.

Run alone: ``.venv/bin/python benchmarks/baseline_walker.py APP_NAME`` on a desktop whose
DISPLAY / DBUS_SESSION_BUS_ADDRESS are in the environment.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from dbus_fast import Message, MessageType, Variant
from dbus_fast.aio import MessageBus

ACC = "org.a11y.atspi.Accessible"
PROPS = "org.freedesktop.DBus.Properties"


class Walker:
    def __init__(self, bus: MessageBus) -> None:
        self.bus = bus
        self.calls = 0

    async def call(
        self,
        dest: str,
        path: str,
        iface: str,
        member: str,
        sig: str = "",
        body: tuple[Any, ...] = (),
    ) -> Any:
        self.calls += 1
        reply = await self.bus.call(
            Message(
                destination=dest,
                path=path,
                interface=iface,
                member=member,
                signature=sig,
                body=list(body),
            )
        )
        if reply is None or reply.message_type == MessageType.ERROR:
            return None
        return reply.body

    async def prop(self, dest: str, path: str, iface: str, name: str) -> Any:
        body = await self.call(dest, path, PROPS, "Get", "ss", (iface, name))
        if body is None:
            return None
        v = body[0]
        return v.value if isinstance(v, Variant) else v

    async def node(self, dest: str, path: str, depth: int, out: list[str], limit: int) -> None:
        if len(out) >= limit:
            return
        role = await self.call(dest, path, ACC, "GetRoleName")
        name = await self.prop(dest, path, ACC, "Name")
        await self.call(dest, path, ACC, "GetState")
        await self.call(dest, path, ACC, "GetAttributes")
        ifaces_body = await self.call(dest, path, ACC, "GetInterfaces")
        ifaces = set(ifaces_body[0]) if ifaces_body else set()
        extra: list[str] = []
        if "org.a11y.atspi.Component" in ifaces:
            pos = await self.call(dest, path, "org.a11y.atspi.Component", "GetPosition", "u", (0,))
            size = await self.call(dest, path, "org.a11y.atspi.Component", "GetSize")
            if pos and size:
                extra.append(f"@{pos[0]},{pos[1]} {size[0]}x{size[1]}")
        if "org.a11y.atspi.Text" in ifaces:
            count = await self.prop(dest, path, "org.a11y.atspi.Text", "CharacterCount")
            if count:
                text = await self.call(
                    dest, path, "org.a11y.atspi.Text", "GetText", "ii", (0, int(count))
                )
                if text:
                    extra.append(f"text={str(text[0])[:40]!r}")
        if "org.a11y.atspi.Value" in ifaces:
            for p in ("CurrentValue", "MinimumValue", "MaximumValue", "MinimumIncrement"):
                await self.prop(dest, path, "org.a11y.atspi.Value", p)
        if "org.a11y.atspi.Action" in ifaces:
            n = await self.prop(dest, path, "org.a11y.atspi.Action", "NActions") or 0
            names = []
            for i in range(int(n)):
                r = await self.call(dest, path, "org.a11y.atspi.Action", "GetName", "i", (i,))
                if r:
                    names.append(str(r[0]))
            if names:
                extra.append("actions=" + ",".join(names))
        out.append(f"{'  ' * depth}{role[0] if role else '?'} {name!r} {' '.join(extra)}")
        children = await self.call(dest, path, ACC, "GetChildren")
        for cdest, cpath in children[0] if children else []:
            await self.node(cdest or dest, cpath, depth + 1, out, limit)


async def walk(bus: MessageBus, dest: str, path: str, limit: int = 100_000) -> tuple[str, int, int]:
    """(text, nodes, D-Bus calls) for the subtree at ``path``."""
    w = Walker(bus)
    out: list[str] = []
    await w.node(dest, path, 0, out, limit)
    return "\n".join(out), len(out), w.calls


async def _main(app_name: str) -> None:
    session = await MessageBus().connect()
    reply = await session.call(
        Message(
            destination="org.a11y.Bus",
            path="/org/a11y/bus",
            interface="org.a11y.Bus",
            member="GetAddress",
        )
    )
    assert reply is not None
    bus = await MessageBus(bus_address=str(reply.body[0])).connect()
    w = Walker(bus)
    apps = await w.call(
        "org.a11y.atspi.Registry", "/org/a11y/atspi/accessible/root", ACC, "GetChildren"
    )
    for dest, path in apps[0] if apps else []:
        if await w.prop(dest, path, ACC, "Name") == app_name:
            t = time.perf_counter()
            text, nodes, calls = await walk(bus, dest, path)
            ms = (time.perf_counter() - t) * 1000
            print(text)
            print(f"# {nodes} nodes, {calls} calls, {ms:.0f} ms", file=sys.stderr)
            return
    print(f"no application named {app_name!r}", file=sys.stderr)


if __name__ == "__main__":
    asyncio.run(_main(sys.argv[1] if len(sys.argv) > 1 else "gnome-calculator"))
