"""``deskpilot observe``: one observation through the supervised host, printed.

A person's way to see what an agent would see (the tree as the host renders it), and the
second half of ``scripts/run``'s demo. The screenshot is written only when asked for.

A window with no accessibility tree (an xterm) is shown as the kernel shows it to an agent:
its visual tree, an OCR outline of the screenshot (kernel/visual_tree.py ``outlined``, the
same call the kernel makes). So the screenshot is always taken; it is written out only when
asked for.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import typer

from deskpilot.hostclient.backend import HostBackend
from deskpilot.kernel import visual_tree
from deskpilot.protocol.errors import DeskpilotError
from deskpilot.protocol.wire import TargetSpec
from deskpilot.runtime.state_view import tree_read_lines
from deskpilot.runtime.targets import resolve_in


async def _observe(
    target: TargetSpec, want_png: bool
) -> tuple[dict[str, object], list[str], bytes | None]:
    """The observation as JSON, the header lines an agent reads of how its tree was read
    (visual, partial, stale, cache, covered: runtime/state_view.py), and the PNG if wanted."""
    backend = HostBackend(heartbeat=False)
    try:
        if target.app is not None:
            # the same rule an agent's ``app`` goes by (runtime/apps.py): a name that fits
            # two processes is refused with both, not settled by the host picking one
            _entry, window = resolve_in(await backend.list_windows(), target.app)
            target = TargetSpec(window_id=window.window_id)
        # the screenshot is what a tree-less window's visual tree is read from
        state = await backend.observe("cli-observe", target, include_screenshot=True)
        state = await visual_tree.outlined(state)
        header = tree_read_lines(state.observation)
        return state.observation.wire(), header, state.png if want_png else None
    finally:
        await backend.close()


def _candidate_line(app: dict[str, object]) -> str:
    """One app a refused ``--app`` could mean: its pid (what ``--pid`` takes) and names."""
    names = [f"{key}={app[key]}" for key in ("name", "executable", "wmClass") if app.get(key)]
    return f"pid {app.get('pid')}: {', '.join(names)} ({app.get('windows')} windows)"


def _write_private(path: Path, data: bytes) -> None:
    """A screenshot shows whatever was on screen: readable by its owner only."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as out:
        os.fchmod(out.fileno(), 0o600)  # an existing file keeps its old mode otherwise
        out.write(data)


def observe(
    app: str | None = typer.Option(None, help="App name, executable, WM_CLASS or desktop id."),
    pid: int | None = typer.Option(None, min=1, help="Process id of the app."),
    window: str | None = typer.Option(None, help="X window id, e.g. 0x1c00003."),
    as_json: bool = typer.Option(False, "--json", help="Print the observation as JSON."),
    screenshot: Path | None = typer.Option(
        None, help="Write the PNG screenshot here (a new or own file, mode 0600)."
    ),
) -> None:
    """Observe a window (the focused one by default) and print its element tree."""
    given = [name for name, v in (("--app", app), ("--pid", pid), ("--window", window)) if v]
    if len(given) > 1:
        raise typer.BadParameter(
            f"{' and '.join(given)} name different targets; give at most one",
            param_hint=given[1],
        )
    if screenshot is not None and not screenshot.parent.is_dir():
        # say so before observing: the desktop round trip is wasted if the file cannot be written
        typer.echo(
            f"error: cannot write the screenshot: no directory {screenshot.parent}", err=True
        )
        raise typer.Exit(2)
    target = TargetSpec(app=app, pid=pid, window_id=window)
    try:
        obs, header, png = asyncio.run(_observe(target, screenshot is not None))
    except DeskpilotError as exc:
        candidates = (exc.details or {}).get("candidates") or []
        if as_json:  # a script asked for JSON: the refusal is JSON too, on stdout
            error = {"code": exc.code.value, "message": exc.message, "candidates": candidates}
            typer.echo(json.dumps({"error": error}))
            raise typer.Exit(1) from None
        typer.echo(f"error: {exc.code.value}: {exc.message}", err=True)
        for candidate in candidates:
            typer.echo(f"  {_candidate_line(candidate)}", err=True)
        raise typer.Exit(1) from None
    if screenshot is not None and png is not None:
        try:
            _write_private(screenshot, png)
        except OSError as exc:
            typer.echo(
                f"error: cannot write the screenshot to {screenshot}: {exc.strerror}", err=True
            )
            raise typer.Exit(2) from None
    if as_json:
        typer.echo(json.dumps(obs))
        return
    app_info = obs.get("app") or {}
    win = obs.get("window") or {}
    assert isinstance(app_info, dict) and isinstance(win, dict)
    typer.echo(f"App={app_info.get('name')} (pid {app_info.get('pid')})")
    typer.echo(f"Window={win.get('title')!r} ({win.get('windowId')})")
    typer.echo(f"frameId={obs.get('frameId')} treeVersion={obs.get('treeVersion')}")
    for line in header:
        typer.echo(line)
    typer.echo(str(obs.get("tree", "")))
