"""What every dashboard page shares: the database, access control, templates, origins.

One :class:`DashboardContext` per ``deskpilot ui`` process. Page modules (``web/pages/``)
receive it in their ``routes(ctx)`` and keep any state of their own (a live frame source, a
preview server) in their closure, registering its cleanup with :meth:`on_shutdown`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from starlette.requests import Request
from starlette.templating import Jinja2Templates

from deskpilot.oversight.host_access import SharedHost
from deskpilot.oversight.remote import Capability, refusal
from deskpilot.store.db import Database
from deskpilot.store.settings import Settings
from deskpilot.web.auth import Access

TEMPLATES_DIR = Path(__file__).parent / "templates"
STATIC_DIR = Path(__file__).parent / "static"


class Refused(Exception):
    """A request the guard refuses: rendered as a 403 page with the reason (never a 500)."""

    def __init__(self, reason: str, *, capability: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.capability = capability


@dataclass
class DashboardContext:
    db: Database
    access: Access = field(default_factory=Access)
    #: the ``Host`` values this server answers to, and the ``Origin`` values it accepts
    hosts: frozenset[str] = frozenset()
    origins: frozenset[str] = frozenset()
    base_url: str = ""
    templates: Jinja2Templates = field(
        default_factory=lambda: Jinja2Templates(directory=str(TEMPLATES_DIR))
    )
    #: the one host process this dashboard reads the desktop through (live view, window list)
    host: SharedHost = field(default_factory=SharedHost)
    _shutdown: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    def bind(self, base_url: str, hosts: frozenset[str]) -> None:
        """Record where the server listens (called once the socket is bound)."""
        self.base_url = base_url
        self.hosts = hosts
        self.origins = frozenset(f"http://{h}" for h in hosts)

    def on_shutdown(self, callback: Callable[[], Awaitable[None]]) -> None:
        self._shutdown.append(callback)

    async def shutdown(self) -> None:
        for callback in reversed(self._shutdown):
            await callback()
        self._shutdown.clear()
        await self.host.close()

    def guard(self, request: Request, capability: Capability, *, risk: int | None = None) -> None:
        """Raise :class:`Refused` unless this request's peer may use ``capability`` (the
        ``remote`` setting, read now so a change applies to the next request)."""
        peer = request.client.host if request.client else None
        why = refusal(Settings.load(self.db).remote, peer, capability, risk=risk)
        if why is not None:
            raise Refused(why, capability=capability)
