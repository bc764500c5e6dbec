"""The banner every dashboard page shows on top: a kill-switch halt (cause, when, Unhalt) and
a held takeover. Read from the database on each render, so it is right in any process."""

from __future__ import annotations

import time
from dataclasses import dataclass

from deskpilot.kernel.halt import Halt
from deskpilot.store.db import Database


@dataclass(frozen=True)
class Banner:
    halted: bool
    halt_reason: str = ""
    halt_since: str = ""


def _clock(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def banner(db: Database, locale: str) -> Banner:
    active = Halt(db).active()
    if active is None:
        return Banner(halted=False)
    return Banner(halted=True, halt_reason=active.reason, halt_since=_clock(active.engaged_at))
