"""GIMP 2.10 (Debian's GTK 2 build) on the private desktop, for the app-matrix tests.

Started with an image whose left quarter is blue and the rest red (so a flip shows), in a
scratch config directory, with or without its GTK 2 accessibility bridge
(``GTK_MODULES=gail:atk-bridge``, desktop/a11y_env.py): with it GIMP has a tree, without it
the kernel reads it by OCR. It runs as ``gimp-2.10``. Measured here: ~4 s from start to the
image's window (docs/benchmarks.md), so a test module starts it once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from PIL import Image
from Xlib import X, Xatom, display, error
from Xlib.ext import xtest

from deskpilot.desktop.a11y_env import with_accessibility
from deskpilot.desktop.apps import App

#: the image's name: GIMP's window title starts with "[pic]" once it shows it
IMAGE_NAME = "pic"
START_TIMEOUT_S = 60.0


def picture(folder: Path) -> Path:
    """A 64x48 PNG: the left 16 columns blue, the rest red."""
    img = Image.new("RGB", (64, 48), (200, 30, 30))
    img.paste((30, 30, 200), (0, 0, 16, 48))
    path = folder / f"{IMAGE_NAME}.png"
    img.save(path)
    return path


def launch_gimp(image: Path, *, bridge: bool) -> App:
    """GIMP showing ``image``, once its window shows the image; skips where GIMP is not
    installed. ``bridge``: with GTK 2's accessibility modules (else with none at all)."""
    gimp = shutil.which("gimp")
    if gimp is None:
        pytest.skip("gimp is not installed")
    scratch = Path(tempfile.mkdtemp(prefix="deskpilot-gimp-"))
    if bridge:
        env = with_accessibility(os.environ)
    else:
        env = {k: v for k, v in os.environ.items() if k != "GTK_MODULES"}
    env.update(
        XDG_CONFIG_HOME=str(scratch / "config"),
        XDG_CACHE_HOME=str(scratch / "cache"),
        GIMP2_DIRECTORY=str(scratch / "gimp"),
    )
    proc = subprocess.Popen(
        [gimp, "--no-splash", str(image)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    app = App(proc, scratch)
    try:
        wait_for_title(app.pid, f"[{IMAGE_NAME}]")
    except BaseException:
        app.stop()
        raise
    park_pointer()
    return app


def park_pointer() -> None:
    """The pointer to the screen's bottom-right corner, off GIMP's window. Where an earlier
    test left it over GIMP's toolbox, GIMP shows that tool's tooltip — an override-redirect
    window, read as a ``- popup`` — and a test's first look found a popup where it expected
    none (tests/FLAKES.md). A person's pointer rests where they left it, not on a tool."""
    d = display.Display(os.environ["DISPLAY"])
    try:
        screen = d.screen()
        x, y = screen.width_in_pixels - 1, screen.height_in_pixels - 1
        xtest.fake_input(d, X.MotionNotify, x=x, y=y)
        d.sync()
    finally:
        d.close()


def wait_for_title(pid: int, start: str, timeout: float = START_TIMEOUT_S) -> str:
    """The title of ``pid``'s top-level window that starts with ``start``, once mapped."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for title in titles(pid):
            if title.startswith(start):
                return title
        time.sleep(0.2)
    raise AssertionError(f"no window of pid {pid} titled {start!r}… within {timeout} s")


def titles(pid: int) -> list[str]:
    """The titles of ``pid``'s mapped top-level windows (GIMP shows every GLib message as a
    "GIMP Message" dialog: a test checks none opened)."""
    d = display.Display()
    try:
        wm_pid = d.intern_atom("_NET_WM_PID")
        net_name = d.intern_atom("_NET_WM_NAME")
        out: list[str] = []
        for w in d.screen().root.query_tree().children:
            try:
                owner = w.get_full_property(wm_pid, Xatom.CARDINAL)
                if owner is None or owner.value[0] != pid:
                    continue
                if w.get_attributes().map_state != X.IsViewable:
                    continue
                name = w.get_full_property(net_name, 0)
            except error.XError:
                continue
            out.append(name.value.decode() if name is not None else "")
        return out
    finally:
        d.close()
