"""The desktop's top-level windows as the protocol describes them (``WindowInfo``).

Two callers: ``list_windows`` (with the AT-SPI application names, bounded in time) and an
action's post-action state, which carries the listing so the caller learns about a dialog or
a new window the action opened without a second round trip. That one skips the names: they
only label windows, and the action path is latency-bound.

Everything but the names comes from the X server, which answers for a stopped app as for any
other. The names come from the apps themselves, each asked on its own and bounded
(atspi/apps.py ``statuses``): an app that does not answer — stopped, deadlocked — is listed
with the name it was last known by and ``appUnresponsiveMs``, and holds up neither the
listing (past the bound, once) nor the other apps' names. A window whose last tree read
missed its deadline (the app answers, but too slowly for all of its tree) is listed with
``treeDeadlineMissedMs``.
"""

from __future__ import annotations

from deskpilot.host.accessibility import Accessibility, host_tree_deadline_s
from deskpilot.host.x11.desktop import X11Desktop
from deskpilot.protocol.wire import WindowInfo

#: the longest a listing waits for an app's answer (less when the host's tree deadline,
#: ``DESKPILOT_TREE_DEADLINE_MS``, is shorter): names only label windows
APP_NAME_TIMEOUT_S = 0.5


def app_wait_s() -> float:
    """How long a listing waits for the apps' answers."""
    return min(APP_NAME_TIMEOUT_S, host_tree_deadline_s())


async def window_infos(
    desktop: X11Desktop, accessibility: Accessibility | None, *, app_names: bool = True
) -> tuple[list[WindowInfo], bool]:
    """The windows (topmost first) and whether the window manager speaks EWMH."""
    windows, ewmh = desktop.windows()
    if accessibility is None:
        return [w.info() for w in windows], ewmh
    wait_s = app_wait_s()
    await accessibility.fill_missing_pids(windows, timeout=wait_s)
    if not app_names:
        return [w.info() for w in windows], ewmh
    statuses = await accessibility.app_statuses(wait_s)
    infos: list[WindowInfo] = []
    for w in windows:
        status = statuses.get(w.pid) if w.pid is not None else None
        if status is not None and status.info is not None:
            w.app_name = status.info.name or w.app_name
        info = w.info()
        if status is not None:
            info.app_unresponsive_ms = status.silent_ms
        info.tree_deadline_missed_ms = accessibility.missed_deadlines.get(w.xid)
        infos.append(info)
    return infos, ewmh
