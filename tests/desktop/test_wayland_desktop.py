"""The private Wayland desktop (headless Mutter with PipeWire) and what the host has of
Wayland so far: frames and input through Mutter's own D-Bus APIs (docs/wayland.md).

One desktop for the module (`deskpilot desktop up --wayland`), a native Wayland GTK 4
gnome-calculator on it (no X server at all): its tree is read over AT-SPI as under X11, a
frame of the monitor and one of its window come over PipeWire, and 7 × 6 = 42 is worked out
by a click on "7" aimed through the window's stream (its accessible coordinates are relative
to the window under Wayland) and keys sent as keysyms ("*" needs Shift on a US layout).
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from deskpilot.desktop import apps
from deskpilot.desktop import wayland as wdesk
from deskpilot.host.atspi import AtspiClient, FrameInfo
from deskpilot.host.wayland.frames import window_box
from deskpilot.host.wayland.mutter_session import MutterSession

DESKPILOT = [sys.executable, "-m", "deskpilot.cli.main"]
NEEDED = ("mutter", "pipewire", "wireplumber", "gst-launch-1.0", "gnome-calculator")
pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        any(shutil.which(b) is None for b in NEEDED),
        reason=f"needs {', '.join(NEEDED)} (scripts/test installs them)",
    ),
]


@pytest.fixture(scope="module")
def desktop() -> Iterator[wdesk.WaylandDesktop]:
    wl = wdesk.up()
    try:
        yield wl
    finally:
        wdesk.down(wl)


@pytest.fixture(scope="module")
def calculator(desktop: wdesk.WaylandDesktop) -> Iterator[apps.App]:
    app = apps.launch(["gnome-calculator"], wdesk.app_env(desktop))
    try:
        yield app
    finally:
        app.stop()


async def _frame_of(desktop: wdesk.WaylandDesktop, pid: int) -> FrameInfo:
    """The app's frame once it is on the AT-SPI bus. (GTK 4 under this Mutter never says
    its window is active — measured — though Mutter gives it the focus: the window stream
    records the focused window, and that is what the test checks it gets.)"""
    deadline = time.monotonic() + 30
    async with await AtspiClient.connect(desktop.dbus_address) as client:
        while True:
            frames = await client.frames(pid=pid)
            if frames:
                return frames[0]
            assert time.monotonic() < deadline, "the calculator never came up"
            await asyncio.sleep(0.1)


def test_up_and_down_by_the_cli_end_exactly_what_up_started(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["XDG_RUNTIME_DIR"] = str(tmp_path)  # its own records
    bystander = subprocess.Popen(["sleep", "60"])  # must survive `down`
    try:
        out = subprocess.run(
            [*DESKPILOT, "desktop", "up", "--wayland", "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        record = json.loads(out.stdout)
        runtime = Path(record["runtime_dir"])
        assert (runtime / record["name"]).exists()  # the Wayland socket
        assert record["env"]["WAYLAND_DISPLAY"] == record["name"]
        assert record["env"]["GDK_BACKEND"] == "wayland" and "DISPLAY" not in record["env"]
        assert oct(runtime.stat().st_mode & 0o777) == "0o700"
        pids = record["pids"]
        assert set(pids) == {"dbus", "at_spi", "pipewire", "wireplumber", "mutter"}
        # the shell form says to drop DISPLAY: no X server
        shell = subprocess.run(
            [*DESKPILOT, "desktop", "env", "--wayland"],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        assert shell.stdout.startswith("unset DISPLAY\n"), shell.stdout
        assert f"export WAYLAND_DISPLAY={record['name']}" in shell.stdout
        # ended from a shell that took the desktop's environment (its XDG_RUNTIME_DIR)
        inside = {**env, **record["env"]}
        done = subprocess.run(
            [*DESKPILOT, "desktop", "down", "--wayland"],
            env=inside,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in pids.values()):
            assert time.monotonic() < deadline, {k: _alive(p) for k, p in pids.items()}
            time.sleep(0.05)
        assert not runtime.exists()
        assert bystander.poll() is None
        # and nothing is left to end
        again = subprocess.run(
            [*DESKPILOT, "desktop", "down", "--wayland"],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert again.returncode == 1 and "no deskpilot Wayland desktop" in again.stderr
    finally:
        bystander.kill()


def _alive(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


async def test_a_native_wayland_app_is_read_seen_and_driven(
    desktop: wdesk.WaylandDesktop, calculator: apps.App
) -> None:
    frame = await _frame_of(desktop, calculator.pid)
    env = wdesk.app_env(desktop)
    size = (desktop.width, desktop.height)
    async with await AtspiClient.connect(desktop.dbus_address) as client:
        snap = await client.snapshot(frame.ref)
        assert '- button "7 7"' in snap.text, snap.text
        seven = next(e for e in snap.elements.values() if e.name == "7 7")
        rect = await client.extents(seven)
        win = await client.extents(next(iter(snap.elements.values())))
        assert rect is not None and win is not None
        # the monitor: the whole virtual screen, with the app drawn on it (not black)
        async with await MutterSession.open(env, size, "monitor") as screen:
            shot = Image.open(io.BytesIO(await screen.frame()))
        assert shot.size == (1280, 800)
        lit = shot.convert("L").point(lambda v: 255 if v > 200 else 0).getbbox()
        assert lit is not None  # the calculator's light body on the dark background
        # its window: where the window lies in the stream, as big as AT-SPI says it is
        async with await MutterSession.open(env, size, "window") as window:
            box = window_box(await window.frame())
            assert box is not None
            assert (abs(box[2] - win.width), abs(box[3] - win.height)) <= (1, 1), (box, win)
            await window.click(box[0] + rect.x + rect.width / 2, box[1] + rect.y + rect.height / 2)
            await window.type_text("*6=")
        deadline = time.monotonic() + 10
        while True:
            snap = await client.snapshot(frame.ref)
            if '- textField = "42"' in snap.text:
                break
            assert time.monotonic() < deadline, snap.text
            await asyncio.sleep(0.1)
