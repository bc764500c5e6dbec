"""The top-level frames of the apps (windows, dialogs): where a window's tree starts.

The host matches an X window to the frame of its pid by title and extents
(docs/host.md, "Observe"), so each app's children are read with exactly those four
questions — role, name, state, extents — in one batch per app, all apps at once.
"""

from __future__ import annotations

import asyncio
from typing import Any

from deskpilot.host.atspi.apps import Applications
from deskpilot.host.atspi.bus import (
    I_ACCESSIBLE,
    I_COMPONENT,
    I_PROPERTIES,
    AtspiCallError,
    Conn,
)
from deskpilot.host.atspi.model import AppInfo, FrameInfo, NodeRef
from deskpilot.host.atspi.vocab import (
    ROLE_NUMBER,
    rendered_role,
    role_name,
    state_mask,
    state_names,
    window_role,
)
from deskpilot.protocol.wire import Rect

R_TOOL_TIP = ROLE_NUMBER["tool tip"]


class FrameLookup:
    """Lists frames over the accessibility bus, of the apps ``apps`` knows."""

    def __init__(self, bus: Conn, apps: Applications) -> None:
        self._bus = bus
        self._apps = apps

    async def frames(self, pid: int | None = None) -> list[FrameInfo]:
        """Top-level frames/windows/dialogs of every app (or of one process)."""
        apps = await self._apps.applications(pid)
        if pid is not None:
            apps = [a for a in apps if a.pid == pid]
        per_app = await asyncio.gather(*(self._frames_of(a) for a in apps))
        return [f for fs in per_app for f in fs]

    async def answering(self, wait_s: float) -> list[FrameInfo]:
        """The top-level frames of the apps that answer within ``wait_s`` of this call; an
        app that does not (stopped, hung) is left out instead of holding the others up."""
        loop = asyncio.get_running_loop()
        end = loop.time() + wait_s
        statuses = await self._apps.statuses(wait_s)
        reads = [
            asyncio.ensure_future(self._frames_of(s.info))
            for s in statuses
            if s.silent_ms is None and s.info is not None
        ]
        if not reads:
            return []
        done, pending = await asyncio.wait(reads, timeout=max(0.0, end - loop.time()))
        for read in pending:
            read.cancel()
        return [f for read in done if read.exception() is None for f in read.result()]

    async def _frames_of(self, app: AppInfo) -> list[FrameInfo]:
        try:
            body = await self._bus.call(app.bus_name, app.path, I_ACCESSIBLE, "GetChildren")
        except AtspiCallError:
            return []
        return await self.describe(app, [(str(b) or app.bus_name, str(p)) for b, p in body[0]])

    async def describe(self, app: AppInfo, refs: list[tuple[str, str]]) -> list[FrameInfo]:
        """These objects of ``app`` as frames (role, name, state, extents), in one batch;
        one that does not answer is left out. A GTK 2 app's tooltips are left out too,
        before their name is asked (see :func:`_without_gtk2_tooltips`)."""
        if app.gtk2 and refs:
            refs = await self._without_gtk2_tooltips(refs)
        calls: list[Any] = []
        for b, p in refs:
            calls += [
                (b, p, I_ACCESSIBLE, "GetRole", "", ()),
                (b, p, I_PROPERTIES, "Get", "ss", (I_ACCESSIBLE, "Name")),
                (b, p, I_ACCESSIBLE, "GetState", "", ()),
                (b, p, I_COMPONENT, "GetExtents", "u", (0,)),
            ]
        res = await self._bus.batch(calls)
        out: list[FrameInfo] = []
        for k, (b, p) in enumerate(refs):
            frame = _frame(app, NodeRef(b, p), res[4 * k : 4 * k + 4])
            if frame is not None:
                out.append(frame)
        return out

    async def _without_gtk2_tooltips(self, refs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """``refs`` without the tooltip windows. GTK 2's gail answers the name of a tooltip it
        does not recognise (GIMP's own) with a ``g_message``, and GIMP shows every message
        as a "GIMP Message" dialog: asking a tooltip's name opened a dialog in front of the
        window whenever the pointer rested on a button. A tooltip is no window to observe,
        and a popup only while the pointer rests, so it is not read at all."""
        roles = await self._bus.batch([(b, p, I_ACCESSIBLE, "GetRole", "", ()) for b, p in refs])
        return [
            ref
            for ref, role in zip(refs, roles, strict=True)
            if isinstance(role, AtspiCallError) or int(role[0]) != R_TOOL_TIP
        ]


def _frame(app: AppInfo, ref: NodeRef, replies: list[Any]) -> FrameInfo | None:
    """The frame from the replies about one child of the app; None when it did not answer.

    Every child of an application is one of its top-level windows, whatever role it gives:
    GTK and Chromium say frame, window or dialog, but a Qt top-level that is a plain
    ``QWidget`` says filler. Matching by title and extents picks the one an X window is."""
    role, name, st, ext = replies
    if isinstance(role, AtspiCallError):
        return None
    extents = None
    if not isinstance(ext, AtspiCallError):
        x, y, w, h = ext[0]
        extents = Rect(x=int(x), y=int(y), width=int(w), height=int(h))
    return FrameInfo(
        ref=ref,
        pid=app.pid,
        app_name=app.name,
        title="" if isinstance(name, AtspiCallError) else str(name[0].value),
        role=rendered_role(window_role(int(role[0]))),
        atspi_role=role_name(int(role[0])),
        extents=extents,
        states=state_names(0 if isinstance(st, AtspiCallError) else state_mask(st[0])),
    )
