"""The banners every dashboard page shows on top: a kill-switch halt (its cause in words, when,
and an Unhalt button) and a held takeover (who holds the desktop, since when).

Both are read from the database (``halts``, ``takeovers``) on every render and by the
``/events`` poller (oversight/events.py), so a kill-switch press in any deskpilot process on
this data dir shows here, and a halt lifted from a terminal disappears here. The sentences
are built here, in the reader's language, so the server-rendered banner and the one app.js
inserts live say exactly the same thing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from deskpilot.kernel.halt import KILL_SWITCH, Halt
from deskpilot.kernel.takeover import Takeover, TakeoverRow
from deskpilot.oversight.i18n import translate
from deskpilot.store.db import Database
from deskpilot.store.halts import HaltRow
from deskpilot.store.settings import Settings


def clock(ts: float, now: float | None = None) -> str:
    """A local time: ``HH:MM:SS`` today, with the date otherwise."""
    current = time.localtime(now if now is not None else time.time())
    then = time.localtime(ts)
    if then[:3] == current[:3]:
        return time.strftime("%H:%M:%S", then)
    return time.strftime("%Y-%m-%d %H:%M:%S", then)


def halt_cause(reason: str, locale: str) -> str:
    """A halt's reason code in words (``kill_switch`` is the only one the kernel writes
    today; any other is shown as it is)."""
    if reason == KILL_SWITCH:
        return translate("readiness.halt.cause.kill_switch", locale)
    return reason


def halt_text(halt: HaltRow, chord: str, locale: str) -> str:
    """The banner's sentence for an engaged halt."""
    when = clock(halt.engaged_at)
    if halt.reason == KILL_SWITCH:
        return translate(
            "readiness.halt.kill_switch", locale, chord=chord or "global hot key", when=when
        )
    return translate("readiness.halt.other", locale, when=when, cause=halt.reason)


def takeover_text(hold: TakeoverRow, locale: str) -> str:
    return translate(
        "readiness.takeover.banner", locale, by=hold.held_by, when=clock(hold.started_at)
    )


@dataclass(frozen=True)
class Banner:
    halted: bool
    #: the reason code and its words, the local time it was engaged, the whole sentence
    halt_code: str = ""
    halt_reason: str = ""
    halt_since: str = ""
    halt_text: str = ""
    taken_over: bool = False
    takeover_text: str = ""
    takeover_session: str = ""

    def halt_json(self) -> dict[str, Any] | None:
        if not self.halted:
            return None
        return {"cause": self.halt_code, "since": self.halt_since, "text": self.halt_text}

    def takeover_json(self) -> dict[str, Any] | None:
        if not self.taken_over:
            return None
        return {"sessionId": self.takeover_session, "text": self.takeover_text}


def compose(halt: HaltRow | None, hold: TakeoverRow | None, chord: str, locale: str) -> Banner:
    """The banner for rows already read (the poller reads them once for every browser)."""
    fields: dict[str, Any] = {"halted": halt is not None}
    if halt is not None:
        fields.update(
            halt_code=halt.reason,
            halt_reason=halt_cause(halt.reason, locale),
            halt_since=clock(halt.engaged_at),
            halt_text=halt_text(halt, chord, locale),
        )
    if hold is not None:
        fields.update(
            taken_over=True,
            takeover_text=takeover_text(hold, locale),
            takeover_session=hold.session_id,
        )
    return Banner(**fields)


def banner(db: Database, locale: str) -> Banner:
    """Read the halt and the takeover hold now and say them in ``locale``."""
    halt = Halt(db).active()
    hold = Takeover(db).active()
    chord = Settings.load(db).kill_switch if halt is not None else ""
    return compose(halt, hold, chord, locale)
