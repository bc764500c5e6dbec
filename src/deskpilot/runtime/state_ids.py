"""stateIds: single use, valid 60 s, bound to the app and the agent's turn (docs/mcp.md, "stateId").

A stateId stands for one observation the agent has read. Acting on it consumes it; the
action's result may issue the next one. Binding it to the app stops a state of one window from
driving another; binding it to the turn stops a state read in an earlier user task from being
acted on in a later one.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from deskpilot.protocol.errors import ErrorCode
from deskpilot.protocol.session import CancelReason
from deskpilot.protocol.wire import AppIdentity, WindowInfo
from deskpilot.runtime.refusals import RuntimeRefusal, refusal

STATE_ID_TTL_S = 60.0


@dataclass(frozen=True)
class AppKey:
    """The identity a state is bound to: the process and its window."""

    pid: int | None
    window_id: str

    def label(self) -> str:
        return f"pid {self.pid}, window {self.window_id}"


@dataclass
class StateRecord:
    state_id: str
    turn: str
    agent_session: str
    app: AppKey
    app_identity: AppIdentity
    window: WindowInfo
    frame_id: str
    tree_version: str
    tree: str
    element_count: int
    #: size of the image the model was given with this state (None: no image)
    image_size: tuple[int, int] | None
    png_digest: str | None
    issued_at: float
    expires_at: float
    consumed: bool = False
    #: why it can no longer be used: "used" by an action, or the event that voided it
    void_reason: str | None = None
    extras: dict[str, object] = field(default_factory=dict)
    #: its tree is a whole accessibility tree, read now or the last one of an app that
    #: stopped answering (not cut at the deadline, not missing, not an OCR outline): what it
    #: does not show focused was not focused (runtime/text_targets.py ``check_keys_target``)
    tree_complete: bool = True


#: reason → (message, reason code) for a stateId that can no longer be used
_VOID_TEXT: dict[str, tuple[str, str]] = {
    "used": (
        "This state_id was already used by an action; each state_id is single use. Use the "
        "state in that action's result, or call get_app_state.",
        "already_used",
    ),
    "paused": (
        "This state_id was voided when the session was paused, taken over, stopped or "
        "re-bound. Call get_app_state for a new one.",
        "session_control",
    ),
    "turn_ended": (
        "This state_id belongs to a user task (turn) that has ended. Call get_app_state again.",
        "other_turn",
    ),
    "state_changed": (
        "This state_id was voided because the application's state changed under an action. "
        "Call get_app_state on the same app.",
        "state_changed",
    ),
    "released": (
        "This state_id was voided when the idle computer session was released. Call "
        "get_app_state again.",
        "session_released",
    ),
    "desktop_claimed": (
        "This state_id was voided when another agent session took the desktop (its action "
        "stopped this agent's computer session); nothing was done with it. Call get_app_state "
        "and act on the new state: acting takes the desktop back.",
        "desktop_claimed",
    ),
    "kill_switch": (
        "This state_id was voided when the kill switch stopped every computer session. Call "
        "get_app_state for a new one (actions stay refused while the halt lasts).",
        "kill_switch",
    ),
    "session_ended": (
        "This state_id was voided because its computer session was ended. Call get_app_state "
        "again.",
        "session_ended",
    ),
    "invalidated": ("This state_id is no longer valid. Call get_app_state again.", "invalidated"),
}


def void_reason(cancel_reason: str) -> str:
    """The void reason for the stateIds of a session the kernel ended with ``cancel_reason``."""
    kept = (CancelReason.DESKTOP_CLAIMED, CancelReason.KILL_SWITCH)
    return cancel_reason if cancel_reason in kept else "session_ended"


class StateIdRegistry:
    def __init__(self, ttl_s: float = STATE_ID_TTL_S, clock: Callable[[], float] | None = None):
        self.ttl_s = ttl_s
        self._clock = clock or time.monotonic
        self._records: dict[str, StateRecord] = {}

    def now(self) -> float:
        return self._clock()

    def issue(
        self,
        *,
        turn: str,
        agent_session: str,
        app: AppKey,
        app_identity: AppIdentity,
        window: WindowInfo,
        frame_id: str,
        tree_version: str,
        tree: str,
        element_count: int,
        image_size: tuple[int, int] | None,
        png_digest: str | None,
        tree_complete: bool = True,
    ) -> StateRecord:
        self._sweep()
        now = self.now()
        record = StateRecord(
            state_id="st_" + secrets.token_urlsafe(12),
            turn=turn,
            agent_session=agent_session,
            app=app,
            app_identity=app_identity,
            window=window,
            frame_id=frame_id,
            tree_version=tree_version,
            tree=tree,
            element_count=element_count,
            image_size=image_size,
            png_digest=png_digest,
            issued_at=now,
            expires_at=now + self.ttl_s,
            tree_complete=tree_complete,
        )
        self._records[record.state_id] = record
        return record

    def peek(self, state_id: str) -> StateRecord | None:
        return self._records.get(state_id)

    def consume(self, state_id: str, *, turn: str) -> StateRecord:
        """Take a stateId for one action, or raise ``state_id_invalid`` saying why."""
        record = self.check(state_id, turn=turn)
        record.consumed = True
        record.void_reason = "used"
        return record

    def give_back(self, record: StateRecord) -> None:
        """Undo ``consume`` for an action that was refused before anything was dispatched:
        the UI did not change, so the state is still the agent's to act on."""
        if record.void_reason == "used":
            record.consumed = False
            record.void_reason = None

    def check(self, state_id: str, *, turn: str) -> StateRecord:
        """The usable record of a stateId (not consumed), or ``state_id_invalid`` saying why."""
        record = self._records.get(state_id)
        if record is None:
            raise refusal(
                ErrorCode.STATE_ID_INVALID,
                "Unknown state_id. Call get_app_state for a new one.",
                reason="unknown",
            )
        if record.consumed:
            why = record.void_reason or "used"
            text, code = _VOID_TEXT.get(why, _VOID_TEXT["used"])
            raise refusal(ErrorCode.STATE_ID_INVALID, text, reason=code)
        if self.now() >= record.expires_at:
            self._records.pop(state_id, None)
            raise refusal(
                ErrorCode.STATE_ID_INVALID,
                f"This state_id expired (valid {int(self.ttl_s)} s). Call get_app_state again.",
                reason="expired",
            )
        if record.turn != turn:
            raise refusal(
                ErrorCode.STATE_ID_INVALID,
                "This state_id belongs to another turn. Call get_app_state again.",
                reason="other_turn",
            )
        return record

    def invalidate(
        self,
        *,
        agent_session: str | None = None,
        turn: str | None = None,
        app: AppKey | None = None,
        reason: str = "invalidated",
    ) -> int:
        """Void every matching unconsumed state (``reason`` says why); returns how many."""
        n = 0
        for record in self._records.values():
            if record.consumed:
                continue
            if agent_session is not None and record.agent_session != agent_session:
                continue
            if turn is not None and record.turn != turn:
                continue
            if app is not None and record.app != app:
                continue
            record.consumed = True
            record.void_reason = reason
            n += 1
        return n

    def invalidate_other_turns(self, agent_session: str, current_turn: str) -> int:
        n = 0
        for record in self._records.values():
            if (
                not record.consumed
                and record.agent_session == agent_session
                and record.turn != current_turn
            ):
                record.consumed = True
                record.void_reason = "turn_ended"
                n += 1
        return n

    def _sweep(self) -> None:
        now = self.now()
        dead = [k for k, r in self._records.items() if r.consumed or now >= r.expires_at]
        # keep consumed ids a little so "already used" can be told apart from "unknown"
        for k in dead:
            r = self._records[k]
            if now >= r.expires_at + self.ttl_s:
                del self._records[k]


__all__ = ["STATE_ID_TTL_S", "AppKey", "RuntimeRefusal", "StateIdRegistry", "StateRecord"]
