"""Step 2: an actionId names one action, once.

A reused actionId with different parameters → ``approval_mismatch``; one that already
executed answers its recorded outcome without running again; one still running is refused;
a blocked or failed one passes the freshness check (step 3, ``CurrentFrames.check`` in
kernel/frames.py) and is rated again (step 4): a different risk or decision →
``approval_mismatch``, else its recorded refusal or failure is raised again, before any new
row is written (docs/kernel.md, "Broker").

Parameters are compared by a keyed hash (:class:`ParamsHasher`); its key is made once per
database, kept in the settings table, and never leaves this process.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from typing import NoReturn

from deskpilot.kernel.policy import PolicyDecision
from deskpilot.kernel.results import ExecutedAction
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import Action, ActionResult
from deskpilot.store.db import Database
from deskpilot.store.ledger import ActionRow

_SALT_KEY = "kernel.paramsHashSalt"


class ParamsHasher:
    def __init__(self, db: Database) -> None:
        self._salt = _params_salt(db)

    def params_hash(self, action: Action) -> str:
        """A keyed hash of the action's parameters: equal actions compare equal, and typed
        text cannot be recovered from the ledger by guessing."""
        return self.keyed_hash(action.model_dump_json(by_alias=True, exclude_none=True).encode())

    def keyed_hash(self, body: bytes) -> str:
        """The ledger's keyed hash of some parameters (the key never leaves this process)."""
        return hashlib.blake2b(body, key=self._salt, digest_size=16).hexdigest()


def _params_salt(db: Database) -> bytes:
    row = db.query_one("SELECT value_json FROM settings WHERE key = ?", (_SALT_KEY,))
    if row is not None:
        return bytes.fromhex(str(row["value_json"]).strip('"'))
    salt = secrets.token_bytes(16)
    db.execute(
        "INSERT OR IGNORE INTO settings(key, value_json, updated_at) VALUES (?, ?, ?)",
        (_SALT_KEY, f'"{salt.hex()}"', time.time()),
    )
    return _params_salt(db)  # another process may have won the insert: read what is stored


def replay(existing: ActionRow, session_id: str, phash: str) -> ExecutedAction | None:
    """The recorded outcome of an actionId that already executed; None for one that was
    blocked or failed (the caller re-rates it, then :func:`answer_recorded`)."""
    if existing.session_id != session_id or existing.params_hash != phash:
        raise DeskpilotError(
            ErrorCode.APPROVAL_MISMATCH,
            f"actionId {existing.id} was already used for a different action; use a new actionId",
            details={"actionId": existing.id, "field": "params"},
        )
    if existing.status in ("executed", "noop") and existing.outcome is not None:
        result = ActionResult(id=None, **existing.outcome)
        return ExecutedAction(
            result,
            existing.id,
            existing.risk_level,
            existing.decision,
            existing.reason,
            replayed=True,
        )
    if existing.status in ("requested", "executing"):
        raise DeskpilotError(
            ErrorCode.INVALID_REQUEST,
            f"action {existing.id} is still running",
            details={"actionId": existing.id},
        )
    return None  # blocked / failed: re-evaluated, then answered as recorded


def answer_recorded(existing: ActionRow, decision: PolicyDecision) -> NoReturn:
    """A blocked/failed actionId, rated again: refused if it now rates differently, else its
    recorded refusal or failure is raised again."""
    check_same_decision(existing, decision)
    raise_recorded(existing)


def check_same_decision(existing: ActionRow, decision: PolicyDecision) -> None:
    if existing.risk_level != decision.risk or existing.decision != decision.decision:
        raise DeskpilotError(
            ErrorCode.APPROVAL_MISMATCH,
            f"actionId {existing.id} was recorded as {existing.risk_level.label}/"
            f"{existing.decision.value}, now it rates {decision.risk.label}/"
            f"{decision.decision.value}; use a new actionId",
            details={
                "actionId": existing.id,
                "field": "risk" if existing.risk_level != decision.risk else "decision",
            },
        )


def raise_recorded(existing: ActionRow) -> NoReturn:
    if existing.status == "blocked":
        code = ErrorCode(existing.error_code or "action_blocked")
        raise DeskpilotError(
            code,
            f"action {existing.id} was refused ({existing.reason}); use a new actionId to "
            "try something else",
            details={"reason": existing.reason, "actionId": existing.id},
        )
    raise DeskpilotError(
        ErrorCode(existing.error_code or "action_failed"),
        f"action {existing.id} already failed ({existing.error_code}); use a new actionId",
        details={"actionId": existing.id},
    )
