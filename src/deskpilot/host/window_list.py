"""The desktop's top-level windows as the protocol describes them (``WindowInfo``).

Two callers: ``list_windows`` (with the AT-SPI application names, bounded in time) and an
action's post-action state, which carries the listing so the caller learns about a dialog or
a new window the action opened without a second round trip. That one skips the names: they
only label windows, and the action path is latency-bound.
"""

from __future__ import annotations

import asyncio

from deskpilot.host.accessibility import Accessibility
from deskpilot.host.x11.desktop import X11Desktop
from deskpilot.protocol.wire import WindowInfo

APP_NAME_TIMEOUT_S = 0.5


async def window_infos(
    desktop: X11Desktop, accessibility: Accessibility | None, *, app_names: bool = True
) -> tuple[list[WindowInfo], bool]:
    """The windows (topmost first) and whether the window manager speaks EWMH."""
    windows, ewmh = desktop.windows()
    if accessibility is not None:
        await accessibility.fill_missing_pids(windows)
        if app_names:
            try:
                names = await asyncio.wait_for(accessibility.app_names(), APP_NAME_TIMEOUT_S)
            except TimeoutError:
                names = {}
            for w in windows:
                if w.pid is not None and w.pid in names:
                    w.app_name = names[w.pid]
    return [w.info() for w in windows], ewmh
