"""A task's setup on its private desktop: files in its directory, then its apps.

Every launch is resolved the way ``open_app`` resolves an app (runtime/open_app.py) and
decided by the same launch policy (kernel/policy/launch_rules.py): a shell, an interpreter, a
program that runs another program, a terminal given a command — anything the policy denies —
is refused and the task is not run. What ``open_app`` would ask the person to confirm (an app
started with arguments, L3) runs: the person confirmed it by running this suite.

Nothing runs through a shell: the argv is the suite's, as written. The app gets the task's
environment only — the private desktop's ``DISPLAY`` and D-Bus address, the task's own config,
cache and data dirs — and after it started, its ``DISPLAY`` is read back from
``/proc/PID/environ``: an app that would be on any other display is ended and the setup
refused, so a suite never reaches the person's own screen.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deskpilot.desktop.apps import CHROMIUM_FLAGS, wait_accessible
from deskpilot.eval import procfs
from deskpilot.eval.suite import LaunchSpec, TaskSetup
from deskpilot.kernel.policy.launch_rules import LaunchRequest, evaluate_launch
from deskpilot.protocol.errors import DeskpilotError
from deskpilot.protocol.session import Decision, TaskContract
from deskpilot.runtime.open_app import resolve_launch
from deskpilot.store.settings import SettingsModel

#: how long an app may take to show on the accessibility bus; it is started once more when
#: it never does (a GTK app that loses the race with the registry at start stays invisible
#: for good, seen now and then on a loaded 2-core machine — desktop/apps.py)
APP_TIMEOUT_S = 15.0


class SetupRefused(RuntimeError):
    """The setup cannot run (the launch policy denied it, an app is missing or never showed)."""


@dataclass
class Launched:
    app: str
    pid: int
    proc: subprocess.Popen[bytes]
    rating: str
    risk: str
    #: the ``DISPLAY`` the process really runs with (read from /proc)
    display: str | None

    def record(self) -> dict[str, Any]:
        return {
            "app": self.app,
            "pid": self.pid,
            "risk": self.risk,
            "rating": self.rating,
            "display": self.display,
        }


@dataclass
class SetupResult:
    launched: list[Launched] = field(default_factory=list)

    def stop(self) -> None:
        """End every app the setup started (its process group), newest first."""
        for app in reversed(self.launched):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(app.pid, signal.SIGTERM)
        for app in reversed(self.launched):
            try:
                app.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(app.pid, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    app.proc.wait(timeout=5)


def decide(request: LaunchRequest) -> tuple[str, str]:
    """The launch policy's verdict on a setup launch: (risk label, rating), or refused."""
    decision = evaluate_launch(request, TaskContract(), SettingsModel())
    rating = str(decision.details.get("rating") or "")
    if decision.decision is Decision.DENY:
        why = ", ".join(decision.context.signals) or str(decision.reason)
        raise SetupRefused(
            f"the launch policy refuses {request.executable} ({decision.risk.label}: {why}); "
            "a suite starts apps, not shells, interpreters or command runners"
        )
    return decision.risk.label, rating


def write_files(setup: TaskSetup, work: Path) -> None:
    for f in setup.files:
        target = work / f.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f.text, "utf-8")


def chromium_launch(url: str, work: Path, width: int, height: int) -> LaunchSpec:
    """The page opened in Chromium with the closed-network flags and a throwaway profile."""
    binary = "chromium" if shutil.which("chromium") else "chromium-browser"
    args = [
        *CHROMIUM_FLAGS,
        f"--user-data-dir={work.parent / 'chromium-profile'}",
        f"--window-size={width},{height}",
        url,
    ]
    return LaunchSpec(app=binary, args=args)


def launch_one(spec: LaunchSpec, env: Mapping[str, str], work: Path, display: str) -> Launched:
    """Resolve, decide, start and check one app (started twice at most when it never shows
    on the accessibility bus); raises :class:`SetupRefused`."""
    try:
        request = resolve_launch(spec.app, list(spec.args))
    except DeskpilotError as exc:
        raise SetupRefused(f"{spec.app}: {exc.message}") from None
    risk, rating = decide(request)
    for attempt in (1, 2):
        try:
            return _start(spec, request, risk, rating, env, work, display)
        except _Invisible:
            if attempt == 2:
                raise SetupRefused(f"{spec.app} never appeared on the accessibility bus") from None
    raise AssertionError("unreachable")


class _Invisible(Exception):
    pass


def _start(
    spec: LaunchSpec,
    request: LaunchRequest,
    risk: str,
    rating: str,
    env: Mapping[str, str],
    work: Path,
    display: str,
) -> Launched:
    stdout: Any = subprocess.DEVNULL
    if spec.stdout is not None:
        out_path = work / spec.stdout
        out_path.parent.mkdir(parents=True, exist_ok=True)
        stdout = out_path.open("wb")
    try:
        proc = subprocess.Popen(
            list(request.argv),
            env=dict(env),
            cwd=work,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError as exc:
        raise SetupRefused(f"{spec.app} could not be started: {exc.strerror or exc}") from None
    finally:
        if stdout is not subprocess.DEVNULL:
            stdout.close()
    launched = Launched(spec.app, proc.pid, proc, rating, risk, None)
    launched.display = _wait_display(proc)
    if launched.display != display:
        _end(proc)
        raise SetupRefused(
            f"{spec.app} runs on display {launched.display!r}, not the task's own {display}"
        )
    if spec.wait_accessible:
        try:
            wait_accessible(
                pid=proc.pid,
                timeout=APP_TIMEOUT_S,
                session_address=env["DBUS_SESSION_BUS_ADDRESS"],
            )
        except TimeoutError:
            _end(proc)
            raise _Invisible from None
    return launched


def _wait_display(proc: subprocess.Popen[bytes]) -> str | None:
    """/proc/PID/environ is readable once the exec happened; a moment after the spawn."""
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline and proc.poll() is None:
        shown = procfs.display_of(proc.pid)
        if shown is not None:
            return shown
        time.sleep(0.02)
    return procfs.display_of(proc.pid)


def _end(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def run_setup(
    setup: TaskSetup,
    env: Mapping[str, str],
    work: Path,
    *,
    width: int,
    height: int,
) -> SetupResult:
    """Files, then each launch, then the page; on a refusal what was started is ended."""
    display = env.get("DISPLAY")
    if not display or not env.get("DBUS_SESSION_BUS_ADDRESS"):
        raise SetupRefused("the task has no private desktop (DISPLAY / D-Bus unset)")
    write_files(setup, work)
    result = SetupResult()
    launches = list(setup.launch)
    if setup.open_url is not None:
        launches.append(chromium_launch(setup.open_url, work, width, height))
    try:
        for spec in launches:
            result.launched.append(launch_one(spec, env, work, display))
    except BaseException:
        result.stop()
        raise
    return result
