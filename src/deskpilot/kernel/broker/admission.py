"""Step 1 of every action: may this session act at all?

The session exists and may act (an executable state); the kill-switch halt does not bind its
agent; the person has not taken the desktop over (kernel/takeover.py: a takeover of *any*
session refuses every session's actions with ``handoff_required`` — checked before the
session's own state, so an action of the taken-over, paused session says so too); computer
use is enabled; the contract's step/runtime/no-op budgets are not spent.
Nothing else is looked at yet — these refusals cost no ledger row, because nothing was rated
(docs/kernel.md, "Broker"). App launches pass the same door (kernel/governed_launch.py).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from deskpilot.desktop.virtual import is_private_display
from deskpilot.kernel.halt import Halt
from deskpilot.kernel.session_manager import SessionManager
from deskpilot.kernel.takeover import Takeover
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import REFUSED_BY, SESSION_STATE, EventType, SessionState
from deskpilot.store.session_rows import SessionRow
from deskpilot.store.settings import SettingsModel

log = logging.getLogger(__name__)

#: refusals at admission that leave an ``action_refused`` event (the person sees that the
#: agent kept trying while they held the desktop, had paused it, halted or disabled it)
RECORDED_CODES = frozenset(
    {
        ErrorCode.KILL_SWITCH_ENGAGED,
        ErrorCode.HANDOFF_REQUIRED,
        ErrorCode.COMPUTER_DISABLED,
        ErrorCode.SESSION_NOT_EXECUTABLE,
    }
)
#: repeats of one refusal (session, code) within this many seconds are counted, not written
COLLAPSE_SECONDS = 5.0
#: who may pause a session that the agent then resumes itself (controls.py)
_AGENT_PAUSERS = frozenset({"agent", "kernel"})


@dataclass
class RefusalLog:
    """One ``action_refused`` timeline event per refusal at admission, collapsed: at most one
    per session and code every :data:`COLLAPSE_SECONDS`; the repeats in between are counted
    into the next one (payload ``count``: this refusal and the repeats not written since the
    previous event of that session and code). Kept in memory (a refusal costs no query
    while collapsed); the payload holds codes only, never typed text or parameters."""

    sessions: SessionManager
    window_s: float = COLLAPSE_SECONDS
    clock: Callable[[], float] = time.monotonic
    _last: dict[tuple[str, str], tuple[float, int]] = field(default_factory=dict)

    def record(self, session_id: str, kind: str | None, exc: DeskpilotError) -> None:
        if exc.code not in RECORDED_CODES:
            return
        key = (session_id, exc.code.value)
        now = self.clock()
        last = self._last.get(key)
        if last is not None and now - last[0] < self.window_s:
            self._last[key] = (last[0], last[1] + 1)
            return
        if len(self._last) > 1024:  # forget windows long over
            self._last = {k: v for k, v in self._last.items() if now - v[0] < self.window_s}
        self._last[key] = (now, 0)
        try:
            self.sessions.record(
                session_id,
                EventType.ACTION_REFUSED,
                payload=refused_payload(kind, exc, 1 + (last[1] if last else 0)),
            )
        except Exception:  # the refusal itself must reach the agent whatever happens here
            log.warning("recording a refused action failed", exc_info=True)


def refused_payload(kind: str | None, exc: DeskpilotError, count: int) -> dict[str, object]:
    """``{kind, code, reason, count}`` and ``by`` when known (who paused, took over)."""
    d = exc.details
    reason = d.get("reason")
    if exc.code is ErrorCode.KILL_SWITCH_ENGAGED:
        reason = d.get("cause") or "halted"
    elif exc.code is ErrorCode.SESSION_NOT_EXECUTABLE:
        reason = d.get("state") or "not_executable"
    elif exc.code is ErrorCode.COMPUTER_DISABLED and not reason:
        reason = "computer_disabled"
    payload: dict[str, object] = {
        "kind": kind,
        "code": exc.code.value,
        "reason": reason if isinstance(reason, str) else None,
        "count": count,
    }
    by = d.get("pausedBy") or d.get("takenOverBy")
    if isinstance(by, str):
        payload["by"] = by
    return payload


def admit(
    sessions: SessionManager,
    halt: Halt,
    takeover: Takeover,
    settings: Callable[[], SettingsModel],
    session_id: str,
    *,
    kind: str | None = None,
    refusals: RefusalLog | None = None,
) -> tuple[SessionRow, SettingsModel]:
    """The checks every desktop-changing request passes first: the halt, the takeover hold,
    the enabled setting, a session that accepts actions, its budgets. A refusal by the
    first four is recorded in ``refusals`` (an ``action_refused`` event, collapsed)."""
    row = sessions.require(session_id)
    try:
        halt.check(row.agent_session_id)
        takeover.check()
        current = settings()
        if not current.enabled:
            raise DeskpilotError(
                ErrorCode.COMPUTER_DISABLED,
                "computer use is turned off in the settings (enabled=false); observing works. "
                "Do not retry: tell the user; the person turns it on in the dashboard's "
                "Settings or with `deskpilot settings set enabled true`",
                details={"reason": "computer_disabled"},
            )
        check_environment(current)
        row = require_executable(sessions, session_id)
    except DeskpilotError as exc:
        if refusals is not None:
            refusals.record(session_id, kind, exc)
        raise
    check_budgets(row)
    return row, current


def require_executable(sessions: SessionManager, session_id: str) -> SessionRow:
    """``sessions.require_executable``, with a paused session's refusal saying who paused it,
    since when and what to do (details ``state``, ``pausedBy``, ``since`` in epoch ms)."""
    try:
        return sessions.require_executable(session_id)
    except DeskpilotError as exc:
        row = sessions.get(session_id)
        if exc.code is not ErrorCode.SESSION_NOT_EXECUTABLE or row is None:
            raise
        if row.state != SessionState.PAUSED:
            raise
        raise paused_error(row) from None


def paused_error(row: SessionRow) -> DeskpilotError:
    who = row.paused_by or "agent"
    when = time.strftime("%H:%M:%S", time.localtime(row.updated_at))
    if who in _AGENT_PAUSERS:
        what = f"session {row.id} is paused (by the agent, at {when}); call resume to go on"
    else:
        what = (
            f"session {row.id} is paused by the person ({who}) since {when}; only they resume "
            "it (the dashboard or `deskpilot session resume`). Do not retry now: wait for "
            "them; observing still works"
        )
    details: dict[str, object] = {
        "state": row.state.value,
        "pausedBy": who,
        "since": int(row.updated_at * 1000),
        REFUSED_BY: SESSION_STATE,
    }
    if row.taken_over_by:
        details["takenOverBy"] = row.taken_over_by
    return DeskpilotError(ErrorCode.SESSION_NOT_EXECUTABLE, what, details=details)


def check_environment(current: SettingsModel, display: str | None = None) -> None:
    """The ``environments`` setting: may agents act on the kind of desktop this process drives?

    The desktop is the X display in ``DISPLAY`` (the host this kernel spawns inherits it). It
    is a ``privateDesktop`` when deskpilot started it and it still runs (its state file names
    a live Xvfb: desktop/virtual.py, ``is_private_display``), else ``myDesktop`` — the
    person's own. A kind that is off answers ``computer_disabled`` (reason
    ``environment_disabled``, naming the kind); observing is never gated here. Without a
    display there is nothing to act on and the host says so itself.
    """
    display = display if display is not None else os.environ.get("DISPLAY")
    if not display:
        return
    private = is_private_display(display)
    kind = "privateDesktop" if private else "myDesktop"
    allowed = current.environments.private_desktop if private else current.environments.my_desktop
    if not allowed:
        raise DeskpilotError(
            ErrorCode.COMPUTER_DISABLED,
            f"acting on {'a private virtual desktop' if private else 'your own desktop'} "
            f"({display}) is turned off in the settings (environments.{kind}=false); "
            "observing works",
            details={"reason": "environment_disabled", "environment": kind, "display": display},
        )


def check_budgets(row: SessionRow) -> None:
    """The task contract's limits: steps taken, time since the session opened, and actions in
    a row that changed nothing (a loop that makes no progress ends instead of spinning)."""
    c = row.contract
    if row.steps >= c.max_steps:
        raise DeskpilotError(
            ErrorCode.TASK_STEP_LIMIT_EXCEEDED,
            f"the session used its {c.max_steps} steps",
            details={"maxSteps": c.max_steps},
        )
    if (time.time() - row.created_at) * 1000 > c.max_runtime_ms:
        raise DeskpilotError(
            ErrorCode.TASK_RUNTIME_EXCEEDED,
            f"the session ran longer than {c.max_runtime_ms} ms",
            details={"maxRuntimeMs": c.max_runtime_ms},
        )
    if row.consecutive_noops >= c.max_consecutive_noops:
        raise DeskpilotError(
            ErrorCode.TASK_NOOP_LIMIT_EXCEEDED,
            f"{row.consecutive_noops} actions in a row changed nothing",
            details={"maxConsecutiveNoops": c.max_consecutive_noops},
        )
