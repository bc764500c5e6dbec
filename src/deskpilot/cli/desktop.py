"""``deskpilot desktop up|down|env``: translate to :mod:`deskpilot.desktop`."""

from __future__ import annotations

import json
import os
import shlex

import typer

from deskpilot import desktop as vdesk
from deskpilot.desktop import wayland as wdesk

app = typer.Typer(
    help="A private virtual desktop (Xvfb + D-Bus session + AT-SPI bus; "
    "or, with --wayland, headless Mutter + PipeWire)."
)

_WAYLAND_HELP = "A Wayland desktop (headless Mutter with PipeWire) instead of Xvfb."


def _print_state(state: vdesk.DesktopState, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(state.to_json()))
    else:
        for k, v in state.env.items():
            typer.echo(f"export {k}={shlex.quote(v)}")


def _print_wayland(desktop: wdesk.WaylandDesktop, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(desktop.to_json()))
        return
    typer.echo("unset DISPLAY")  # no X server: an app must not open a window on another one
    for k, v in desktop.env.items():
        typer.echo(f"export {k}={shlex.quote(v)}")


def _fail(exc: Exception) -> typer.Exit:
    typer.echo(f"error: {exc}", err=True)
    return typer.Exit(1)


@app.command()
def up(
    width: int = typer.Option(1280, help="Screen width in pixels."),
    height: int = typer.Option(800, help="Screen height in pixels."),
    wm: str | None = typer.Option(
        None, help="Optional EWMH window manager to start, e.g. openbox."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the environment as JSON."),
    wayland: bool = typer.Option(False, "--wayland", help=_WAYLAND_HELP),
) -> None:
    """Start a desktop and print its environment."""
    try:
        if wayland:
            if wm:
                raise vdesk.DesktopError("--wm is for X11: Mutter is the Wayland desktop's")
            _print_wayland(wdesk.up(width, height), as_json)
            return
        state = vdesk.up(width, height, wm=wm)
    except vdesk.DesktopError as exc:
        raise _fail(exc) from None
    _print_state(state, as_json)


@app.command()
def down(
    display: str | None = typer.Option(None, help="Display to end, e.g. :99."),
    wayland: bool = typer.Option(False, "--wayland", help="End a Wayland desktop."),
    name: str | None = typer.Option(None, help="The Wayland desktop's name (WAYLAND_DISPLAY)."),
) -> None:
    """End exactly what "up" started, by pid."""
    try:
        if wayland or name:
            desktop = wdesk.load(name)
            ended = wdesk.down(desktop)
            typer.echo(f"ended {', '.join(ended)} of {desktop.name}")
            return
        state = vdesk.load(display)
    except vdesk.DesktopError as exc:
        raise _fail(exc) from None
    ended = vdesk.down(state)
    typer.echo(f"ended {', '.join(ended)} on {state.display}")


@app.command()
def env(
    display: str | None = typer.Option(None, help="Display, e.g. :99."),
    as_json: bool = typer.Option(False, "--json"),
    wayland: bool = typer.Option(False, "--wayland", help="A Wayland desktop's environment."),
    name: str | None = typer.Option(None, help="The Wayland desktop's name (WAYLAND_DISPLAY)."),
) -> None:
    """Print the environment of a running desktop (eval "$(deskpilot desktop env)").

    Without --display and with several desktops up, the one this shell's $DISPLAY names."""
    try:
        if wayland or name:
            _print_wayland(wdesk.load(name), as_json)
            return
        state = vdesk.load(display, prefer=os.environ.get("DISPLAY"))
    except vdesk.DesktopError as exc:
        raise _fail(exc) from None
    _print_state(state, as_json)
