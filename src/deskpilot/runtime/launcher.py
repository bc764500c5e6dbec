"""open_app: start an application and wait until the host can see it.

``app`` is a desktop id (``org.gnome.Calculator``, with or without ``.desktop``), an
executable on PATH, or an absolute path. The app is started in its own process group with
accessibility switched on (Chromium also gets ``--force-renderer-accessibility``), then the
call waits, polling the host's window list, until a window of that process shows and answers
an observation with a non-empty tree. A single-instance app that hands the request to a
running instance and exits is found by its executable name among the new windows. Launching
counts as an action attempt.
"""

from __future__ import annotations

import asyncio
import configparser
import contextlib
import os
import shlex
import shutil
import subprocess
from pathlib import Path

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import TargetSpec, WindowInfo
from deskpilot.runtime.apps import group_apps
from deskpilot.runtime.core import Call, RuntimeCore, ToolOutcome, app_label
from deskpilot.runtime.diagnostics import ActionOutcome, ObservationOutcome
from deskpilot.runtime.errors import refusal
from deskpilot.runtime.reads import json_text
from deskpilot.runtime.tool_args import OpenAppArgs

_FIELD_CODES = {"%f", "%F", "%u", "%U", "%i", "%c", "%k", "%d", "%D", "%n", "%N", "%v", "%m"}
_CHROMIUMS = {"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}
POLL_S = 0.1

#: processes we started, kept so they are reaped when they exit
_children: list[subprocess.Popen[bytes]] = []


def _data_dirs() -> list[Path]:
    home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local/share")
    dirs = os.environ.get("XDG_DATA_DIRS") or "/usr/local/share:/usr/share"
    return [Path(home), *(Path(d) for d in dirs.split(":") if d)]


def _desktop_file(app: str) -> Path | None:
    want = app.lower().removesuffix(".desktop")
    for base in _data_dirs():
        folder = base / "applications"
        if not folder.is_dir():
            continue
        for f in folder.glob("*.desktop"):
            if f.stem.lower() == want:
                return f
    return None


def _exec_of(desktop: Path) -> list[str]:
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    parser.read(desktop, encoding="utf-8")
    exec_line = parser.get("Desktop Entry", "Exec", fallback="")
    argv = [a for a in shlex.split(exec_line) if a not in _FIELD_CODES]
    if not argv:
        raise refusal(ErrorCode.TARGET_NOT_FOUND, f"{desktop.name} has no Exec line.")
    return argv


def launch_argv(app: str, extra: list[str]) -> list[str]:
    if "/" in app:
        if not (os.path.isfile(app) and os.access(app, os.X_OK)):
            raise refusal(ErrorCode.TARGET_NOT_FOUND, f"{app} is not an executable file.")
        argv = [app]
    elif (desktop := _desktop_file(app)) is not None:
        argv = _exec_of(desktop)
    elif (found := shutil.which(app)) is not None:
        argv = [found]
    else:
        raise refusal(
            ErrorCode.TARGET_NOT_FOUND,
            f"No desktop entry or executable named {app!r}. Use a desktop id such as "
            "org.gnome.Calculator, or an executable on PATH.",
        )
    if os.path.basename(argv[0]) in _CHROMIUMS and "--force-renderer-accessibility" not in argv:
        argv.insert(1, "--force-renderer-accessibility")
    return argv + list(extra)


def _spawn(argv: list[str]) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env["NO_AT_BRIDGE"] = "0"
    env["ACCESSIBILITY_ENABLED"] = "1"
    env["GTK_A11Y"] = "atspi"
    try:
        proc = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        raise refusal(ErrorCode.TARGET_NOT_FOUND, "The application could not be started.") from None
    _children[:] = [c for c in _children if c.poll() is None]
    _children.append(proc)
    return proc


async def open_app(core: RuntimeCore, call: Call, args: OpenAppArgs) -> ToolOutcome:
    turn = call.turn
    call.diag.action_outcome = ActionOutcome.NOT_DISPATCHED
    core.kernel.check_halt(call.agent_session)
    if turn.stopped:
        raise refusal(ErrorCode.SESSION_CANCELED, "The user stopped this task.")
    if turn.recovery is not None:
        turn.recovery.check("open_app", None)
    turn.budget.admit_action()
    await core.preflight(call, acting=True)
    argv = launch_argv(args.app, args.args)
    before = {w.window_id for w in await core.windows(call)}
    async with core.sessions.using(call.agent_session) as sess:
        call.session_id = sess.session_id
        call.dispatched = True
        proc = _spawn(argv)
        call.diag.action_outcome = ActionOutcome.CALL_RETURNED
        try:
            window = await asyncio.wait_for(
                _wait_window(core, call, proc, os.path.basename(argv[0]).lower(), before),
                timeout=args.timeout_ms / 1000.0,
            )
        except TimeoutError:
            raise refusal(
                ErrorCode.TARGET_NOT_FOUND,
                f"The app started (pid {proc.pid}) but showed no accessible window within "
                f"{args.timeout_ms} ms. It is still running; try list_apps later.",
                pid=proc.pid,
            ) from None
        call.diag.observation_outcome = ObservationOutcome.NOT_REUSABLE
    entry = next((a for a in group_apps([window]) if a.pid == window.app.pid), None)
    data = {
        "launched": True,
        "pid": proc.pid,
        "app": entry.to_json() if entry else None,
        "window": {"windowId": window.window_id, "title": window.title},
        "next": f'call get_app_state {{"app": {window.app.pid}}}',
    }
    return ToolOutcome(
        text=json_text(data) + f"\nOpened {app_label(window.app)}.", diagnostic=call.diag
    )


async def _wait_window(
    core: RuntimeCore,
    call: Call,
    proc: subprocess.Popen[bytes],
    exe: str,
    before: set[str],
) -> WindowInfo:
    assert call.session_id is not None
    while True:
        windows = await core.windows(call)
        mine = [w for w in windows if w.app.pid == proc.pid]
        if not mine and proc.poll() is not None:
            if proc.returncode != 0:
                raise refusal(
                    ErrorCode.TARGET_NOT_FOUND,
                    f"The app exited at once with status {proc.returncode}.",
                )
            # handed over to a running instance: a new window of the same executable
            mine = [
                w
                for w in windows
                if w.window_id not in before and (w.app.executable or "").lower() == exe
            ]
        for w in mine:
            if not w.visible or w.minimized:
                continue
            with contextlib.suppress(DeskpilotError):
                with call.watch.stage("rpc"):
                    seen = await core.kernel.observe(
                        call.session_id, TargetSpec(window_id=w.window_id), include_screenshot=False
                    )
                if seen.observation.element_count > 0:  # its tree is there, not just a frame
                    return w
        await asyncio.sleep(POLL_S)
