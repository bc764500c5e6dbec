"""A terminal read as a grid of cells (vision/grid.py, vision/glyphs.py): the grid found where
the cells were drawn, each distinct glyph read by tesseract once, rows written from glyphs
with the text and boxes of the screen, coloured text read, rows off the grid read as a
block, a partner's failure costing no text.

Real Debian tesseract on terminal frames drawn with Pillow one character per cell."""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import Future

import pytest
from PIL import Image, ImageDraw
from vision_images import TERMINAL_CELL, font, png, terminal_frame

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.vision import ocr_ready, pool
from deskpilot.vision.bands import RawLine, Word
from deskpilot.vision.grid import background, find_grid, ink_mask
from deskpilot.vision.incremental import IncrementalReader
from deskpilot.vision.ocr import OcrEngine, colour_gray, terminal_engine

pytestmark = pytest.mark.skipif(not ocr_ready(), reason="no OCR engine")

LS = [
    f"-rw-r--r-- 1 root root {1000 + 37 * i:6d} Dec  1 21:{i % 60:02d} report-{i:03d}.txt"
    for i in range(30)
]


def _collapsed(rows: list[str]) -> list[str]:
    return [" ".join(r.split()) for r in rows if r.strip()]


@pytest.fixture
def engine() -> Iterator[OcrEngine]:
    pool.shutdown()
    e = terminal_engine()
    yield e
    pool.shutdown()
    e.close()


def _layout(img: Image.Image):  # type: ignore[no-untyped-def]
    gray = img.convert("L")
    return find_grid(ink_mask(gray, background(gray)))


def test_the_grid_is_where_the_cells_were_drawn() -> None:
    layout = _layout(terminal_frame(LS, origin=(2, 5)))
    assert layout is not None and layout.odd == ()
    grid = layout.grid
    assert (grid.width, grid.height) == TERMINAL_CELL
    # each row's ink lies in one row of cells; a column boundary is at most one pixel
    # column off the drawn one (both are blank between glyphs)
    assert (5 - grid.top) % grid.height in (0, 1, grid.height - 1)
    assert (2 - grid.left) % grid.width in (0, 1, grid.width - 1)


def test_proportional_text_has_no_grid() -> None:
    # proportional text (Pillow's layout: fractional advances)
    img = Image.new("RGB", (900, 300), "white")
    draw = ImageDraw.Draw(img)
    for i in range(6):
        draw.text((10, 10 + 30 * i), f"Proportional line {i} with wide Ws", font=font(18), fill=0)
    assert _layout(img) is None


def test_a_cold_terminal_is_read_from_a_few_rows(engine: OcrEngine) -> None:
    glyphs = engine.glyphs
    assert glyphs is not None
    result = engine.read(png(terminal_frame(LS)))
    assert [ln.text for ln in result.lines] == _collapsed(LS)
    assert glyphs.rows_read <= 6  # the rest written out from the glyphs those taught
    assert len(glyphs) >= len(set("".join(LS).replace(" ", "")))
    # a word's box is the ink of its cells: inside them
    width, height = TERMINAL_CELL
    for r, line in enumerate(result.lines):
        drawn = [(m.start(), m.group()) for m in re.finditer(r"\S+", LS[r])]
        assert [w.text for w in line.words] == [text for _, text in drawn]
        for word, (column, text) in zip(line.words, drawn, strict=True):
            left, top = 2 + column * width, 2 + r * height
            assert left - 1 <= word.x and word.x + word.width <= left + len(text) * width + 1
            assert top - 1 <= word.y and word.y + word.height <= top + height + 1


def test_a_new_frame_of_known_glyphs_needs_no_tesseract(engine: OcrEngine) -> None:
    glyphs = engine.glyphs
    assert glyphs is not None
    engine.read(png(terminal_frame(LS)))
    before = glyphs.rows_read
    shuffled = [LS[(7 * i) % 30].replace("report", "tore") for i in range(25)]
    result = engine.read(png(terminal_frame(shuffled)))
    assert [ln.text for ln in result.lines] == _collapsed(shuffled)
    assert glyphs.rows_read == before
    # forgotten: read by tesseract again
    glyphs.forget()
    engine.read(png(terminal_frame(shuffled)))
    assert glyphs.rows_read > before


def test_coloured_text_is_read_as_dark(engine: OcrEngine) -> None:
    rows = [f"drwxr-xr-x 2 root root 4096 Dec  1 folder-{i:02d}" for i in range(12)]
    colours = {i: (0, 255, 255) if i % 2 else (0, 230, 0) for i in range(12)}  # ls --color
    img = terminal_frame(rows, colours=colours)
    gray = colour_gray(img)
    assert gray.getextrema() == (0, 255)  # the text as dark as black text
    assert [ln.text for ln in engine.read(png(img)).lines] == _collapsed(rows)


def test_rows_off_the_grid_are_read_as_a_block(engine: OcrEngine) -> None:
    rows = [*LS[:4], "", "  inside a box", "", *LS[4:8]]
    img = terminal_frame(rows)
    draw = ImageDraw.Draw(img)
    width, height = TERMINAL_CELL
    # a frame from the middle of row 4 to the middle of row 6: crosses rows of cells
    draw.rectangle((2, 2 + 4 * height + 10, 2 + 30 * width, 2 + 6 * height + 12), outline=0)
    layout = _layout(img)
    assert layout is not None and len(layout.odd) == 1
    first, end = layout.odd[0]
    assert first <= 2 + 4 * height + 10 and end >= 2 + 6 * height + 12
    texts = [ln.text for ln in engine.read(png(img)).lines]
    assert texts[:4] == _collapsed(LS[:4]) and texts[-4:] == _collapsed(LS[4:8])
    assert any("inside a box" in t for t in texts)


def test_a_partner_that_fails_on_its_row_costs_no_text(
    engine: OcrEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    failed: list[int] = []

    def failing(_engine: OcrEngine, _work: object) -> Future[list[RawLine]]:
        future: Future[list[RawLine]] = Future()
        failed.append(1)
        future.set_exception(
            DeskpilotError(ErrorCode.VISION_UNAVAILABLE, "boom", details={"cause": "ocr_failed"})
        )
        return future

    monkeypatch.setattr(pool, "submit", failing)
    result = engine.read(png(terminal_frame(LS)))
    assert failed  # a second row was given to the partner, and failed there
    assert [ln.text for ln in result.lines] == _collapsed(LS)


def test_a_row_keeps_its_confident_words_where_a_line_is_dropped() -> None:
    e = OcrEngine()
    words = [
        Word("the", 97.0, (0, 0, 30, 10)),
        Word("observation", 96.0, (40, 0, 150, 10)),
        Word("*DESKPILOT_RUN_SERVE=1°.", 12.0, (160, 0, 400, 10)),
    ]
    assert e._line(RawLine((0, 0, 400, 10), words)) is None  # a screenshot's line: garbage
    line = e._line(RawLine((0, 0, 400, 10), words, row=True))
    assert line is not None and line.text == "the observation"
    assert (line.x, line.width) == (0, 150)


def test_a_new_row_is_patched_from_known_glyphs(engine: OcrEngine) -> None:
    glyphs = engine.glyphs
    assert glyphs is not None
    reader = IncrementalReader()
    first = reader.read(engine, "term", png(terminal_frame(LS[:12])))
    assert first.cache == "full"
    before = glyphs.rows_read
    typed = reader.read(engine, "term", png(terminal_frame([*LS[:12], "root report"])))
    assert typed.cache == "patched" and 0 < typed.rows <= 2 * TERMINAL_CELL[1] + 8
    assert [ln.text for ln in typed.result.lines] == _collapsed([*LS[:12], "root report"])
    # the new row is made of glyphs read before: no tesseract
    assert glyphs.rows_read == before
