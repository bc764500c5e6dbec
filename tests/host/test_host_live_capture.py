"""capture_window's live-view options against the real host: the whole screen, JPEG, the
pointer, the windows a picture shows, and never-captured apps painted out of it; plus the
plain request answered exactly as before (docs/host.md, "Capture")."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from host_harness import HostProcess, launch_accessible, wait_for
from PIL import Image
from Xlib import display

from deskpilot.desktop import apps
from deskpilot.protocol.wire import RESPONSE_ADAPTER

pytestmark = pytest.mark.desktop

GREY = (128, 128, 128)


@pytest.fixture(scope="module")
def calculator(desktop: object) -> Iterator[apps.App]:
    app = launch_accessible(["gnome-calculator"])
    try:
        yield app
    finally:
        app.stop()


@pytest.fixture
def pinentry_lookalike(desktop: object) -> Iterator[apps.App]:
    """A zenity dialog whose WM_CLASS says pinentry: an app that is never captured."""
    app = apps.launch(
        ["zenity", "--info", "--class=Pinentry", "--name=pinentry", "--text=PIN please"]
    )
    try:
        yield app
    finally:
        app.stop()


def window_of(host: HostProcess, pid: int) -> dict[str, Any] | None:
    listed = host.call({"type": "list_windows"})["windows"]
    return next((w for w in listed if w["app"].get("pid") == pid and w["visible"]), None)


def painted(host: HostProcess, pid: int) -> dict[str, Any]:
    """The app's window once it shows more than one colour (a fresh window is black)."""

    def ready() -> dict[str, Any] | None:
        w = window_of(host, pid)
        if w is None:
            return None
        _, png = host.request({"type": "capture_window", "target": {"windowId": w["windowId"]}})
        assert png is not None
        low, high = Image.open(io.BytesIO(png)).convert("L").getextrema()
        return w if high - low > 50 else None

    found: dict[str, Any] = wait_for(ready, timeout=20)
    return found


def colours(image: Image.Image) -> set[tuple[int, ...]]:
    found = image.convert("RGB").getcolors(1 << 20)
    assert found is not None
    return {c for _, c in found}


def move_window(window_id: str, x: int, y: int) -> None:
    """Without a window manager a client window is moved by configuring it directly."""
    d = display.Display()
    try:
        d.create_resource_object("window", int(window_id, 16)).configure(x=x, y=y)
        d.sync()
    finally:
        d.close()


def warp_pointer(x: int, y: int) -> None:
    d = display.Display()
    try:
        d.screen().root.warp_pointer(x, y)
        d.sync()
    finally:
        d.close()


def test_a_screen_capture_is_a_jpeg_of_the_screen_with_the_pointer_and_its_windows(
    host: HostProcess, calculator: apps.App
) -> None:
    calc = painted(host, calculator.pid)
    warp_pointer(301, 203)
    response, jpeg = host.request(
        {
            "type": "capture_window",
            "screen": True,
            "format": "jpeg",
            "quality": 70,
            "includePointer": True,
        }
    )
    RESPONSE_ADAPTER.validate_python(response)
    assert jpeg is not None and jpeg.startswith(b"\xff\xd8\xff")
    assert response["image"] == {
        "format": "jpeg",
        "width": 1280,
        "height": 800,
        "byteLength": len(jpeg),
    }
    image = Image.open(io.BytesIO(jpeg))
    assert image.format == "JPEG" and image.size == (1280, 800)
    assert "window" not in response  # a screen capture is of no one window
    assert response["rect"] == {"x": 0, "y": 0, "width": 1280, "height": 800}
    assert response["pointer"] == {"x": 301, "y": 203}
    assert calc["windowId"] in [w["windowId"] for w in response["windows"]]
    assert response["withheld"] == []
    # the calculator's pixels are in it: its area is not the empty root's black
    b = calc["bounds"]
    area = image.crop((b["x"], b["y"], b["x"] + b["width"], b["y"] + b["height"]))
    low, high = area.convert("L").getextrema()
    assert high - low > 50


def test_a_jpeg_window_capture_is_the_same_picture_as_the_png(
    host: HostProcess, calculator: apps.App
) -> None:
    calc = painted(host, calculator.pid)
    target = {"windowId": calc["windowId"]}
    png_answer, png = host.request({"type": "capture_window", "target": target})
    jpeg_answer, jpeg = host.request({"type": "capture_window", "target": target, "format": "jpeg"})
    assert png is not None and jpeg is not None
    assert jpeg_answer["image"]["format"] == "jpeg"
    assert (jpeg_answer["image"]["width"], jpeg_answer["image"]["height"]) == (
        png_answer["image"]["width"],
        png_answer["image"]["height"],
    )
    # the same picture, give or take JPEG's loss (JPEG is cheaper to encode, not smaller:
    # flat UI compresses well as PNG; benchmarks/ui_live_bench.py)
    a = Image.open(io.BytesIO(png)).convert("L")
    b = Image.open(io.BytesIO(jpeg)).convert("L")
    diff = [abs(x - y) for x, y in zip(a.tobytes(), b.tobytes(), strict=True)]
    assert sum(diff) / len(diff) < 4
    # a window capture says where it is and lists the window itself
    assert jpeg_answer["rect"] == {**calc["bounds"]}
    assert jpeg_answer["windows"][-1]["windowId"] == calc["windowId"]
    assert "pointer" not in jpeg_answer  # not asked for


def test_the_plain_request_is_answered_exactly_as_before(
    host: HostProcess, calculator: apps.App
) -> None:
    calc = painted(host, calculator.pid)
    response, png = host.request(
        {"type": "capture_window", "target": {"windowId": calc["windowId"]}}
    )
    assert set(response) == {"id", "type", "window", "image", "captureMs"}
    assert response["image"]["format"] == "png"
    assert png is not None and png.startswith(b"\x89PNG")


def test_a_never_captured_apps_window_is_painted_out_of_every_picture_that_shows_it(
    host: HostProcess, calculator: apps.App, pinentry_lookalike: apps.App
) -> None:
    painted(host, calculator.pid)
    pin = wait_for(lambda: window_of(host, pinentry_lookalike.pid), timeout=20)
    assert pin["app"]["wmClass"] == "pinentry.Pinentry"
    # onto the calculator (a bare Xvfb has no manager to place it)
    move_window(pin["windowId"], 40, 60)
    pin = wait_for(
        lambda: (w := window_of(host, pinentry_lookalike.pid)) and w["bounds"]["x"] == 40 and w,
        timeout=10,
    )
    # asked for by itself it is refused, as always
    refused = host.call({"type": "capture_window", "target": {"windowId": pin["windowId"]}})
    assert refused["type"] == "error" and refused["code"] == "sensitive_input_blocked"

    b = pin["bounds"]
    box = (b["x"], b["y"], b["x"] + b["width"], b["y"] + b["height"])

    def grey_in(image: Image.Image, origin: tuple[int, int]) -> bool:
        ox, oy = origin
        crop = image.crop((box[0] - ox, box[1] - oy, box[2] - ox, box[3] - oy))
        return colours(crop) == {GREY}

    def screen_capture() -> tuple[dict[str, Any], Image.Image]:
        response, png = host.request({"type": "capture_window", "screen": True})
        assert png is not None
        return response, Image.open(io.BytesIO(png))

    # the dialog maps after it is listed: wait until the screen shows it painted
    response, _ = wait_for(
        lambda: (shot := screen_capture()) and grey_in(shot[1], (0, 0)) and shot,
        timeout=10,
    )
    clipped = {
        "x": max(b["x"], 0),
        "y": max(b["y"], 0),
        "width": min(b["x"] + b["width"], 1280) - max(b["x"], 0),
        "height": min(b["y"] + b["height"], 800) - max(b["y"], 0),
    }
    assert clipped in response["withheld"]
    assert pin["windowId"] in [w["windowId"] for w in response["windows"]]

    # a capture of the calculator under it (no window manager: both at the top left) has the
    # dialog's part painted out too, also without the live view's options
    calc = window_of(host, calculator.pid)
    assert calc is not None
    for extra in ({}, {"format": "jpeg"}):
        answer, data = host.request(
            {"type": "capture_window", "target": {"windowId": calc["windowId"]}, **extra}
        )
        assert data is not None
        shot = Image.open(io.BytesIO(data)).convert("RGB")
        cb = calc["bounds"]
        overlap = (
            max(box[0], cb["x"]) - cb["x"],
            max(box[1], cb["y"]) - cb["y"],
            min(box[2], cb["x"] + cb["width"]) - cb["x"],
            min(box[3], cb["y"] + cb["height"]) - cb["y"],
        )
        assert overlap[2] > overlap[0] and overlap[3] > overlap[1]
        inner = colours(shot.crop((overlap[0] + 4, overlap[1] + 4, overlap[2] - 4, overlap[3] - 4)))
        if extra:  # JPEG: grey give or take a step
            assert all(max(abs(c - 128) for c in px) <= 3 for px in inner), inner
            assert answer["withheld"]
        else:
            assert inner == {GREY}
            assert "withheld" not in answer  # the plain answer keeps its old shape


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ({"screen": True, "target": {"pid": 1}}, "screen_with_target"),
        ({"quality": 70}, "quality_without_jpeg"),
        ({"format": "gif"}, "literal_error"),
        ({"format": "jpeg", "quality": 5}, "greater_than_equal"),
    ],
)
def test_inconsistent_capture_options_get_typed_errors(
    host: HostProcess, extra: dict[str, Any], problem: str
) -> None:
    response = host.call({"type": "capture_window", **extra})
    assert response["type"] == "error" and response["code"] == "invalid_request"
    assert problem in [p["problem"] for p in response["details"]["problems"]]


def test_an_unknown_capture_field_is_still_refused(host: HostProcess) -> None:
    response = host.call({"type": "capture_window", "screen": True, "region": [0, 0, 1, 1]})
    assert response["code"] == "invalid_request"
    assert response["details"]["unknownFields"] == ["region"]
