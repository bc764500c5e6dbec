"""Preview capabilities: short-lived bearer tokens that let one URL show one snapshot.

A token is 32 random bytes in base64url (43 characters; anything matching
``[A-Za-z0-9_-]{43,128}`` is syntactically acceptable), lives 5 minutes by default (1 s –
60 min) and authorises exactly one snapshot. Tokens are held only in this process's memory,
keyed by their SHA-256, so a restart revokes them all and a memory dump of the registry does
not yield usable tokens. They are revoked per session, per snapshot and when the agent's
turn ends (:meth:`CapabilityRegistry.revoke_turn`): a token issued without a session or turn
can only expire — a reason to keep the TTL short.

The URL is ``http://127.0.0.1:<port>/snapshot/<id>/preview?cap=<token>`` and the server
accepts a request only when the URL it receives is exactly the one :func:`preview_url` would
build for that snapshot and token — including the ``Host`` header, which also shuts out DNS
rebinding from a web page.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from deskpilot.protocol.errors import DeskpilotError, ErrorCode

DEFAULT_TTL_S = 5 * 60.0
MIN_TTL_S = 1.0
MAX_TTL_S = 60 * 60.0
TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{43,128}$")
SNAPSHOT_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_PATH_RE = re.compile(r"^/snapshot/([A-Za-z0-9_-]{1,64})/preview$")

Clock = Callable[[], float]


@dataclass(frozen=True)
class Grant:
    snapshot_id: str
    session_id: str | None
    turn_id: str | None
    expires_at: float


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("ascii")).digest()


def validate_ttl(ttl_s: float | None) -> float:
    """The TTL in seconds; outside 1 s – 60 min is an error, not silently clamped."""
    if ttl_s is None:
        return DEFAULT_TTL_S
    ttl = float(ttl_s)
    if not (MIN_TTL_S <= ttl <= MAX_TTL_S):
        raise DeskpilotError(
            ErrorCode.INVALID_REQUEST,
            f"preview token TTL must be between {MIN_TTL_S:g} s and {MAX_TTL_S:g} s",
            details={"ttlSeconds": ttl},
        )
    return ttl


def preview_path(snapshot_id: str, token: str) -> str:
    return f"/snapshot/{snapshot_id}/preview?cap={token}"


def preview_url(base_url: str, snapshot_id: str, token: str) -> str:
    """``base_url`` is ``http://127.0.0.1:<port>`` (no trailing slash)."""
    if not SNAPSHOT_ID_RE.match(snapshot_id):
        raise ValueError("snapshot id is not URL-safe")
    if not TOKEN_RE.match(token):
        raise ValueError("token is not a preview capability")
    return base_url.rstrip("/") + preview_path(snapshot_id, token)


def parse_preview_target(
    host: str, raw_path: str, query: str, *, base_host: str
) -> tuple[str, str] | None:
    """``(snapshot_id, token)`` when the request target is exactly a URL we would build.

    ``raw_path`` and ``query`` are the bytes as received (no percent-decoding), so
    ``%2F`` tricks, duplicate or extra parameters, fragments, a trailing slash or a different
    ``Host`` all fail the equality and answer 404.
    """
    if host != base_host:
        return None
    m = _PATH_RE.match(raw_path)
    if not m or not query.startswith("cap="):
        return None
    snapshot_id, token = m.group(1), query[len("cap=") :]
    if not TOKEN_RE.match(token):
        return None
    if f"http://{host}{raw_path}?{query}" != preview_url(f"http://{base_host}", snapshot_id, token):
        return None
    return snapshot_id, token


class CapabilityRegistry:
    """Issued preview tokens. Thread-safe: the preview server and the runtime share one."""

    def __init__(self, clock: Clock = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._grants: dict[bytes, Grant] = {}

    def issue(
        self,
        snapshot_id: str,
        *,
        session_id: str | None = None,
        turn_id: str | None = None,
        ttl_s: float | None = None,
    ) -> tuple[str, float]:
        """A fresh token for ``snapshot_id`` and its absolute expiry (epoch seconds)."""
        if not SNAPSHOT_ID_RE.match(snapshot_id):
            raise ValueError("snapshot id is not URL-safe")
        ttl = validate_ttl(ttl_s)
        token = secrets.token_urlsafe(32)
        now = self._clock()
        grant = Grant(snapshot_id, session_id, turn_id, now + ttl)
        with self._lock:
            self._sweep(now)
            self._grants[_digest(token)] = grant
        return token, grant.expires_at

    def check(self, token: str, snapshot_id: str) -> bool:
        """Present, unexpired and for this snapshot — the whole authorisation."""
        if not TOKEN_RE.match(token):
            return False
        with self._lock:
            grant = self._grants.get(_digest(token))
            if grant is None:
                return False
            if grant.expires_at <= self._clock():
                del self._grants[_digest(token)]
                return False
            return secrets.compare_digest(grant.snapshot_id, snapshot_id)

    def _revoke(self, pred: Callable[[Grant], bool]) -> int:
        with self._lock:
            dead = [k for k, g in self._grants.items() if pred(g)]
            for k in dead:
                del self._grants[k]
            return len(dead)

    def revoke_session(self, session_id: str) -> int:
        return self._revoke(lambda g: g.session_id == session_id)

    def revoke_snapshot(self, snapshot_id: str) -> int:
        return self._revoke(lambda g: g.snapshot_id == snapshot_id)

    def revoke_turn(self, turn_id: str) -> int:
        return self._revoke(lambda g: g.turn_id == turn_id)

    def revoke_all(self) -> int:
        return self._revoke(lambda g: True)

    def active(self) -> int:
        with self._lock:
            self._sweep(self._clock())
            return len(self._grants)

    def _sweep(self, now: float) -> None:
        for k in [k for k, g in self._grants.items() if g.expires_at <= now]:
            del self._grants[k]


__all__ = [
    "DEFAULT_TTL_S",
    "MAX_TTL_S",
    "MIN_TTL_S",
    "TOKEN_RE",
    "CapabilityRegistry",
    "Grant",
    "parse_preview_target",
    "preview_path",
    "preview_url",
    "validate_ttl",
]
