"""The confirmations page (being built for issue #16)."""

from __future__ import annotations

from starlette.routing import BaseRoute

from deskpilot.web.context import DashboardContext


def routes(ctx: DashboardContext) -> list[BaseRoute]:
    return []
