"""The preview endpoint's rules, independent of any HTTP framework.

``deskpilot.web.preview`` only moves bytes between uvicorn and :meth:`PreviewGate.handle`;
every decision is here so it is testable and the server stays thin. Rules, in order:

1. method other than GET/HEAD → 405;
2. the request target (Host + raw path + raw query) must equal the URL we would build for
   that snapshot and token, with ``cap`` exactly once and nothing else → else 404;
3. the token must be live and issued for that snapshot → else 404;
4. only ``preview`` / ``image`` blobs are served (never evidence or text) → else 404;
5. the decrypted bytes must sniff as PNG/JPEG/WebP/GIF → else 415;
6. any other failure (integrity, key, I/O) → 500.

Every error body is empty: no paths, ids or crypto details. Every response, success or not,
carries ``cache-control: private, no-store`` and a CSP that forbids everything.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.vault.capabilities import CapabilityRegistry, parse_preview_target
from deskpilot.vault.images import sniff_content_type
from deskpilot.vault.service import SnapshotService

log = logging.getLogger(__name__)

SECURITY_HEADERS: tuple[tuple[str, str], ...] = (
    ("cache-control", "private, no-store"),
    ("content-security-policy", "default-src 'none'; sandbox"),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("cross-origin-resource-policy", "same-origin"),
)


@dataclass(frozen=True)
class PreviewResponse:
    status: int
    body: bytes = b""
    content_type: str | None = None

    def headers(self, *, head: bool = False) -> list[tuple[str, str]]:
        out = list(SECURITY_HEADERS)
        if self.content_type is not None:
            out.append(("content-type", self.content_type))
        out.append(("content-length", str(len(self.body))))
        if self.status == 405:
            out.append(("allow", "GET, HEAD"))
        return out


NOT_FOUND = PreviewResponse(404)
METHOD_NOT_ALLOWED = PreviewResponse(405)
UNSUPPORTED = PreviewResponse(415)
SERVER_ERROR = PreviewResponse(500)


class PreviewGate:
    def __init__(self, service: SnapshotService, capabilities: CapabilityRegistry | None = None):
        self.service = service
        self.capabilities = capabilities or service.capabilities
        self.base_host: str | None = None  # "127.0.0.1:<port>", set once the server is bound

    def handle(self, method: str, host: str, raw_path: str, query: str) -> PreviewResponse:
        try:
            return self._handle(method, host, raw_path, query)
        except Exception as exc:
            log.warning("preview request failed: %s", type(exc).__name__)
            return SERVER_ERROR

    def _handle(self, method: str, host: str, raw_path: str, query: str) -> PreviewResponse:
        if method not in ("GET", "HEAD"):
            return METHOD_NOT_ALLOWED
        if self.base_host is None:
            return NOT_FOUND
        target = parse_preview_target(host, raw_path, query, base_host=self.base_host)
        if target is None:
            return NOT_FOUND
        snapshot_id, token = target
        if not self.capabilities.check(token, snapshot_id):
            return NOT_FOUND
        try:
            data = self.service.read_preview(snapshot_id)
        except DeskpilotError as exc:
            if exc.code is ErrorCode.SNAPSHOT_NOT_FOUND:
                return NOT_FOUND
            log.warning("preview blob unreadable: %s", exc.code.value)
            return SERVER_ERROR
        if data is None:
            return NOT_FOUND
        content_type = sniff_content_type(data)
        if content_type is None:
            return UNSUPPORTED
        return PreviewResponse(200, data, content_type)


__all__ = ["SECURITY_HEADERS", "PreviewGate", "PreviewResponse"]
