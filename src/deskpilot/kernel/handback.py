"""What the agent is told when the person hands the desktop back.

When a takeover begins the kernel keeps, in the owning process's memory only (a tree's
text may hold private UI text, so it never goes to the database), a summary of the session's
last observation: app, window, title, treeVersion and the rendered tree lines
(``FrameSummary``). When the person hands back, the pending hand back (``HandBackStart``) is
picked up once by whoever drives the session next — the MCP ``resume`` that ended it, the
agent's next tool result after a hand back from the dashboard, or a delegated task's
operator on its first decision — who observes again and builds the note with :func:`build`:
how long the person held the desktop, what changed in the window (app, title, treeVersion)
and a bounded diff of the tree lines (at most ``MAX_CHANGED`` lines, each at most
``MAX_LINE_CHARS`` characters; element ids are left out: the note says what the person
changed, and an id tells the agent nothing a fresh state does not). Secure values are
blanked by the host already; a secure line's value is dropped here as well.

``HandBacks`` is the kernel's memory of these (kernel/broker/controls.py fills it).
"""

from __future__ import annotations

import difflib
import re
import time
from dataclasses import dataclass, field
from typing import Any

from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.wire import ObservationBody

MAX_CHANGED = 12
MAX_LINE_CHARS = 120
#: the element id a rendered line ends with (`` [17]``)
_ID = re.compile(r"\s*\[\d+\]\s*$")
_VALUE = re.compile(r'\s=\s"(?:[^"\\]|\\.)*"')
_SECURE = ("[secure]", "passwordfield", "password text")


@dataclass(frozen=True, slots=True)
class FrameSummary:
    app: str
    pid: int | None
    window_id: str
    title: str
    tree_version: str
    lines: tuple[str, ...]

    @classmethod
    def of(cls, obs: ObservationBody) -> FrameSummary:
        ident = obs.app
        app = ident.name or ident.executable or ident.wm_class or ident.desktop_id or "unknown"
        return cls(
            app=app,
            pid=ident.pid,
            window_id=obs.window.window_id,
            title=obs.window.title,
            tree_version=obs.tree_version,
            lines=tree_lines(obs.tree),
        )


def tree_lines(tree: str) -> tuple[str, ...]:
    """The rendered tree as comparable lines: no indentation, no bullet, no element id, and
    no value on a secure line."""
    out: list[str] = []
    for raw in tree.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("- "):
            line = line[2:]
        line = _ID.sub("", line)
        if any(mark in line.lower() for mark in _SECURE):
            line = _VALUE.sub("", line)
        out.append(line)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class HandBackStart:
    """A hand back waiting for its note: what the window looked like when the person took
    over (None when the session had no observation then), who held it, from when to when."""

    session_id: str
    by: str
    started_at: float
    ended_at: float
    before: FrameSummary | None
    ended_by: str | None = None

    @property
    def held_for_s(self) -> float:
        return max(0.0, self.ended_at - self.started_at)


@dataclass(frozen=True, slots=True)
class HandBack:
    held_for_s: float
    by: str
    changed: tuple[str, ...]
    note: str
    tree_version_changed: bool | None
    window_changed: bool | None
    more_changes: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "heldForSeconds": round(self.held_for_s, 1),
            "by": self.by,
            "changed": list(self.changed),
            "moreChanges": self.more_changes,
            "treeVersionChanged": self.tree_version_changed,
            "windowChanged": self.window_changed,
            "note": self.note,
        }

    def text(self) -> str:
        """The note as the agent reads it in a tool result: the sentence, then the lines."""
        lines = [self.note, *self.changed]
        if self.more_changes:
            lines.append(f"(… {self.more_changes} more changed lines)")
        return "\n".join(lines)


def _cut(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 1] + "…"


def line_diff(
    before: tuple[str, ...], after: tuple[str, ...], limit: int = MAX_CHANGED
) -> tuple[list[str], int]:
    """Removed (``- ``) and added (``+ ``) lines, in tree order, at most ``limit``; and how
    many more there were."""
    changed: list[str] = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        changed += [f"- {line}" for line in before[i1:i2]]
        changed += [f"+ {line}" for line in after[j1:j2]]
    shown = [_cut(c) for c in changed[:limit]]
    return shown, max(0, len(changed) - limit)


def _seconds(s: float) -> str:
    if s < 90:
        return f"{s:.0f} s" if s >= 10 else f"{s:.1f} s"
    return f"{s / 60:.1f} min"


def build(start: HandBackStart, after: ObservedState | ObservationBody | None) -> HandBack:
    """The note for the agent, from what the window was when the person took over and what
    it is now (None when it could not be observed again)."""
    held = start.held_for_s
    if start.by == "agent":  # the agent's own takeover: it handed the desktop over itself
        head = (
            f"The desktop was with the person for {_seconds(held)} (the agent handed it "
            "over) and is back."
        )
    else:
        who = "The person" if start.by in ("person", "") else f"The person ({start.by})"
        head = f"{who} had the desktop for {_seconds(held)} and handed it back."
    now_obs = after.observation if isinstance(after, ObservedState) else after
    before = start.before
    if now_obs is None:
        return HandBack(
            held,
            start.by,
            (),
            f"{head} The window could not be observed again: observe before acting.",
            None,
            None,
        )
    now = FrameSummary.of(now_obs)
    if before is None:
        return HandBack(
            held,
            start.by,
            (),
            f"{head} There was no earlier observation to compare with; the current state "
            "follows. Act only on it.",
            None,
            None,
        )
    facts: list[str] = []
    window_changed = now.window_id != before.window_id or now.pid != before.pid
    if window_changed:
        facts.append(
            f'the window is now {now.app} "{_cut(now.title)}" ({now.window_id}); it was '
            f'{before.app} "{_cut(before.title)}" ({before.window_id})'
        )
    elif now.title != before.title:
        facts.append(f'the window title changed from "{_cut(before.title)}" to "{_cut(now.title)}"')
    version_changed = now.tree_version != before.tree_version
    changed, more = line_diff(before.lines, now.lines) if version_changed else ([], 0)
    if version_changed:
        n = len(changed) + more
        facts.append(
            f"the window's content changed (treeVersion {before.tree_version} → "
            f"{now.tree_version}; {n} changed line{'s' if n != 1 else ''}, below)"
            if n
            else f"the window's treeVersion changed ({before.tree_version} → "
            f"{now.tree_version}) with no line of the tree different"
        )
    if not facts:
        note = f"{head} Nothing in the window changed (same window, same treeVersion)."
    else:
        note = f"{head} Since then " + "; ".join(facts) + ". Act only on the current state."
    return HandBack(held, start.by, tuple(changed), note, version_changed, window_changed, more)


@dataclass
class _Taken:
    by: str
    since: float
    before: FrameSummary | None


@dataclass
class HandBacks:
    """The kernel's memory of takeovers in this process: the last observation each live
    session made (an action consumes the current frame, a pause drops it; this stays until
    the session ends), the takeovers under way, and the hand backs nobody has picked up."""

    last_seen: dict[str, ObservationBody] = field(default_factory=dict)
    taken: dict[str, _Taken] = field(default_factory=dict)
    pending: dict[str, HandBackStart] = field(default_factory=dict)

    def seen(self, session_id: str, state: ObservedState | ObservationBody | None) -> None:
        """The session observed (or an action carried its post-action state back)."""
        if state is not None:
            obs = state.observation if isinstance(state, ObservedState) else state
            self.last_seen[session_id] = obs

    def begin(self, session_id: str, by: str, since: float) -> None:
        if session_id in self.taken:
            return
        last = self.last_seen.get(session_id)
        before = None if last is None else FrameSummary.of(last)
        self.taken[session_id] = _Taken(by, since, before)
        self.pending.pop(session_id, None)

    def hand_back(
        self, session_id: str, ended_by: str | None, ended_at: float | None = None
    ) -> None:
        taken = self.taken.pop(session_id, None)
        if taken is None:
            return
        self.pending[session_id] = HandBackStart(
            session_id,
            taken.by,
            taken.since,
            time.time() if ended_at is None else ended_at,
            taken.before,
            ended_by,
        )

    def take(self, session_id: str) -> HandBackStart | None:
        """The session's pending hand back, once."""
        return self.pending.pop(session_id, None)

    def forget(self, session_id: str) -> None:
        """The session ended: nothing will be handed back to it."""
        self.last_seen.pop(session_id, None)
        self.taken.pop(session_id, None)
        self.pending.pop(session_id, None)
