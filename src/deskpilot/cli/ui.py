"""``deskpilot ui``: the person's dashboard (docs/dashboard.md). Only translates: binds the
server, prints the one-time login link once, serves until interrupted."""

from __future__ import annotations

import asyncio
import contextlib
import webbrowser

import typer

from deskpilot.web.server import LOOPBACK, DashboardServer


def ui(
    port: int = typer.Option(0, "--port", min=0, max=65535, help="port (0: the OS picks one)"),
    open_browser: bool = typer.Option(False, "--open", help="open the login link in a browser"),
    bind: str = typer.Option(
        LOOPBACK,
        "--bind",
        help="listen address; anything but loopback serves browsers on other machines, "
        "which get only what the `remote` setting allows",
    ),
) -> None:
    """Serve the dashboard: live view, readiness, sessions and timelines, controls,
    confirmations, settings and error codes."""
    try:
        server = DashboardServer(port=port, bind=bind)
        base = server.bind()
    except (OSError, ValueError) as exc:
        typer.echo(f"error: cannot listen on {bind}:{port}: {exc}", err=True)
        raise typer.Exit(2) from None
    url = server.login_url()
    print(f"deskpilot dashboard: {base}", flush=True)
    print(f"one-time login link (works once, for 15 minutes): {url}", flush=True)
    if open_browser:
        with contextlib.suppress(Exception):
            webbrowser.open(url)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(server.serve())
