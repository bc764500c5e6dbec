"""A private Wayland desktop: headless Mutter with PipeWire, on a private session bus.

``deskpilot desktop up --wayland`` starts, each in its own process group and recorded by pid
(as the X11 desktop in :mod:`.virtual` is):

* a private ``XDG_RUNTIME_DIR`` (mode 0700: the Wayland and PipeWire sockets live there) and a
  private D-Bus session bus;
* the AT-SPI bus launcher, with accessibility turned on before any app starts;
* ``pipewire`` and ``wireplumber`` (Mutter hands its screen casts out as PipeWire streams);
* ``mutter --headless --wayland --no-x11 --virtual-monitor WxH``: a compositor with one
  virtual monitor, no GPU needed, and no X server at all — apps run as native Wayland clients
  (``GDK_BACKEND=wayland``, ``QT_QPA_PLATFORM=wayland``, ``MOZ_ENABLE_WAYLAND=1`` in
  :attr:`WaylandDesktop.env`). It owns ``org.gnome.Mutter.ScreenCast`` and
  ``org.gnome.Mutter.RemoteDesktop`` on the private bus: frames and input
  (host/wayland/mutter_session.py).

``up`` returns once the Wayland socket exists and Mutter owns both names. ``down`` ends exactly
what ``up`` started and removes the runtime directory. Records live in ``wayland/`` under the
X11 desktops' state directory (their own names: an X11 desktop's tools never read them).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

from deskpilot.desktop.a11y_env import ACCESSIBILITY_ENV
from deskpilot.desktop.virtual import (
    DesktopError,
    _kill_group,
    _require,
    _run,
    _same_process,
    _spawn,
    _start_dbus,
    _start_time,
    state_dir,
)

#: what Mutter must own on the bus before the desktop is up
MUTTER_NAMES: Final = ("org.gnome.Mutter.ScreenCast", "org.gnome.Mutter.RemoteDesktop")
#: the processes, in the order ``up`` starts them (``down`` ends them in reverse)
ORDER: Final = ("dbus", "at_spi", "pipewire", "wireplumber", "mutter")
#: the desktop's record kept in its own runtime directory too
RECORD_IN_RUNTIME: Final = "deskpilot-wayland.json"


@dataclass
class WaylandDesktop:
    """A running private Wayland desktop (what ``up`` recorded)."""

    name: str  # the Wayland display: its socket's name in ``runtime_dir``
    runtime_dir: str
    dbus_address: str
    width: int
    height: int
    pids: dict[str, int] = field(default_factory=dict)
    starts: dict[str, int] = field(default_factory=dict)
    started_at: float = field(default_factory=time.time)

    @property
    def env(self) -> dict[str, str]:
        """What an app (or deskpilot) needs to run on it. ``DISPLAY`` is not in it: there is
        no X server, and a caller must drop its own (:func:`app_env`)."""
        return {
            "WAYLAND_DISPLAY": self.name,
            "XDG_RUNTIME_DIR": self.runtime_dir,
            "DBUS_SESSION_BUS_ADDRESS": self.dbus_address,
            "XDG_SESSION_TYPE": "wayland",
            "GDK_BACKEND": "wayland",
            "QT_QPA_PLATFORM": "wayland",
            "MOZ_ENABLE_WAYLAND": "1",
            **ACCESSIBILITY_ENV,
        }

    def running(self) -> bool:
        """Its Mutter is still the process ``up`` started."""
        pid = self.pids.get("mutter")
        return pid is not None and _same_process(pid, self.starts.get("mutter"))

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "env": self.env}


def app_env(desktop: WaylandDesktop, base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (the caller's environment) for a process on ``desktop``: its variables set,
    ``DISPLAY`` dropped (an app that finds one may open an X11 window elsewhere)."""
    env = dict(os.environ if base is None else base)
    env.pop("DISPLAY", None)
    env.update(desktop.env)
    return env


def _records(*, create: bool = True) -> Path:
    if not create:  # (``down`` from inside the desktop's environment: not in its runtime dir)
        base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
        return Path(base) / f"deskpilot-{os.getuid()}" / "desktops" / "wayland"
    d = state_dir() / "wayland"
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    return d


def up(width: int = 1280, height: int = 800, *, timeout: float = 30.0) -> WaylandDesktop:
    """Start the desktop (see the module docstring) and return its record."""
    mutter = _require("mutter")
    runtime = tempfile.mkdtemp(prefix="deskpilot-wl-")
    os.chmod(runtime, 0o700)
    name = f"deskpilot-{Path(runtime).name.rsplit('-', 1)[-1]}"
    base = {**os.environ, "XDG_RUNTIME_DIR": runtime}
    base.pop("DISPLAY", None)
    base.pop("WAYLAND_DISPLAY", None)
    pids: dict[str, int] = {}
    try:
        address, pids["dbus"] = _start_dbus(base)
        desktop = WaylandDesktop(name, runtime, address, width, height, pids)
        env = app_env(desktop, base)
        pids["at_spi"] = _spawn(
            [_require("at-spi-bus-launcher"), "--launch-immediately"],
            env,
            stdout=subprocess.DEVNULL,
        ).pid
        _run(_prepare_a11y(address, timeout))
        pids["pipewire"] = _spawn([_require("pipewire")], env, stdout=subprocess.DEVNULL).pid
        pids["wireplumber"] = _spawn([_require("wireplumber")], env, stdout=subprocess.DEVNULL).pid
        argv = [mutter, "--headless", "--wayland", "--no-x11"]
        argv += ["--virtual-monitor", f"{width}x{height}", "--wayland-display", name]
        pids["mutter"] = _spawn(argv, env, stdout=subprocess.DEVNULL).pid
        _run(_until_mutter(desktop, timeout))
    except BaseException:
        for key in reversed(ORDER):
            if key in pids:
                _kill_group(pids[key])
        shutil.rmtree(runtime, ignore_errors=True)
        raise
    for key, pid in pids.items():
        started = _start_time(pid)
        if started is not None:
            desktop.starts[key] = started
    record = json.dumps(desktop.to_json())
    (_records() / f"{name}.json").write_text(record)
    # also in its own runtime directory: a shell that took the desktop's environment (its
    # XDG_RUNTIME_DIR with it) finds the desktop there, and so can end it
    (Path(runtime) / RECORD_IN_RUNTIME).write_text(record)
    return desktop


async def _prepare_a11y(address: str, timeout: float) -> None:
    from deskpilot.desktop.a11y import enable_accessibility, wait_for_a11y_bus

    await wait_for_a11y_bus(address, timeout, auto_start=False)
    await enable_accessibility(address)


async def _until_mutter(desktop: WaylandDesktop, timeout: float) -> None:
    """Until the Wayland socket exists and Mutter owns its D-Bus names; DesktopError when
    Mutter ended or did not come up in ``timeout`` s."""
    from dbus_fast import Message
    from dbus_fast.aio import MessageBus

    socket = Path(desktop.runtime_dir) / desktop.name
    deadline = time.monotonic() + timeout
    bus = await MessageBus(bus_address=desktop.dbus_address).connect()
    try:
        while True:
            reply = await bus.call(
                Message(
                    destination="org.freedesktop.DBus",
                    path="/org/freedesktop/DBus",
                    interface="org.freedesktop.DBus",
                    member="ListNames",
                )
            )
            names = set(reply.body[0]) if reply is not None and reply.body else set()
            if socket.exists() and all(n in names for n in MUTTER_NAMES):
                return
            pid = desktop.pids["mutter"]
            if not _same_process(pid, None) or time.monotonic() > deadline:
                raise DesktopError(
                    "mutter did not come up (its Wayland socket and its ScreenCast and "
                    f"RemoteDesktop services) within {timeout:g} s"
                )
            await asyncio.sleep(0.05)
    finally:
        bus.disconnect()


def down(desktop: WaylandDesktop) -> list[str]:
    """End exactly the processes ``up`` started (in reverse order) and remove the runtime
    directory; returns the names of those it ended."""
    ended = []
    for key in reversed(ORDER):
        pid = desktop.pids.get(key)
        if pid and _same_process(pid, desktop.starts.get(key)):
            _kill_group(pid)
            ended.append(key)
    with contextlib.suppress(FileNotFoundError):
        (_records(create=False) / f"{desktop.name}.json").unlink()
    if Path(desktop.runtime_dir).name.startswith("deskpilot-wl-"):
        shutil.rmtree(desktop.runtime_dir, ignore_errors=True)
    return ended


def load(name: str | None = None) -> WaylandDesktop:
    """A running Wayland desktop by its name, or the only one; one whose Mutter died is
    ended and forgotten on sight."""
    live: list[WaylandDesktop] = []
    files = sorted(_records().glob("*.json"))
    own = Path(os.environ.get("XDG_RUNTIME_DIR") or "/nonexistent") / RECORD_IN_RUNTIME
    if own.exists():  # this shell took a Wayland desktop's environment
        files.append(own)
    seen: set[str] = set()
    for f in files:
        try:
            data = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        data.pop("env", None)
        desktop = WaylandDesktop(**data)
        if desktop.name in seen:
            continue
        seen.add(desktop.name)
        if desktop.running():
            live.append(desktop)
        else:
            down(desktop)
    if name is not None:
        live = [d for d in live if d.name == name]
    if not live:
        raise DesktopError(
            f"no deskpilot Wayland desktop {name} is running"
            if name
            else "no deskpilot Wayland desktop is up"
        )
    if len(live) > 1:
        shown = ", ".join(d.name for d in live)
        raise DesktopError(f"several Wayland desktops are up ({shown}): name one with --name")
    return live[0]
