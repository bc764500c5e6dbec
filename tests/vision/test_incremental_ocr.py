"""Reading a window again from its last frame (vision/incremental.py), and a terminal's block
cursor painted out (vision/cursor.py), with real tesseract on terminal-like frames drawn with
Pillow: the same pixels are a hit, a changed row is read as a band and the rest kept, a
scroll or another size is read whole; the text before a cursor is read."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
from PIL import Image, ImageDraw, ImageFont

from deskpilot.vision import ocr_ready, pool
from deskpilot.vision.bands import split_row
from deskpilot.vision.cursor import erase_block_cursor
from deskpilot.vision.incremental import IncrementalReader
from deskpilot.vision.ocr import PSM_SINGLE_BLOCK, OcrEngine, terminal_engine

pytestmark = pytest.mark.skipif(not ocr_ready(), reason="no OCR engine")

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
ROWS = [f"line {i:02d} report-{i:03d}.txt invoice total" for i in range(12)]


def frame(rows: list[str], size: tuple[int, int] = (900, 400)) -> bytes:
    img = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(img)
    font = ImageFont.truetype(FONT, 18)
    for i, text in enumerate(rows):
        draw.text((6, 6 + 23 * i), text, font=font, fill="black")
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


@pytest.fixture(scope="module")
def engine() -> Iterator[OcrEngine]:
    e = OcrEngine(psm=PSM_SINGLE_BLOCK)
    yield e
    e.close()


def texts(reading: object) -> list[str]:
    return [ln.text for ln in reading.result.lines]  # type: ignore[attr-defined]


def test_the_same_pixels_are_a_hit_and_a_changed_row_is_patched(engine: OcrEngine) -> None:
    reader = IncrementalReader()
    first = reader.read(engine, "w", frame(ROWS[:6]))
    assert first.cache == "full" and first.rows == 400
    assert texts(first) == ROWS[:6]
    again = reader.read(engine, "w", frame(ROWS[:6]))
    assert again.cache == "hit" and again.rows == 0
    assert again.result.lines == first.result.lines
    # one more row of output: only a band around it is read, the six rows above are kept
    grown = reader.read(engine, "w", frame(ROWS[:7]))
    assert grown.cache == "patched" and 0 < grown.rows < 60
    assert texts(grown) == ROWS[:7]
    assert grown.result.lines[:6] == first.result.lines
    new = grown.result.lines[6]
    assert 6 + 23 * 6 - 4 <= new.y <= 6 + 23 * 6 + 8  # in the frame's coordinates
    assert all(w.y >= 6 + 23 * 6 - 4 for w in new.words)
    # a changed row in the middle: the band, and the lines after it kept in place
    edited = [*ROWS[:3], "line 03 EDITED-NOW", *ROWS[4:7]]
    patched = reader.read(engine, "w", frame(edited))
    assert patched.cache == "patched" and texts(patched) == edited


def test_a_scroll_another_size_or_another_window_is_read_whole(engine: OcrEngine) -> None:
    reader = IncrementalReader(max_windows=1)
    reader.read(engine, "w", frame(ROWS[:12]))
    scrolled = reader.read(engine, "w", frame(ROWS[1:12]))  # every row moved up
    assert scrolled.cache == "full" and texts(scrolled) == ROWS[1:12]
    resized = reader.read(engine, "w", frame(ROWS[1:12], (900, 420)))
    assert resized.cache == "full"
    assert reader.read(engine, "other", frame(ROWS[1:12], (900, 420))).cache == "full"
    # only one window is kept: "w" was dropped for "other"
    assert reader.read(engine, "w", frame(ROWS[1:12], (900, 420))).cache == "full"
    sparse = OcrEngine()
    try:  # another engine's reading is not reused
        assert reader.read(sparse, "w", frame(ROWS[1:12], (900, 420))).cache == "full"
    finally:
        sparse.close()


def test_a_block_cursor_after_the_typed_text_is_painted_out() -> None:
    img = Image.new("L", (600, 80), 255)
    draw = ImageDraw.Draw(img)
    font = ImageFont.truetype(FONT, 18)
    draw.text((6, 6), "$ typed-9055", font=font, fill=0)
    right = int(6 + draw.textlength("$ typed-9055", font=font))
    draw.rectangle((right, 4, right + 10, 26), fill=0)  # the cursor cell, right after it
    erased = erase_block_cursor(img)
    assert erased.getpixel((right + 5, 15)) == 255  # the cell is gone
    assert erased.crop((0, 0, right - 1, 80)).tobytes() == img.crop((0, 0, right - 1, 80)).tobytes()
    buf = io.BytesIO()
    img.save(buf, "PNG")
    e = OcrEngine(psm=PSM_SINGLE_BLOCK)
    try:
        assert "typed-9055" not in " ".join(ln.text for ln in e.read(buf.getvalue()).lines)
        e.erase_cursor = True
        assert [ln.text for ln in e.read(buf.getvalue()).lines] == ["$ typed-9055"]
    finally:
        e.close()
    # two solid blocks (icons, a chart): not a cursor, nothing is painted
    draw.rectangle((400, 40, 440, 70), fill=0)
    assert erase_block_cursor(img).tobytes() == img.tobytes()


def test_a_full_terminal_is_cut_between_rows_and_read_as_when_whole() -> None:
    """A terminal frame with no grid of cells is read as a page: the terminal engine cuts it
    at a 4-row gap between two text rows (2 rows with no ink above or below:
    ``split_min_band``) and pads each band at the cut, so the banded reading is the whole
    frame's; the screenshot engine's rule (4 such rows) finds no cut."""
    rows = [
        f"-rw-r--r-- 1 root root {1000 + 37 * i:6d} Dec  1 report-{i:03d}.txt" for i in range(33)
    ]
    img = Image.new("L", (1280, 786), 255)
    draw = ImageDraw.Draw(img)
    font = ImageFont.truetype(FONT, 19)
    for i, text in enumerate(rows):
        draw.text((2, 2 + 23 * i), text, font=font, fill=0)
    buf = io.BytesIO()
    img.save(buf, "PNG")
    assert split_row(img) is None
    assert split_row(img, min_band=2) is not None
    e = terminal_engine()
    e.glyphs = None  # the page path (Pillow's text layout has no whole-pixel grid anyway)
    try:
        assert pool.start(e)
        banded = e.read(buf.getvalue())
        e.split_min_pixels = None
        whole = e.read(buf.getvalue())
    finally:
        pool.shutdown()
        e.close()
    assert [ln.text for ln in banded.lines] == [ln.text for ln in whole.lines]
    assert len(whole.lines) == 33
    assert [ln.y for ln in banded.lines] == [ln.y for ln in whole.lines]
    exact = [ln.text == " ".join(r.split()) for ln, r in zip(whole.lines, rows, strict=True)]
    assert sum(exact) >= 30
