"""open_app: start an application as a governed action, then wait until the host can see it.

``app`` is a desktop id (``org.gnome.Calculator``, with or without ``.desktop``), an
executable on PATH, or an absolute path. The runtime only *resolves* it — the program, the
desktop entry's own arguments, the agent's arguments, and the desktop entry that runs this
very program, if any — into a ``LaunchRequest``. The kernel (``Kernel.launch``) then rates and
decides it like any other action (halt, budgets, launch policy with a reason code, ledger row,
timeline, confirmation for L3 and above) and only then calls back here to spawn.

The app is started in its own process group with accessibility switched on
(desktop/a11y_env.py: GTK 2 apps load their bridge by ``GTK_MODULES``; Chromium also gets
``--force-renderer-accessibility``), then the call waits, polling the host's window list,
until a window of that process shows and answers an observation with a non-empty tree. A
single-instance app that hands the request to a running instance and exits 0 is found by its
executable name among the new windows (within :data:`HANDOVER_GRACE_S`). A process that exits
before any window is reported as exactly that, with its exit status. Launching counts as an
action attempt.
"""

from __future__ import annotations

import asyncio
import configparser
import contextlib
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from deskpilot.desktop.a11y_env import with_accessibility
from deskpilot.kernel.port import LaunchReport, LaunchRequest, LaunchResult
from deskpilot.protocol.app_names import executable_names
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import TargetSpec, WindowInfo
from deskpilot.runtime.apps import group_apps
from deskpilot.runtime.call import Call, ToolOutcome
from deskpilot.runtime.context import ToolContext
from deskpilot.runtime.diagnostics import ActionOutcome, ObservationOutcome
from deskpilot.runtime.observation_tools import json_text
from deskpilot.runtime.preflight import check_may_act, require_desktop
from deskpilot.runtime.refusals import refusal
from deskpilot.runtime.state_view import app_label
from deskpilot.runtime.targets import list_windows
from deskpilot.runtime.tool_args import OpenAppArgs

_FIELD_CODES = {"%f", "%F", "%u", "%U", "%i", "%c", "%k", "%d", "%D", "%n", "%N", "%v", "%m"}
_CHROMIUMS = {"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}
_A11Y_FLAG = "--force-renderer-accessibility"
POLL_S = 0.1
#: how long a process that exited 0 may take to have a running instance show its window
HANDOVER_GRACE_S = 3.0

#: processes we started, kept so they are reaped when they exit
_children: list[subprocess.Popen[bytes]] = []


# ---------------------------------------------------------------------- resolution


def _data_dirs() -> list[Path]:
    home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local/share")
    dirs = os.environ.get("XDG_DATA_DIRS") or "/usr/local/share:/usr/share"
    return [Path(home), *(Path(d) for d in dirs.split(":") if d)]


def _desktop_files() -> Iterator[Path]:
    for base in _data_dirs():
        folder = base / "applications"
        if folder.is_dir():
            yield from sorted(folder.glob("*.desktop"))


def _desktop_file(app: str) -> Path | None:
    want = app.lower().removesuffix(".desktop")
    return next((f for f in _desktop_files() if f.stem.lower() == want), None)


@dataclass(frozen=True, slots=True)
class _Entry:
    argv: list[str]
    terminal: bool


def _read_entry(desktop: Path) -> _Entry | None:
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        parser.read(desktop, encoding="utf-8")
        exec_line = parser.get("Desktop Entry", "Exec", fallback="")
        argv = [a for a in shlex.split(exec_line) if a not in _FIELD_CODES]
    except (configparser.Error, ValueError, OSError):
        return None
    terminal = parser.get("Desktop Entry", "Terminal", fallback="false").strip().lower()
    return _Entry(argv, terminal == "true") if argv else None


def _program(name: str) -> str | None:
    if "/" in name:
        ok = os.path.isabs(name) and os.path.isfile(name) and os.access(name, os.X_OK)
        return os.path.normpath(name) if ok else None
    return shutil.which(name)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _listing_entry(program: str) -> Path | None:
    """A desktop entry whose Exec runs this very file (not merely one of the same name);
    an entry that runs it plainly (``mousepad %U``) wins over one with options
    (``mousepad --preferences``), so the desktop id is the application's own."""
    with_options: Path | None = None
    for f in _desktop_files():
        entry = _read_entry(f)
        if entry is None or entry.terminal:
            continue
        found = _program(entry.argv[0])
        if found is not None and _same_file(found, program):
            if len(entry.argv) == 1:
                return f
            with_options = with_options or f
    return with_options


def resolve_launch(app: str, extra: list[str]) -> LaunchRequest:
    """What ``app`` would start; nothing runs here, and a name that resolves to nothing is
    refused before the kernel sees it (there is no effect to govern)."""
    entry: Path | None
    entry_args: tuple[str, ...] = ()
    terminal = False
    via_entry = False
    if "/" in app:
        if not os.path.isabs(app):
            raise refusal(
                ErrorCode.INVALID_REQUEST, f"{app} is a relative path; give an absolute one."
            )
        program = _program(app)
        if program is None:
            raise refusal(ErrorCode.TARGET_NOT_FOUND, f"{app} is not an executable file.")
        entry = _listing_entry(program)
    elif (desktop := _desktop_file(app)) is not None:
        parsed = _read_entry(desktop)
        if parsed is None:
            raise refusal(ErrorCode.TARGET_NOT_FOUND, f"{desktop.name} has no Exec line.")
        found = _program(parsed.argv[0])
        if found is None:
            raise refusal(
                ErrorCode.TARGET_NOT_FOUND,
                f"{desktop.name} runs {parsed.argv[0]!r}, which is not installed.",
            )
        program, entry, via_entry = found, desktop, True
        entry_args, terminal = tuple(parsed.argv[1:]), parsed.terminal
    elif (found := shutil.which(app)) is not None:
        program = found
        entry = _listing_entry(program)
    else:
        raise refusal(
            ErrorCode.TARGET_NOT_FOUND,
            f"No desktop entry or executable named {app!r}. Use a desktop id such as "
            "org.gnome.Calculator, or an executable on PATH.",
        )
    own: tuple[str, ...] = ()
    if os.path.basename(program) in _CHROMIUMS and _A11Y_FLAG not in (*entry_args, *extra):
        own = (_A11Y_FLAG,)
    return LaunchRequest(
        app=app,
        program=program,
        entry_args=entry_args,
        agent_args=tuple(extra),
        own_args=own,
        entry=None if entry is None else str(entry),
        resolved_via_entry=via_entry,
        entry_terminal=terminal,
        desktop_id=None if entry is None else entry.stem,
    )


# ---------------------------------------------------------------------- running


def _spawn(argv: tuple[str, ...]) -> subprocess.Popen[bytes]:
    env = with_accessibility(os.environ)  # GTK 2 gets its bridge too (GTK_MODULES)
    try:
        proc = subprocess.Popen(
            list(argv),
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


def _started_as(program: str) -> frozenset[str]:
    """The names ``program`` runs as: its own and, through links, the file's
    (``/usr/bin/gimp`` is ``gimp-2.10``)."""
    return frozenset(os.path.basename(p).lower() for p in (program, os.path.realpath(program)))


def _runs_as(window: WindowInfo, names: frozenset[str]) -> bool:
    """Is ``window``'s process one of ``names``, also by its executable's unsuffixed name
    (``soffice`` runs as ``soffice.bin``: protocol/app_names.py)?"""
    return bool(names & executable_names(window.app.executable or ""))


class _Launch:
    """The two callbacks the kernel runs, and what they saw."""

    def __init__(self, ctx: ToolContext, call: Call, req: LaunchRequest, timeout_ms: int):
        self.ctx, self.call, self.req, self.timeout_ms = ctx, call, req, timeout_ms
        self.proc: subprocess.Popen[bytes] | None = None
        self.before: set[str] = set()
        self.window: WindowInfo | None = None

    def spawn(self, argv: tuple[str, ...]) -> int:
        self.proc = _spawn(argv)
        self.call.dispatched = True
        self.call.diag.action_outcome = ActionOutcome.CALL_RETURNED
        sess = self.ctx.sessions.get(self.call.agent_session)
        if sess is not None:
            sess.steps += 1
            sess.consecutive_noops = 0
        return self.proc.pid

    async def watch(self, pid: int) -> LaunchReport:
        assert self.proc is not None and self.proc.pid == pid
        try:
            async with asyncio.timeout(self.timeout_ms / 1000.0):
                found = await self._wait()
        except TimeoutError:
            code = self.proc.poll()
            return LaunchReport(exit_code=code, running=code is None)
        if isinstance(found, int):
            return LaunchReport(exit_code=found)
        self.window = found
        return LaunchReport(window_id=found.window_id, exit_code=self.proc.poll())

    async def _wait(self) -> WindowInfo | int:
        """The first accessible window of the process (or of its running instance), or its
        exit status when it exited without one."""
        ctx, call, proc = self.ctx, self.call, self.proc
        assert call.session_id is not None and proc is not None
        exe = _started_as(self.req.program)
        exited_at: float | None = None
        while True:
            windows = await list_windows(ctx, call)
            mine = [w for w in windows if w.app.pid == proc.pid]
            code = proc.poll()
            if not mine and code is not None:
                if code != 0:
                    return code
                exited_at = exited_at or time.monotonic()
                if time.monotonic() - exited_at > HANDOVER_GRACE_S:
                    return code
                # handed over to a running instance: a new window of the same executable
                mine = [w for w in windows if w.window_id not in self.before and _runs_as(w, exe)]
            for w in mine:
                if not w.visible or w.minimized:
                    continue
                with contextlib.suppress(DeskpilotError):
                    with call.watch.stage("rpc"):
                        seen = await ctx.kernel.observe(
                            call.session_id,
                            TargetSpec(window_id=w.window_id),
                            include_screenshot=False,
                        )
                    if seen.observation.element_count > 0:  # its tree is there, not just a frame
                        return w
            await asyncio.sleep(POLL_S)


async def open_app(ctx: ToolContext, call: Call, args: OpenAppArgs) -> ToolOutcome:
    turn = call.turn
    call.diag.action_outcome = ActionOutcome.NOT_DISPATCHED
    check_may_act(ctx, call)
    if turn.recovery is not None:
        turn.recovery.check("open_app", None)
    turn.budget.admit_action()
    await require_desktop(ctx, call, acting=True)
    req = resolve_launch(args.app, args.args)
    launch = _Launch(ctx, call, req, args.timeout_ms)
    launch.before = {w.window_id for w in await list_windows(ctx, call)}
    async with ctx.sessions.using(call.agent_session) as sess:
        call.session_id = sess.session_id
        sess.check_contract()
        try:
            result = await ctx.kernel.launch(sess.session_id, req, launch.spawn, launch.watch)
        except DeskpilotError as exc:
            raise _explain(exc, req, launch) from None
    call.watch.add("approval", result.approval_ms / 1000.0)
    return _answer(call, req, launch, result)


def _explain(exc: DeskpilotError, req: LaunchRequest, launch: _Launch) -> DeskpilotError:
    """The kernel's refusal in words about this launch (codes and reasons unchanged)."""
    name = os.path.basename(req.program)
    if launch.proc is not None:  # it was started; only the wait for its window ended
        pid = launch.proc.pid
        if exc.code in (ErrorCode.SESSION_CANCELED, ErrorCode.SESSION_NOT_EXECUTABLE):
            why = f"the session stopped accepting actions ({exc.code.value})"
        else:
            why = f"waiting for its window failed ({exc.code.value})"
        return refusal(
            exc.code,
            f"{name} was started (pid {pid}), then {why} before its window was seen. The "
            "process may still be running: call list_apps rather than starting it again.",
            pid=pid,
        )
    if exc.code is ErrorCode.ACTION_BLOCKED:
        d = exc.details
        reason, rating = str(d.get("reason", "")), str(d.get("rating", ""))
        risk = str(d.get("risk", ""))
        why = {
            "launch_restricted": f"{name} is a {rating.replace('_', ' ')}: starting it is {risk} "
            "and refused unless allowedApps names it. Ask the user to do this step or to "
            "allow it; use a desktop application instead.",
            "forbidden_action": f"the task contract forbids it ({d.get('entry', '')}).",
            "app_not_allowed": f"{name} is not in allowedApps ({d.get('source', '')}).",
        }.get(reason, f"{reason}.")
        return refusal(
            exc.code,
            f"open_app {req.app} was refused by policy: {why}",
            reason=reason,
            risk=risk,
            rating=rating,
            program=name,
        )
    if exc.code is ErrorCode.APPROVAL_DENIED:
        reason = str(exc.details.get("reason", "confirmation_denied"))
        if reason == "confirmation_expired":
            said = (
                f"Starting {name} needs the user's confirmation, which expired unanswered "
                f"({reason}). Nothing was started; asking again later is fine if the user "
                "still wants it."
            )
        else:
            said = (
                f"Starting {name} needs the user's confirmation; the person denied it "
                f"({reason}). Nothing was started. Do not retry it unchanged."
            )
        return refusal(exc.code, said, reason=reason)
    return exc


def _answer(call: Call, req: LaunchRequest, launch: _Launch, result: LaunchResult) -> ToolOutcome:
    report, pid = result.report, result.pid
    name = os.path.basename(req.program)
    risk = result.decision.risk.label
    window = launch.window
    if window is None:
        if report.exit_code is not None:
            raise refusal(
                ErrorCode.ACTION_FAILED,
                f"{name} was started (pid {pid}) and exited with status {report.exit_code} "
                "before showing a window. It did run: whatever it does without a window has "
                "happened. Do not start it again to check.",
                pid=pid,
                exitCode=report.exit_code,
                risk=risk,
            )
        raise refusal(
            ErrorCode.TARGET_NOT_FOUND,
            f"{name} was started (pid {pid}) and is still running, but showed no accessible "
            f"window within {launch.timeout_ms} ms. Call list_apps later rather than starting "
            "it again.",
            pid=pid,
            risk=risk,
        )
    call.diag.observation_outcome = ObservationOutcome.NOT_REUSABLE
    entry = next((a for a in group_apps([window]) if a.pid == window.app.pid), None)
    data = {
        "launched": True,
        "pid": pid,
        "app": entry.to_json() if entry else None,
        "window": {"windowId": window.window_id, "title": window.title},
        "risk": risk,
        "rating": result.decision.details.get("rating"),
        "actionId": result.action_id,
        "next": f'call get_app_state {{"app": {window.app.pid}}}',
    }
    return ToolOutcome(
        text=json_text(data) + f"\nOpened {app_label(window.app)}.", diagnostic=call.diag
    )
