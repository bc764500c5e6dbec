"""The live view's pure parts, without a browser or a desktop: the rectangle geometry, which
parts of a frame are painted out (occlusion, windows not read yet, resized windows, gone and
never-captured ones), the painting itself on a real JPEG, and the arguments' typed errors.

The observations here are scripted (a function answering like the host would); the real host
and browser are in test_live.py."""

from __future__ import annotations

import io
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from deskpilot.oversight.live import MAX_FPS, LiveFrame, LiveProblem, parse_fps, parse_target
from deskpilot.oversight.live_regions import SensitiveRegions, intersect, paint, subtract
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import AppIdentity, ObservationBody, Rect, WindowInfo

# ------------------------------------------------------------------ geometry

small = st.integers(min_value=0, max_value=12)
sizes = st.integers(min_value=1, max_value=12)
rects = st.builds(lambda x, y, w, h: Rect(x=x, y=y, width=w, height=h), small, small, sizes, sizes)


def points(r: Rect) -> set[tuple[int, int]]:
    return {(x, y) for x in range(r.x, r.x + r.width) for y in range(r.y, r.y + r.height)}


@given(rects, st.lists(rects, max_size=4))
def test_subtract_leaves_exactly_the_uncovered_pixels_in_disjoint_pieces(
    rect: Rect, covers: list[Rect]
) -> None:
    pieces = subtract(rect, covers)
    covered = set().union(*(points(c) for c in covers)) if covers else set()
    seen: set[tuple[int, int]] = set()
    for piece in pieces:
        p = points(piece)
        assert not p & seen, "pieces overlap"
        seen |= p
    assert seen == points(rect) - covered


def test_intersect() -> None:
    a = Rect(x=0, y=0, width=10, height=10)
    assert intersect(a, Rect(x=5, y=5, width=10, height=10)) == Rect(x=5, y=5, width=5, height=5)
    assert intersect(a, Rect(x=10, y=0, width=5, height=5)) is None


# ------------------------------------------------------------------ regions


def window(wid: str, x: int, y: int, w: int, h: int) -> WindowInfo:
    return WindowInfo(window_id=wid, bounds=Rect(x=x, y=y, width=w, height=h))


def observation(win: WindowInfo, regions: list[Rect]) -> ObservationBody:
    return ObservationBody(
        frame_id="f-1",
        tree_version="t-1",
        app=AppIdentity(),
        window=win,
        tree="",
        element_count=0,
        sensitive_regions=regions,
    )


class Host:
    """Answers observations like the host: each window's regions, or an error."""

    def __init__(self) -> None:
        self.windows: dict[str, WindowInfo] = {}
        self.regions: dict[str, list[Rect]] = {}
        self.errors: dict[str, ErrorCode] = {}
        self.asked: list[str] = []

    async def observe(self, window_id: str) -> ObservationBody:
        self.asked.append(window_id)
        if window_id in self.errors:
            raise DeskpilotError(self.errors[window_id], "scripted")
        return observation(self.windows[window_id], self.regions.get(window_id, []))


SCREEN = Rect(x=0, y=0, width=400, height=300)


async def test_a_window_not_read_yet_is_painted_whole_and_read_first() -> None:
    host = Host()
    dialog = window("0x2", 50, 40, 100, 80)
    host.windows["0x2"] = dialog
    host.regions["0x2"] = [Rect(x=10, y=20, width=60, height=15)]
    known = SensitiveRegions(host.observe)
    known.note([dialog])
    assert known.boxes([dialog], SCREEN) == [dialog.bounds]
    assert known.due() == ["0x2"]
    assert await known.refresh(time.monotonic()) == 1  # one read even with no time left
    assert known.boxes([dialog], SCREEN) == [Rect(x=60, y=60, width=60, height=15)]
    assert known.due() == []  # not again before the refresh interval


async def test_regions_are_painted_only_where_their_window_is_on_top() -> None:
    host = Host()
    top = window("0x1", 0, 0, 100, 100)  # topmost first
    below = window("0x2", 50, 50, 200, 100)
    host.windows.update({"0x1": top, "0x2": below})
    host.regions["0x2"] = [Rect(x=0, y=0, width=100, height=20)]  # screen 50..150 x 50..70
    known = SensitiveRegions(host.observe)
    known.note([top, below])
    await known.refresh(time.monotonic() + 5)
    assert sorted(host.asked) == ["0x1", "0x2"]
    boxes = known.boxes([top, below], SCREEN)
    assert boxes == [Rect(x=100, y=50, width=50, height=20)]  # the part not under 0x1
    # in a frame of the lower window alone (window view): frame pixels
    frame = below.bounds
    assert known.boxes([top, below], frame) == [Rect(x=50, y=0, width=50, height=20)]


async def test_a_resized_window_is_unknown_again_and_a_gone_one_is_forgotten() -> None:
    host = Host()
    win = window("0x3", 0, 0, 100, 100)
    host.windows["0x3"] = win
    known = SensitiveRegions(host.observe)
    known.note([win])
    await known.refresh(time.monotonic())
    assert known.boxes([win], SCREEN) == []
    bigger = window("0x3", 0, 0, 150, 100)
    known.note([bigger])
    assert known.boxes([bigger], SCREEN) == [bigger.bounds]
    assert known.due() == ["0x3"]
    host.errors["0x3"] = ErrorCode.TARGET_NOT_FOUND
    await known.refresh(time.monotonic())
    assert known.due() == [] and known.known("0x3") is None


async def test_a_failed_read_keeps_the_window_painted_and_waits_before_trying_again() -> None:
    host = Host()
    win = window("0x4", 10, 10, 50, 50)
    host.windows["0x4"] = win
    host.errors["0x4"] = ErrorCode.ACTION_TIMEOUT
    known = SensitiveRegions(host.observe)
    known.note([win])
    await known.refresh(time.monotonic())
    assert known.boxes([win], SCREEN) == [win.bounds]
    assert known.due() == []  # not retried in every gap
    assert known.due(time.monotonic() + 1.5) == ["0x4"]


async def test_a_never_captured_apps_window_stays_painted_and_is_not_read_again() -> None:
    host = Host()
    win = window("0x5", 0, 0, 80, 60)
    host.windows["0x5"] = win
    host.errors["0x5"] = ErrorCode.SENSITIVE_INPUT_BLOCKED
    known = SensitiveRegions(host.observe)
    known.note([win])
    await known.refresh(time.monotonic())
    assert known.boxes([win], SCREEN) == [win.bounds]
    assert known.due() == []


# ------------------------------------------------------------------ painting


def jpeg_of(colour: tuple[int, int, int], size: tuple[int, int] = (64, 48)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, colour).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def test_paint_fills_the_boxes_with_the_vaults_grey_and_leaves_the_rest() -> None:
    out, count = paint(jpeg_of((255, 255, 255)), [Rect(x=8, y=8, width=24, height=16)])
    assert count == 1
    image = Image.open(io.BytesIO(out)).convert("L")
    inside = image.crop((10, 10, 30, 22)).getextrema()
    outside = image.crop((40, 30, 60, 44)).getextrema()
    assert inside[0] >= 124 and inside[1] <= 132
    assert outside[0] >= 250


def test_paint_without_boxes_keeps_the_hosts_bytes() -> None:
    data = jpeg_of((10, 20, 30))
    assert paint(data, []) == (data, 0)


@pytest.mark.parametrize("data", [b"\x89PNG\r\n\x1a\n" + b"0" * 40, b"\xff\xd8\xff" + b"junk"])
def test_a_frame_that_is_not_a_good_jpeg_is_a_protocol_error(data: bytes) -> None:
    with pytest.raises(DeskpilotError) as e:
        paint(data, [Rect(x=0, y=0, width=1, height=1)])
    assert e.value.code == ErrorCode.PROTOCOL_ERROR


# ------------------------------------------------------------------ arguments and events


@pytest.mark.parametrize("value", ["", None, "screen", "SCREEN", "0x1a00004"])
def test_good_targets(value: str | None) -> None:
    assert parse_target(value) in ("screen", "0x1a00004")


@pytest.mark.parametrize("value", ["0x", "1a00004", "0x123456789", "screen2", "../x"])
def test_bad_targets_are_invalid_requests(value: str) -> None:
    with pytest.raises(DeskpilotError) as e:
        parse_target(value)
    assert e.value.code == ErrorCode.INVALID_REQUEST and e.value.details["field"] == "target"


@pytest.mark.parametrize(
    ("value", "fps"), [(None, 5), ("", 5), ("1", 1), ("3", 3), ("7", 7), ("10", 10)]
)
def test_good_frame_rates(value: str | None, fps: int) -> None:
    assert parse_fps(value) == fps


@pytest.mark.parametrize("value", ["0", "11", "-1", "2.5", "five"])
def test_bad_frame_rates_are_invalid_requests(value: str) -> None:
    with pytest.raises(DeskpilotError) as e:
        parse_fps(value)
    assert e.value.code == ErrorCode.INVALID_REQUEST and e.value.details["max"] == MAX_FPS


def test_a_frame_event_carries_its_capture_time_in_ms_and_the_jpeg_in_base64() -> None:
    frame = LiveFrame(
        number=7,
        captured_at=1_700_000_000.1234,
        width=64,
        height=48,
        jpeg=b"\xff\xd8\xffabc",
        origin=Rect(x=0, y=0, width=64, height=48),
        pointer=(3, 4),
        outlines=[],
        painted=1,
        withheld=0,
        redact=True,
    )
    wire = frame.wire()
    assert wire["n"] == 7 and wire["t"] == pytest.approx(1_700_000_000_123.4)
    assert wire["img"] == "/9j/YWJj" and wire["pointer"] == [3, 4]


def test_problems_are_worded_in_both_languages_with_a_fallback() -> None:
    gone = LiveProblem("target_not_found")
    assert "window is gone" in gone.wire("en")["text"]
    assert "窗口已关闭" in gone.wire("zh")["text"]
    other = LiveProblem("vault_key_invalid").wire("en")
    assert other["code"] == "vault_key_invalid" and "vault_key_invalid" in other["text"]
