"""Streamable HTTP at ``/mcp`` on loopback, behind a bearer token.

The token is 32 random bytes, base64url without padding, printed once (on stderr) when the
server starts and never logged again. It lives 30 minutes after its last successful use
(sliding); after that every request gets 401 and the server must be restarted for a new one.
Comparison is constant-time over the bytes. Anything without ``Authorization: Bearer <token>``
gets 401 before it reaches the MCP session manager; the SDK's own DNS-rebinding protection
(Host/Origin checks for 127.0.0.1) still applies behind the gate.
"""

from __future__ import annotations

import hmac
import json
import secrets
import time
from collections.abc import Callable

from starlette.types import ASGIApp, Receive, Scope, Send

TOKEN_BYTES = 32
TOKEN_TTL_S = 30 * 60.0


class BearerToken:
    """One token with a sliding time-to-live."""

    def __init__(
        self,
        token: str | None = None,
        *,
        ttl_s: float = TOKEN_TTL_S,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.value = token or secrets.token_urlsafe(TOKEN_BYTES)
        self._expected = self.value.encode()
        self.ttl_s = ttl_s
        self._clock = clock or time.monotonic
        self.expires_at = self._clock() + ttl_s

    def check(self, presented: str | None) -> str | None:
        """None when accepted (and the TTL slides), else the reason for 401."""
        if not presented:
            return "missing_token"
        ok = hmac.compare_digest(presented.encode(), self._expected)
        if not ok:
            return "invalid_token"
        now = self._clock()
        if now >= self.expires_at:
            return "expired_token"
        self.expires_at = now + self.ttl_s
        return None


class BearerGate:
    """ASGI middleware: HTTP requests need the bearer token; lifespan passes through."""

    def __init__(self, app: ASGIApp, token: BearerToken) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        presented: str | None = None
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                text = value.decode("latin-1")
                scheme, _, rest = text.partition(" ")
                if scheme.lower() == "bearer":
                    presented = rest.strip()
                break
        reason = self.token.check(presented)
        if reason is None:
            await self.app(scope, receive, send)
            return
        body = json.dumps(
            {"error": reason, "message": "deskpilot needs the bearer token printed at start"}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", f'Bearer error="{reason}"'.encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
