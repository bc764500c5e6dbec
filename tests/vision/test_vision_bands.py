"""Large frames read as two bands at once: where the cut goes, that the reading is the whole
frame's, and that a worker's failure never costs text.

Real Debian tesseract in this process and in the spawned worker; no desktop needed."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from PIL import Image, ImageDraw
from vision_images import Box, dense_page, desktop_frame, draw_text, font, png

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.vision import OcrEngine, OcrResult, pool
from deskpilot.vision.bands import (
    INK_DELTA,
    MAX_STEPS,
    WINDOW,
    RawLine,
    Word,
    shifted,
    split_row,
)
from deskpilot.vision.ocr import dark_text_on_light

TOLERANCE = 3  # px between a line's box read banded and read whole
Frame = Callable[[], tuple[Image.Image, list[Box]]]


def _gray(img: Image.Image) -> Image.Image:
    return dark_text_on_light(img.convert("L"))


def _single() -> OcrEngine:
    engine = OcrEngine()
    engine.split_min_pixels = None
    return engine


@pytest.fixture(scope="module")
def single() -> OcrEngine:
    return _single()


@pytest.fixture
def banded() -> Iterator[OcrEngine]:
    pool.shutdown()
    engine = OcrEngine()
    assert pool.start(engine), "the band partner did not load"
    yield engine
    pool.shutdown()


class _Spy:
    """Records the height of every image ``engine`` recognises itself."""

    def __init__(self, engine: OcrEngine, monkeypatch: pytest.MonkeyPatch) -> None:
        self.heights: list[int] = []
        real = engine.recognize_gray

        def recognize(gray: Image.Image) -> list[RawLine]:
            self.heights.append(gray.height)
            return real(gray)

        monkeypatch.setattr(engine, "recognize_gray", recognize)


def _assert_same_reading(got: OcrResult, want: OcrResult) -> None:
    assert [ln.text for ln in got.lines] == [ln.text for ln in want.lines]
    for a, b in zip(got.lines, want.lines, strict=True):
        boxes = (a.x, a.y, a.width, a.height), (b.x, b.y, b.width, b.height)
        assert all(abs(p - q) <= TOLERANCE for p, q in zip(*boxes, strict=True)), (a, b)


def _crosses(box: Box, row: int) -> bool:
    _, y, _, h = box
    return y <= row < y + h


@pytest.mark.parametrize("frame", [dense_page, desktop_frame])
def test_the_cut_is_a_background_row_near_the_middle(
    frame: Frame,
) -> None:
    img, boxes = frame()
    gray = _gray(img)
    row = split_row(gray)
    assert row is not None
    assert abs(row - gray.height / 2) <= WINDOW * gray.height
    assert not any(_crosses(box, r) for box in boxes for r in range(row - 2, row + 3))
    line = gray.crop((0, row, gray.width, row + 1)).tobytes()
    steps = sum(abs(a - b) > INK_DELTA for a, b in itertools.pairwise(line))
    assert steps <= MAX_STEPS  # at most a few borders cross it, never text
    if frame is dense_page:
        assert max(line) - min(line) <= INK_DELTA  # a page: the row is plain background


@pytest.mark.parametrize("frame", [dense_page, desktop_frame])
def test_banded_reading_is_the_whole_frames(
    frame: Frame,
    single: OcrEngine,
    banded: OcrEngine,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    img, _ = frame()
    row = split_row(_gray(img))
    assert row is not None
    spy = _Spy(banded, monkeypatch)
    data = png(img)
    whole, split = single.read(data), banded.read(data)
    assert spy.heights == [row]  # this process read only the top band
    _assert_same_reading(split, whole)
    above = [ln for ln in split.lines if ln.y + ln.height <= row]
    below = [ln for ln in split.lines if ln.y >= row]
    assert above and below and len(above) + len(below) == len(split.lines)


def test_band_lines_move_to_the_frames_coordinates() -> None:
    line = RawLine(
        (10, 2, 90, 14), [Word("Save", 95.0, (10, 2, 40, 14)), Word("as", 90.0, (45, 3, 60, 14))]
    )
    (moved,) = shifted([line], 397)
    assert moved.box == (10, 399, 90, 411)
    assert [w.box for w in moved.words] == [(10, 399, 40, 411), (45, 400, 60, 411)]
    assert [w.text for w in moved.words] == ["Save", "as"]


def test_a_frame_with_no_background_band_is_read_whole(
    banded: OcrEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # lines of 16 px text every 15 px: ascenders and descenders touch, no run of blank rows;
    # the rows with only descenders are refused too (a stem, not a border)
    img, _ = dense_page(lines=52, pitch=15)
    assert split_row(_gray(img)) is None
    spy = _Spy(banded, monkeypatch)
    monkeypatch.setattr(pool, "recognize_split", _not_called)
    result = banded.read(png(img))
    assert spy.heights == [800]
    assert "quick brown fox" in result.text


def test_glyph_stems_are_not_borders() -> None:
    # the only rows between the tight lines are those of three 72 px "I"s: vertical strokes
    # crossing every row of the band, like borders, but ending within STRUCTURE_REACH
    img, _ = dense_page(lines=52, pitch=15)
    d = ImageDraw.Draw(img)
    _, top, _, bottom = d.textbbox((600, 360), "I   I   I", font=font(72))
    d.rectangle((0, top, img.width, bottom - 1), fill="white")
    draw_text(d, (600, 360), "I   I   I", size=72, fill=(0, 0, 0))
    assert split_row(_gray(img)) is None
    d.rectangle((0, top, img.width, bottom - 1), fill="white")  # the same band, blank
    row = split_row(_gray(img))
    assert row is not None and top <= row < bottom


def test_a_small_frame_is_read_whole(banded: OcrEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    img = Image.new("RGB", (365, 496), (250, 250, 250))  # gnome-calculator's window
    d = ImageDraw.Draw(img)
    for i, text in enumerate(["12 x 7", "84", "7 8 9", "4 5 6", "1 2 3"]):
        draw_text(d, (30, 30 + i * 90), text, size=28)
    gray = _gray(img)
    assert split_row(gray, min_pixels=0) is not None  # it has background bands
    assert split_row(gray) is None  # but too few pixels to gain from a worker
    spy = _Spy(banded, monkeypatch)
    monkeypatch.setattr(pool, "recognize_split", _not_called)
    result = banded.read(png(img))
    assert spy.heights == [496]
    assert "84" in result.text


def test_a_partner_that_fails_on_its_band_costs_time_not_text(
    single: OcrEngine, banded: OcrEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    img, _ = dense_page()
    data = png(img)
    partner = pool._partner(banded).engine

    def broken(gray: Image.Image) -> list[RawLine]:
        raise DeskpilotError(ErrorCode.VISION_UNAVAILABLE, "tesseract failed", retryable=True)

    monkeypatch.setattr(partner, "recognize_gray", broken)
    spy = _Spy(banded, monkeypatch)
    result = banded.read(data)
    assert spy.heights[-1] == 800  # the whole frame, read by the engine itself
    _assert_same_reading(result, single.read(data))


def test_a_partner_that_cannot_load_falls_back_for_good(
    single: OcrEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    img, _ = dense_page()
    data = png(img)
    want = single.read(data)
    pool.shutdown()
    engine = OcrEngine()
    real_init = OcrEngine.__init__

    def partner_without_data(self: OcrEngine, **kwargs: object) -> None:
        real_init(self, **kwargs)  # type: ignore[arg-type]
        if self is not engine:
            self.tessdata = str(tmp_path)  # the partner finds no language data

    monkeypatch.setattr(OcrEngine, "__init__", partner_without_data)
    try:
        assert pool.start(engine) is False
        spy = _Spy(engine, monkeypatch)
        _assert_same_reading(engine.read(data), want)
        assert spy.heights == [800]
        assert pool.start(engine) is False  # not tried again
    finally:
        pool.shutdown()


def test_missing_language_is_the_same_typed_error(tmp_path: Path) -> None:
    img, _ = dense_page()
    engine = OcrEngine(tessdata=tmp_path)
    try:
        assert pool.start(engine) is False
        with pytest.raises(DeskpilotError) as caught:
            engine.read(png(img))
        assert caught.value.code is ErrorCode.VISION_UNAVAILABLE
        assert caught.value.details["cause"] == "language_missing"
    finally:
        pool.shutdown()


def _not_called(*args: object) -> list[RawLine] | None:
    raise AssertionError("the frame was split")
