"""A private virtual desktop: Xvfb + a private D-Bus session bus + the AT-SPI bus.

Used by the test suite (as a session fixture), by ``scripts/run`` on headless machines and by
people via ``deskpilot desktop up|down|env``. Each process is started in its own process group
and recorded by pid, so ``down`` ends exactly what ``up`` started and nothing else.

The state file ``up`` writes is also the marker of a *private* desktop: the kernel's
``environments`` rule (kernel/broker/admission.py) asks :func:`is_private_display` whether the
display it acts on is one of these. A display is private only while its state file exists and
the Xvfb recorded there is still the very process ``up`` started (pid and start time), so a
stale file or a recycled display number never makes the person's own display look private.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Coroutine
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from deskpilot.desktop.a11y_env import ACCESSIBILITY_ENV, gtk_modules


class DesktopError(RuntimeError):
    """The virtual desktop could not be started or found."""


@dataclass
class DesktopState:
    display: str
    dbus_address: str
    width: int
    height: int
    pids: dict[str, int] = field(default_factory=dict)
    started_at: float = field(default_factory=time.time)
    #: each process's start time (clock ticks since boot): a recycled pid is not ours
    starts: dict[str, int] = field(default_factory=dict)

    def running(self) -> bool:
        """Its X server is still the process ``up`` started."""
        pid = self.pids.get("xvfb")
        return pid is not None and _same_process(pid, self.starts.get("xvfb"))

    @property
    def env(self) -> dict[str, str]:
        return {
            "DISPLAY": self.display,
            "DBUS_SESSION_BUS_ADDRESS": self.dbus_address,
            # GTK 2/3/4, Qt, Chromium and Firefox read these to decide whether to export an
            # accessibility tree (desktop/a11y_env.py); GTK 2 loads its bridge by GTK_MODULES
            **ACCESSIBILITY_ENV,
            "GTK_MODULES": gtk_modules(None),
            "XDG_SESSION_TYPE": "x11",
        }

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "env": self.env}


def _state_root() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"deskpilot-{os.getuid()}" / "desktops"


def state_dir() -> Path:
    d = _state_root()
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    return d


def _state_file(display: str) -> Path:
    return state_dir() / f"{display.lstrip(':')}.json"


def _require(binary: str) -> str:
    path = shutil.which(binary)
    if path is None:
        for prefix in ("/usr/libexec", "/usr/lib/at-spi2-core", "/usr/lib/at-spi2"):
            candidate = Path(prefix) / binary
            if candidate.exists():
                return str(candidate)
        raise DesktopError(f"{binary} not found; install it (scripts/run installs it on Debian)")
    return path


def _spawn(argv: list[str], env: dict[str, str], **kw: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        argv,
        env=env,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # own process group: down() ends it and its children only
        **kw,
    )


def _start_xvfb(width: int, height: int, env: dict[str, str]) -> tuple[str, int]:
    read_fd, write_fd = os.pipe()
    argv = [
        _require("Xvfb"),
        "-displayfd",
        str(write_fd),
        "-screen",
        "0",
        f"{width}x{height}x24",
        "-nolisten",
        "tcp",
        "+extension",
        "XTEST",
        "+extension",
        "MIT-SHM",
        "-dpi",
        "96",
        # no reset when the last client leaves: that would drop the root window's
        # properties, the accessibility bus's address among them (desktop/a11y.py)
        "-noreset",
    ]
    proc = _spawn(argv, env, stdout=subprocess.DEVNULL, pass_fds=(write_fd,))
    os.close(write_fd)
    buf = b""
    deadline = time.monotonic() + 15
    with os.fdopen(read_fd, "rb") as r:
        while not buf.endswith(b"\n"):
            if time.monotonic() > deadline or proc.poll() is not None:
                _kill_group(proc.pid)
                raise DesktopError("Xvfb did not report a display number")
            chunk = r.read(1)
            if not chunk:
                _kill_group(proc.pid)
                raise DesktopError("Xvfb exited before reporting a display number")
            buf += chunk
    return f":{int(buf.strip())}", proc.pid


def _start_dbus(env: dict[str, str]) -> tuple[str, int]:
    proc = _spawn(
        [_require("dbus-daemon"), "--session", "--nofork", "--nopidfile", "--print-address=1"],
        env,
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().decode().strip()
    proc.stdout.close()
    if not line:
        _kill_group(proc.pid)
        raise DesktopError("dbus-daemon did not print its address")
    return line, proc.pid


def up(
    width: int = 1280, height: int = 800, *, wm: str | None = None, timeout: float = 20.0
) -> DesktopState:
    """Start the desktop and return its state (also written to the state dir)."""
    base_env = dict(os.environ)
    display, xvfb_pid = _start_xvfb(width, height, base_env)
    pids = {"xvfb": xvfb_pid}
    try:
        env = {**base_env, "DISPLAY": display}
        dbus_address, dbus_pid = _start_dbus(env)
        pids["dbus"] = dbus_pid
        state = DesktopState(display, dbus_address, width, height, pids)
        env.update(state.env)
        launcher = _spawn(
            [_require("at-spi-bus-launcher"), "--launch-immediately"],
            env,
            stdout=subprocess.DEVNULL,
        )
        pids["at_spi"] = launcher.pid
        _run(_prepare_a11y(display, dbus_address, timeout))
        if wm:
            pids["wm"] = _spawn([_require(wm)], env, stdout=subprocess.DEVNULL).pid
    except BaseException:
        for pid in pids.values():
            _kill_group(pid)
        raise
    for name, pid in pids.items():
        started = _start_time(pid)
        if started is not None:
            state.starts[name] = started
    _state_file(display).write_text(json.dumps(state.to_json()))
    return state


def _run(coro: Coroutine[Any, Any, None]) -> None:
    """Run ``coro`` to the end, also when this thread already runs an event loop (a caller
    inside async code, or Playwright's sync API in a test): then on a private loop in a worker
    thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(coro)
        return
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, coro).result()


async def _prepare_a11y(display: str, dbus_address: str, timeout: float) -> None:
    # imported here: the kernel imports this module for is_private_display on every action,
    # and must not load D-Bus for it
    from deskpilot.desktop.a11y import announce_on_display, enable_accessibility, wait_for_a11y_bus

    # no auto-start: the launcher recorded in ``pids`` must be the one that owns org.a11y.Bus
    address = await wait_for_a11y_bus(dbus_address, timeout, auto_start=False)
    await enable_accessibility(dbus_address)
    announce_on_display(display, address)


def _group_running(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs. A member that ended but is not reaped
    yet (a zombie) does not count: it holds no display, socket or bus, only its pid. The
    at-spi launcher's own dbus-daemon is one: when the launcher ends first, the daemon is
    re-parented to init, and an init that reaps slowly (1.3–2 s seen on this machine's)
    kept ``killpg(pgid, 0)`` answering long after everything had ended."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return True
    return False


def _kill_group(pid: int, grace: float = 2.0) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        if not _group_running(pid):
            break
        time.sleep(0.02)
    else:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def load(display: str | None = None, *, prefer: str | None = None) -> DesktopState:
    """The state of a running desktop started by ``up``: by display, or the only one.

    A desktop whose X server died without ``down`` is ended (what is left of it, pids
    checked against their start times) and its record removed on sight. With no display
    named and several desktops up (a test suite's, another agent's), nothing is guessed:
    only ``prefer`` (the caller's own ``$DISPLAY``, for read-only uses) picks among them,
    when it names one of them exactly.
    """
    if display is not None and not _DISPLAY.fullmatch(display):
        raise DesktopError(f"{display!r} is not a display like :1")
    files = [_state_file(display)] if display else sorted(state_dir().glob("*.json"))
    live: list[DesktopState] = []
    for f in files:
        try:
            data = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        data.pop("env", None)
        state = DesktopState(**data)
        if state.running():
            live.append(state)
        else:  # its X server died: end what is left of it (pids checked), forget it
            down(state)
            with contextlib.suppress(FileNotFoundError):
                f.unlink()
    if display and not live:
        raise DesktopError(f"no deskpilot desktop is running on {display}")
    if not live:
        raise DesktopError("no deskpilot desktop is up")
    if len(live) > 1:
        mine = [s for s in live if display is None and prefer and s.display == prefer]
        if mine:
            return mine[0]
        shown = ", ".join(s.display for s in live)
        raise DesktopError(f"several deskpilot desktops are up ({shown}): name one with --display")
    return live[0]


def down(state: DesktopState) -> list[str]:
    """End exactly the processes ``up`` started (in reverse order); returns their names."""
    ended = []
    for name in ("wm", "at_spi", "dbus", "xvfb"):
        pid = state.pids.get(name)
        if pid and _same_process(pid, state.starts.get(name)):
            _kill_group(pid)
            ended.append(name)
    with contextlib.suppress(FileNotFoundError):
        _state_file(state.display).unlink()
    return ended


_DISPLAY = re.compile(r":\d{1,5}")
#: a local display name as X clients spell it: ``:5``, ``:5.0``, ``unix:5``
_LOCAL_DISPLAY = re.compile(r"(?:unix)?(:\d{1,5})(?:\.\d+)?")


def is_private_display(display: str | None) -> bool:
    """Whether ``display`` (a ``DISPLAY`` value) is a private desktop ``up`` started and still
    runs: its state file exists and names an Xvfb that is alive and not a recycled pid.

    Read-only and cheap (one small file and one ``/proc`` read), so it may run on every
    action; unlike :func:`load` it never ends or forgets anything. A TCP display
    (``host:5``) is never private: ``up`` starts Xvfb with ``-nolisten tcp``.
    """
    if not display:
        return False
    m = _LOCAL_DISPLAY.fullmatch(display.strip())
    if m is None:
        return False
    path = _state_root() / f"{m.group(1).lstrip(':')}.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(data, dict) or data.get("display") != m.group(1):
        return False
    pids, starts = data.get("pids"), data.get("starts")
    if not isinstance(pids, dict) or not isinstance(starts, dict):
        return False
    pid, started = pids.get("xvfb"), starts.get("xvfb")
    if not isinstance(pid, int) or not isinstance(started, int):
        return False  # no recorded start time: a recycled pid could not be told apart
    return _same_process(pid, started)


def _start_time(pid: int) -> int | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return None if fields[0] in ("Z", "X") else int(fields[19])  # a zombie is not up
    except (OSError, IndexError, ValueError):
        return None


def _same_process(pid: int, started: int | None) -> bool:
    """Alive, and (when its start time was recorded) not a recycled pid."""
    now = _start_time(pid)
    if now is None:
        return False
    return started is None or now == started
