"""A GTK 3 window and a Qt 6 window that change on command, and finding an app's window, for
the host tests (one kit, not copies).

tests/host/mutating_gtk_app.py and mutating_qt_app.py run under the system python3 (GTK 3
comes from Debian's gi, Qt 6 from Debian's python3-pyqt6, not the venv): each line on its
stdin makes up to that many random changes (seeded) and it answers ``ok N``.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path

import pytest

from deskpilot.host.atspi import AtspiClient, FrameInfo

GTK_APP = Path(__file__).with_name("mutating_gtk_app.py")
QT_APP = Path(__file__).with_name("mutating_qt_app.py")
SYSTEM_PYTHON = "/usr/bin/python3"


def has_gtk3() -> bool:
    probe = "import gi; gi.require_version('Gtk', '3.0'); from gi.repository import Gtk"
    return (
        os.path.exists(SYSTEM_PYTHON)
        and subprocess.run([SYSTEM_PYTHON, "-c", probe], capture_output=True).returncode == 0
    )


needs_gtk3 = pytest.mark.skipif(not has_gtk3(), reason="the system python3 has no GTK 3 gi")


def has_module(module: str) -> bool:
    """Whether the system python3 can import ``module`` (Debian's python3-pyqt6/-pyqt5)."""
    if not os.path.exists(SYSTEM_PYTHON):
        return False
    probe = subprocess.run([SYSTEM_PYTHON, "-c", f"import {module}"], capture_output=True)
    return probe.returncode == 0


needs_qt6 = pytest.mark.skipif(
    not has_module("PyQt6.QtWidgets"), reason="the system python3 has no PyQt6"
)
needs_qt5 = pytest.mark.skipif(
    not has_module("PyQt5.QtWidgets"), reason="the system python3 has no PyQt5"
)


class MutatingWindow:
    """The running app: ``send`` a line, wait for its ``ok``."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.steps = 0

    @property
    def pid(self) -> int:
        return self.proc.pid

    async def send(self, line: str) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{line}\n".encode())
        await self.proc.stdin.drain()
        self.steps += 1
        answer = await asyncio.wait_for(self.proc.stdout.readline(), 10)
        assert answer.decode().split() == ["ok", str(self.steps)], answer


async def start_gtk(seed: int = 7) -> MutatingWindow:
    return await _start(GTK_APP, seed)


async def start_qt(seed: int = 7) -> MutatingWindow:
    """The Qt twin (tests/host/mutating_qt_app.py), same protocol."""
    return await _start(QT_APP, seed)


async def _start(script: Path, seed: int) -> MutatingWindow:
    env = dict(
        os.environ,
        NO_AT_BRIDGE="0",
        GTK_A11Y="atspi",
        ACCESSIBILITY_ENABLED="1",
        QT_LINUX_ACCESSIBILITY_ALWAYS_ON="1",
        QT_QPA_PLATFORM="xcb",
    )
    proc = await asyncio.create_subprocess_exec(
        SYSTEM_PYTHON,
        str(script),
        str(seed),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    return MutatingWindow(proc)


async def stop(window: MutatingWindow) -> None:
    if window.proc.returncode is None:
        window.proc.kill()
    await window.proc.wait()


async def frame_titled(client: AtspiClient, pid: int, title: str, timeout: float = 45) -> FrameInfo:
    """The app's visible window whose title starts with ``title``."""
    deadline = time.monotonic() + timeout
    while True:
        for f in await client.frames(pid=pid):
            if f.title.startswith(title) and {"visible", "showing"} & f.states:
                return f
        if time.monotonic() > deadline:
            raise AssertionError(f"no window {title!r}")
        await asyncio.sleep(0.1)
