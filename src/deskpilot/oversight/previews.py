"""Snapshot previews on the dashboard's pages, served under the dashboard's own origin.

A session's stored snapshots are encrypted in the vault; a page shows one only through a
preview token (vault/capabilities.py: 32 random bytes, short-lived, one snapshot). The
dashboard issues a token for each image a page shows and serves
``/snapshot/<id>/preview?cap=<token>`` itself, through the vault's own
:class:`~deskpilot.vault.preview.PreviewGate` (exact URL, live token for that snapshot,
image blobs only, sniffed type, empty error bodies). Serving it here rather than on the
vault's separate loopback port keeps the page's CSP at ``img-src 'self'`` — no second origin
to allow — and puts the image behind the dashboard's gate too (Host check, the browser
session cookie).

A token is also bound to the browser session it was issued to: another logged-in browser
presenting it gets 404, as an unknown token does. Tokens live :data:`DEFAULT_TTL_S` unless
``DESKPILOT_UI_PREVIEW_TTL_S`` says otherwise (1 s – 60 min, the vault's bounds; anything
else is refused at start), and all of them die with the dashboard process. A snapshot the
vault deletes (retention, quota, its session deleted) answers 404 at once.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.store.db import Database
from deskpilot.store.snapshots import SnapshotRow
from deskpilot.vault.capabilities import TOKEN_RE, preview_path, validate_ttl
from deskpilot.vault.preview import NOT_FOUND, PreviewGate, PreviewResponse
from deskpilot.vault.service import SnapshotService

log = logging.getLogger(__name__)

TTL_ENV = "DESKPILOT_UI_PREVIEW_TTL_S"
DEFAULT_TTL_S = 5 * 60.0


def ttl_from_env(environ: dict[str, str] | None = None) -> float:
    """The preview token lifetime the dashboard issues with (``DESKPILOT_UI_PREVIEW_TTL_S``)."""
    raw = (environ if environ is not None else dict(os.environ)).get(TTL_ENV, "").strip()
    if not raw:
        return DEFAULT_TTL_S
    try:
        value = float(raw)
    except ValueError:
        raise DeskpilotError(
            ErrorCode.INVALID_REQUEST, f"{TTL_ENV} must be a number of seconds, not {raw[:20]!r}"
        ) from None
    return validate_ttl(value)


def browser_key(cookie: str) -> str:
    """A stable, non-reversible name for one browser session (its cookie never leaves here)."""
    return "ui:" + hashlib.sha256(cookie.encode()).hexdigest()[:24]


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("ascii")).digest()


class DashboardPreviews:
    """Issues and serves the dashboard's preview tokens (one per dashboard process)."""

    def __init__(
        self,
        db: Database,
        *,
        ttl_s: float | None = None,
        open_service: Callable[[Database], SnapshotService] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.db = db
        self.ttl_s = validate_ttl(ttl_s) if ttl_s is not None else ttl_from_env()
        self._open = open_service or _open_service
        self._clock = clock
        self._lock = threading.Lock()
        self._service: SnapshotService | None = None
        self.unavailable: DeskpilotError | None = None
        self._gates: dict[str, PreviewGate] = {}
        #: token digest -> (browser key, expiry): who may present it
        self._owners: dict[bytes, tuple[str, float]] = {}

    def service(self) -> SnapshotService | None:
        """The vault, opened on first use; None (and :attr:`unavailable` says why) when it
        cannot be opened here — the page then says so instead of showing broken images."""
        with self._lock:
            if self._service is None and self.unavailable is None:
                try:
                    self._service = self._open(self.db)
                except DeskpilotError as exc:
                    log.warning("vault unavailable for previews: %s", exc.code.value)
                    self.unavailable = exc
                except OSError as exc:
                    log.warning("vault unavailable for previews: %s", type(exc).__name__)
                    self.unavailable = DeskpilotError(
                        ErrorCode.ENVIRONMENT_UNAVAILABLE,
                        f"the snapshot vault cannot be opened ({type(exc).__name__})",
                    )
            return self._service

    def issue(self, snapshot: SnapshotRow, browser: str) -> tuple[str, float] | None:
        """A same-origin preview URL for ``snapshot`` that only ``browser`` may load, and
        its expiry; None when previews are unavailable."""
        service = self.service()
        if service is None or snapshot.kind != "app_snapshot":
            return None
        token, expires = service.capabilities.issue(
            snapshot.id, session_id=snapshot.session_id, turn_id=browser, ttl_s=self.ttl_s
        )
        now = self._clock()
        with self._lock:
            for k in [k for k, (_, exp) in self._owners.items() if exp <= now]:
                del self._owners[k]
            self._owners[_digest(token)] = (browser, expires)
        return preview_path(snapshot.id, token), expires

    def issuer(self, browser: str) -> Callable[[SnapshotRow], tuple[str, float] | None]:
        return lambda row: self.issue(row, browser)

    def serve(
        self, method: str, host: str, raw_path: str, query: str, browser: str
    ) -> PreviewResponse:
        """Answer one preview request (``host`` already checked by the dashboard's gate)."""
        service = self.service()
        if service is None:
            return NOT_FOUND
        token = query[len("cap=") :] if query.startswith("cap=") else ""
        if not TOKEN_RE.match(token):
            return NOT_FOUND
        with self._lock:
            owner = self._owners.get(_digest(token))
            gate = self._gates.get(host)
            if gate is None:
                gate = PreviewGate(service)
                gate.base_host = host
                self._gates[host] = gate
        if owner is None or owner[0] != browser:
            return NOT_FOUND
        return gate.handle(method, host, raw_path, query)

    def revoke_browser(self, browser: str) -> int:
        """Every token issued to ``browser`` stops working now."""
        service = self._service
        with self._lock:
            for k in [k for k, (b, _) in self._owners.items() if b == browser]:
                del self._owners[k]
        return service.capabilities.revoke_turn(browser) if service is not None else 0

    def close(self) -> None:
        with self._lock:
            self._owners.clear()
            if self._service is not None:
                self._service.capabilities.revoke_all()


def _open_service(db: Database) -> SnapshotService:
    from deskpilot.vault.store import Vault

    return SnapshotService(db, Vault.open())


__all__ = ["DEFAULT_TTL_S", "TTL_ENV", "DashboardPreviews", "browser_key", "ttl_from_env"]
