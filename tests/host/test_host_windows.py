"""list_windows and capture_window against real apps, with and without an EWMH manager."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from host_harness import HostProcess, wait_for
from PIL import Image
from Xlib import X, Xatom, display

from deskpilot.desktop import apps
from deskpilot.protocol.wire import RESPONSE_ADAPTER

pytestmark = pytest.mark.desktop


@pytest.fixture(scope="module")
def two_apps(desktop: object) -> Iterator[tuple[apps.App, apps.App]]:
    zen = apps.launch(["zenity", "--entry", "--title=Window list test", "--text=hi"])
    calc = apps.launch(["gnome-calculator"])
    try:
        yield zen, calc
    finally:
        zen.stop()
        calc.stop()


def windows_of(host: HostProcess, pid: int) -> list[dict[str, Any]]:
    response = host.call({"type": "list_windows"})
    RESPONSE_ADAPTER.validate_python(response)
    return [w for w in response["windows"] if w["app"].get("pid") == pid]


def xwininfo(window_id: str) -> dict[str, int]:
    out = subprocess.run(
        ["xwininfo", "-id", window_id], capture_output=True, text=True, check=True
    ).stdout
    fields = dict(re.findall(r"^\s*(Absolute upper-left [XY]|Width|Height):\s+(-?\d+)", out, re.M))
    return {
        "x": int(fields["Absolute upper-left X"]),
        "y": int(fields["Absolute upper-left Y"]),
        "width": int(fields["Width"]),
        "height": int(fields["Height"]),
    }


def test_every_app_window_is_listed_with_identity_and_geometry(
    host: HostProcess, two_apps: tuple[apps.App, apps.App]
) -> None:
    zen, calc = two_apps
    zen_windows = wait_for(lambda: windows_of(host, zen.pid), timeout=20)
    calc_windows = wait_for(lambda: windows_of(host, calc.pid), timeout=20)
    (zw,) = zen_windows  # the unmapped client-leader window is not a top-level window
    (cw,) = calc_windows
    assert zw["title"] == "Window list test"
    assert zw["app"]["executable"] == "zenity"
    assert zw["app"]["wmClass"] == "zenity.Zenity"
    assert cw["app"]["executable"] == "gnome-calculator"
    assert cw["app"]["desktopId"] == "org.gnome.Calculator.desktop"
    assert cw["title"] == "Calculator"
    for w in (zw, cw):
        assert w["visible"] is True
        assert w["minimized"] is False
        assert w["bounds"] == xwininfo(w["windowId"])


def test_exactly_the_input_focus_window_is_focused(
    host: HostProcess, two_apps: tuple[apps.App, apps.App]
) -> None:
    zen, _ = two_apps
    (zw,) = wait_for(lambda: windows_of(host, zen.pid), timeout=20)
    d = display.Display()
    try:
        d.create_resource_object("window", int(zw["windowId"], 16)).set_input_focus(
            X.RevertToPointerRoot, X.CurrentTime
        )
        d.sync()
        listed = host.call({"type": "list_windows"})["windows"]
        focused = [w["windowId"] for w in listed if w["focused"]]
        assert focused == [zw["windowId"]]
        # focus follows the pointer again: the window under the pointer is the focused one
        d.set_input_focus(X.PointerRoot, X.RevertToPointerRoot, X.CurrentTime)
        b = zw["bounds"]
        d.xtest_fake_input(X.MotionNotify, x=b["x"] + 5, y=b["y"] + 5)
        d.sync()
        listed = host.call({"type": "list_windows"})["windows"]
        top_at_pointer = next(
            w
            for w in listed
            if w["visible"]
            and w["bounds"]["x"] <= b["x"] + 5 < w["bounds"]["x"] + w["bounds"]["width"]
            and w["bounds"]["y"] <= b["y"] + 5 < w["bounds"]["y"] + w["bounds"]["height"]
        )
        assert [w["windowId"] for w in listed if w["focused"]] == [top_at_pointer["windowId"]]
    finally:
        d.close()


def test_an_iconic_window_is_minimised_and_not_visible(
    host: HostProcess, two_apps: tuple[apps.App, apps.App]
) -> None:
    _, calc = two_apps
    (cw,) = wait_for(lambda: windows_of(host, calc.pid), timeout=20)
    d = display.Display()
    win = d.create_resource_object("window", int(cw["windowId"], 16))
    wm_state = d.intern_atom("WM_STATE")
    try:
        # what a window manager does on iconify: unmap it and set WM_STATE to IconicState
        win.change_property(wm_state, wm_state, 32, [3, 0])
        win.unmap()
        d.sync()
        (listed,) = wait_for(lambda: windows_of(host, calc.pid))
        assert listed["minimized"] is True
        assert listed["visible"] is False
    finally:
        win.delete_property(wm_state)
        win.map()
        d.sync()
        d.close()
    wait_for(lambda: windows_of(host, calc.pid) and windows_of(host, calc.pid)[0]["visible"])


def test_with_an_ewmh_manager_its_client_list_and_active_window_are_used(
    host: HostProcess, two_apps: tuple[apps.App, apps.App]
) -> None:
    zen, calc = two_apps
    (cw,) = wait_for(lambda: windows_of(host, calc.pid), timeout=20)
    wait_for(lambda: windows_of(host, zen.pid), timeout=20)
    d = display.Display()
    root = d.screen().root
    check = root.create_window(-10, -10, 1, 1, 0, X.CopyFromParent)
    atom = d.intern_atom
    calc_id = int(cw["windowId"], 16)
    try:
        # a minimal non-reparenting EWMH manager: the properties an EWMH client reads
        for w in (root, check):
            w.change_property(atom("_NET_SUPPORTING_WM_CHECK"), Xatom.WINDOW, 32, [check.id])
        root.change_property(atom("_NET_CLIENT_LIST"), Xatom.WINDOW, 32, [calc_id])
        root.change_property(atom("_NET_ACTIVE_WINDOW"), Xatom.WINDOW, 32, [calc_id])
        d.sync()
        response = host.call({"type": "list_windows"})
        assert response["ewmh"] is True
        assert [w["windowId"] for w in response["windows"]] == [cw["windowId"]]
        assert response["windows"][0]["focused"] is True
    finally:
        for name in ("_NET_SUPPORTING_WM_CHECK", "_NET_CLIENT_LIST", "_NET_ACTIVE_WINDOW"):
            root.delete_property(atom(name))
        check.destroy()
        d.sync()
        d.close()
    assert host.call({"type": "list_windows"})["ewmh"] is False


def test_capture_window_returns_the_window_as_png(
    host: HostProcess, two_apps: tuple[apps.App, apps.App]
) -> None:
    _, calc = two_apps
    (cw,) = wait_for(lambda: windows_of(host, calc.pid), timeout=20)

    def painted() -> tuple[dict[str, Any], bytes] | None:
        response, png = host.request({"type": "capture_window", "target": {"pid": calc.pid}})
        assert png is not None
        low, high = Image.open(io.BytesIO(png)).convert("L").getextrema()
        return (response, png) if high - low > 50 else None  # a freshly mapped window is black

    response, png = wait_for(painted, timeout=10)
    RESPONSE_ADAPTER.validate_python(response)
    assert response["type"] == "capture_result"
    assert response["window"]["windowId"] == cw["windowId"]
    assert len(png) == response["image"]["byteLength"]
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG"
    bounds = response["window"]["bounds"]
    assert image.size == (bounds["width"], bounds["height"])
    assert (response["image"]["width"], response["image"]["height"]) == image.size

    # an idle calculator (no caret) captures identically twice in a row (once the window's
    # mapping animations are over: a loaded machine may still be painting the first frames)
    def identical_twice() -> bool:
        shots = []
        for _ in range(2):
            _, shot = host.request(
                {"type": "capture_window", "target": {"windowId": cw["windowId"]}}
            )
            assert shot is not None
            shots.append(Image.open(io.BytesIO(shot)).tobytes())
        return shots[0] == shots[1]

    assert wait_for(identical_twice, timeout=10)


@pytest.mark.parametrize(
    ("target", "code"),
    [
        ({"windowId": "0x1"}, "target_not_found"),
        ({"windowId": "not-an-id"}, "invalid_request"),
        ({"pid": 1}, "target_not_found"),
        ({"app": "no-such-app"}, "target_not_found"),
    ],
)
def test_unknown_targets_get_typed_errors(
    host: HostProcess, target: dict[str, Any], code: str
) -> None:
    for request_type in ("capture_window", "observe"):
        response = host.call({"type": request_type, "target": target})
        assert response["type"] == "error"
        assert response["code"] == code


def test_targets_by_app_name_match_executable_and_wm_class(
    host: HostProcess, two_apps: tuple[apps.App, apps.App]
) -> None:
    zen, calc = two_apps
    wait_for(lambda: windows_of(host, calc.pid), timeout=20)
    for name in ("gnome-calculator", "org.gnome.Calculator"):
        response, _ = host.request({"type": "capture_window", "target": {"app": name}}, timeout=20)
        assert response["window"]["app"]["pid"] == calc.pid, name
    response, _ = host.request({"type": "capture_window", "target": {"app": "Zenity"}})
    assert response["window"]["app"]["pid"] == zen.pid


def test_a_target_by_app_name_finds_an_executable_with_a_version_suffix(
    host: HostProcess, tmp_path: Path
) -> None:
    """Debian runs GIMP as ``gimp-2.10``: ``app: "gimp"`` must find it (the same rule as the
    runtime's, protocol/app_names.py). An xterm copied to ``xterm-3.7`` stands in for it: its
    process's executable is that file."""
    xterm = shutil.which("xterm")
    if xterm is None:
        pytest.skip("xterm is not installed")
    versioned = tmp_path / "xterm-3.7"
    shutil.copy(xterm, versioned)
    app = apps.launch([str(versioned), "-geometry", "40x5+0+0", "-e", "sleep", "600"])
    try:
        (w,) = wait_for(lambda: windows_of(host, app.pid), timeout=20)
        assert w["app"]["executable"] == "xterm-3.7"
        for name in ("xterm", "XTERM-3", "xterm-3.7"):
            response, _ = host.request({"type": "capture_window", "target": {"app": name}})
            assert response["type"] == "capture_result", (name, response)
            assert response["window"]["app"]["pid"] == app.pid, name
        response = host.call({"type": "capture_window", "target": {"app": "xterm-3.8"}})
        assert response["code"] == "target_not_found", response
    finally:
        app.stop()


def test_a_window_id_reused_by_the_next_client_gets_that_client_identity(
    host: HostProcess,
) -> None:
    """The X server gives a closed client's id range to the next client at once: a window id
    listed for one app may next belong to another, and must not keep the old identity."""
    first = apps.launch(["zenity", "--info", "--title=First owner", "--text=a"])
    try:
        (old,) = wait_for(lambda: windows_of(host, first.pid), timeout=20)
    finally:
        first.stop()
    second = apps.launch(["zenity", "--info", "--title=Second owner", "--text=b"])
    try:
        # wait for its window through X itself: no host listing in between (one would see
        # the old id gone and forget it, which is not the case under test)
        def mapped() -> bool:
            tree = subprocess.run(
                ["xwininfo", "-root", "-tree"], capture_output=True, text=True
            ).stdout
            return '"Second owner"' in tree

        wait_for(mapped, timeout=20)
        (new,) = wait_for(lambda: windows_of(host, second.pid), timeout=20)
        assert new["title"] == "Second owner"
        listed = host.call({"type": "list_windows"})["windows"]
        for w in listed:
            assert w["app"].get("pid") != first.pid, w  # nothing is left with the dead owner
            if w["windowId"] == old["windowId"]:  # the id came back: it is the new app's now
                assert w["app"]["pid"] == second.pid, w
    finally:
        second.stop()


def test_a_point_of_an_image_is_stale_once_the_window_was_resized(host: HostProcess) -> None:
    """Coordinates are fractions of the observed image: after a resize they would land on
    something else, so a positional action is refused (an element action is not)."""
    app = apps.launch(["zenity", "--info", "--title=Resize me", "--text=grow"])
    try:
        (w,) = wait_for(lambda: windows_of(host, app.pid), timeout=20)
        target = {"windowId": w["windowId"]}
        obs = host.call({"type": "observe", "target": target, "sessionId": "rs"})
        d = display.Display()
        try:
            xwin = d.create_resource_object("window", int(w["windowId"], 16))
            xwin.configure(width=w["bounds"]["width"] + 120, height=w["bounds"]["height"] + 60)
            d.sync()
        finally:
            d.close()
        wait_for(lambda: xwininfo(w["windowId"])["width"] == w["bounds"]["width"] + 120)
        response = host.call(
            {
                "type": "execute_action",
                "sessionId": "rs",
                "frameId": obs["frameId"],
                "treeVersion": obs["treeVersion"],
                "action": {"kind": "click", "point": {"x": 0.5, "y": 0.5}},
            }
        )
        assert response["type"] == "error" and response["code"] == "stale_frame", response
        assert response["details"]["reason"] == "window_resized"
    finally:
        app.stop()


def test_a_point_covered_by_another_window_is_refused(
    host: HostProcess, two_apps: tuple[apps.App, apps.App]
) -> None:
    """Synthetic input goes to whatever is on top: a point of the observed window that another
    app's window covers is refused, one it does not cover is clicked."""
    _, calc = two_apps
    (cw,) = wait_for(lambda: windows_of(host, calc.pid), timeout=20)
    cover = apps.launch(["zenity", "--info", "--title=On top", "--text=cover"])
    try:
        (zw,) = wait_for(lambda: windows_of(host, cover.pid), timeout=20)
        d = display.Display()  # put it over the calculator (GTK centres a dialog on screen)
        try:
            d.create_resource_object("window", int(zw["windowId"], 16)).configure(x=20, y=20)
            d.sync()
        finally:
            d.close()
        wait_for(lambda: xwininfo(zw["windowId"])["x"] == 20)
        (zw,) = windows_of(host, cover.pid)
        c, z = cw["bounds"], zw["bounds"]
        assert z["width"] < c["width"] or z["height"] < c["height"]

        def act_at(px: int, py: int) -> dict[str, Any]:
            obs = host.call(
                {"type": "observe", "target": {"windowId": cw["windowId"]}, "sessionId": "cv"}
            )
            point = {"x": (px - c["x"]) / (c["width"] - 1), "y": (py - c["y"]) / (c["height"] - 1)}
            return host.call(
                {
                    "type": "execute_action",
                    "sessionId": "cv",
                    "frameId": obs["frameId"],
                    "treeVersion": obs["treeVersion"],
                    "action": {"kind": "scroll", "point": point, "direction": "down", "amount": 1},
                }
            )

        # a point in both windows: the middle of their overlap
        x0, y0 = max(c["x"], z["x"]), max(c["y"], z["y"])
        x1 = min(c["x"] + c["width"], z["x"] + z["width"])
        y1 = min(c["y"] + c["height"], z["y"] + z["height"])
        assert x1 > x0 and y1 > y0, (c, z)
        covered = act_at((x0 + x1) // 2, (y0 + y1) // 2)
        assert covered["type"] == "error" and covered["code"] == "unsupported_action", covered
        assert covered["details"]["reason"] == "covered_point"
        assert covered["details"]["coveringWindow"] == zw["windowId"]
        free_x = z["x"] + z["width"] + 5 if z["x"] + z["width"] + 5 < c["x"] + c["width"] else None
        free_y = (
            z["y"] + z["height"] + 5 if z["y"] + z["height"] + 5 < c["y"] + c["height"] else None
        )
        px = free_x if free_x is not None else c["x"] + 5
        py = free_y if free_x is None and free_y is not None else c["y"] + c["height"] // 2
        assert act_at(px, py)["type"] == "action_result"
    finally:
        cover.stop()
