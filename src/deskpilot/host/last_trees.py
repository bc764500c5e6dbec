"""The last complete tree read of each window: what the host answers with when its app does not.

An app that is stopped (SIGSTOP, a debugger), deadlocked or busy for seconds answers no
accessibility call, so a read of its tree can only time out. Rather than "no tree", the host
then hands out the last tree it read completely of that window, with its age
(``TreeRead.stale_age_ms``): the same text and tree version, never acted on by element id
(host/action_checks.py), but enough for an agent to see what the window held and to act on
points of the fresh screenshot.

This is not the event-driven cache (host/atspi/tree_cache.py, which re-reads what changed in an
app that answers): it holds one finished read per window, bounded to ``MAX_WINDOWS`` windows,
least recently read dropped first. A window is known by its X id *and* its pid, so a reused
X id never shows another process's tree.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Final

from deskpilot.host.atspi.model import FrameInfo, TreeSnapshot

MAX_WINDOWS: Final = 32


@dataclass(frozen=True, slots=True)
class LastTree:
    """One window's last complete read, and when (``time.monotonic()``) it was taken."""

    pid: int | None
    snapshot: TreeSnapshot
    frame: FrameInfo
    read_at: float

    def age_ms(self, now: float | None = None) -> float:
        return ((time.monotonic() if now is None else now) - self.read_at) * 1000


class LastTrees:
    """The last complete tree of up to ``MAX_WINDOWS`` windows, by X window id."""

    def __init__(self, max_windows: int = MAX_WINDOWS) -> None:
        self._max = max_windows
        self._trees: OrderedDict[int, LastTree] = OrderedDict()

    def __len__(self) -> int:
        return len(self._trees)

    def remember(self, xid: int, pid: int | None, snapshot: TreeSnapshot, frame: FrameInfo) -> None:
        """Keep ``snapshot`` as the window's last tree; a partial one is never kept (it
        would stand for a complete read later)."""
        if snapshot.partial is not None:
            return
        self._trees.pop(xid, None)
        self._trees[xid] = LastTree(pid, snapshot, frame, time.monotonic())
        while len(self._trees) > self._max:
            self._trees.popitem(last=False)

    def last(self, xid: int, pid: int | None) -> LastTree | None:
        """The window's last tree, if it was read of the same process (a window whose pid
        is unknown matches nothing: a reused X id could be another process's window)."""
        known = self._trees.get(xid)
        if known is None or pid is None or known.pid != pid:
            return None
        return known

    def forget(self, xid: int) -> None:
        self._trees.pop(xid, None)
