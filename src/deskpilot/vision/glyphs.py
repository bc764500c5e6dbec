"""A terminal's text read cell by cell: tesseract reads each distinct glyph once.

Tesseract's LSTM costs about 0.45 ms of CPU per character (a full 1280x800 terminal, ~2,900
characters: 1.25 s), whatever the page segmentation, and layout analysis is only ~40 ms of
it: the recognition itself is the cost. A terminal, though, is a grid of cells
(:mod:`deskpilot.vision.grid`) in which a character is the same pixels wherever it is drawn,
and a screen of text uses a few dozen distinct glyphs. So:

- each row of cells is cut into cells; a cell with no ink is a space;
- a row whose every cell's pixels are a glyph already read (:class:`GlyphCache`) is written
  out from those glyphs, with no OCR: its words are the runs of cells between spaces, each
  word's box the ink of its cells;
- the other rows are read by tesseract one line at a time (page segmentation "a single text
  line"), the row with the most glyphs not yet known first, and a second row at the same
  time by the engine's partner (:mod:`deskpilot.vision.pool`) on the other core when it has
  unknown glyphs the first has not; what tesseract reads teaches the cache: a word of
  confidence at least ``LEARN_CONFIDENCE`` whose box covers exactly one run of cells with
  as many cells as the word has characters gives each cell its character. Then the rows are
  looked at again: most are now known.

A cold full terminal (33 rows of ``ls -l``-like text) is read by tesseract in 2 of its rows,
the rest from the glyphs those taught (docs/vision.md, "Terminals"). Rows are chosen in a
fixed order (most unknown glyphs, then the upper row), so a frame reads the same each time.
The cache lives as long as its engine: the next frame of any terminal in the same font
needs tesseract only for glyphs it has not shown before.

A row that cannot be written from glyphs (ink outside the cells, glyphs tesseract does not
read as words of the right length: box drawing, wide characters) is read by tesseract, as
every row was before; a frame with no grid is read by the caller as a block of text.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PIL import Image

from deskpilot.protocol.errors import DeskpilotError
from deskpilot.vision import pool
from deskpilot.vision.bands import RawLine, Rect, Word, shifted
from deskpilot.vision.grid import Grid, Span, background, find_grid, ink_mask, row_ink

if TYPE_CHECKING:
    from deskpilot.vision.ocr import OcrEngine

#: Tesseract's page segmentation mode "a single text line": a row of cells.
PSM_SINGLE_LINE = 7
#: A word read at least this confidently teaches its cells their characters. Tesseract's
#: confidence per character is 97-100 even where context misleads it (the first ``l`` of
#: ``lrwxrwxrwx`` read as ``L``); a word's is lower there (41-58), so only a word's counts.
#: On six xterm screens (docs/vision.md, "Terminals") 55, 65 and 75 read the same text, 65
#: with fewer rows OCR'd than 75 (bold blue names come in at 64-74); 85 read less (more rows
#: left to tesseract's own misreads). Learning from two rows that agree at any confidence
#: spread that ``L`` to every ``l`` of the screen (10 pt ``ls -l``: 22 rows exact, not 26).
LEARN_CONFIDENCE = 65.0
#: Glyphs kept (the least recently used dropped): a screen of text uses a few dozen.
MAX_GLYPHS = 4096
#: Rows of background added above and below a row of cells given to tesseract.
ROW_PAD = 6


@dataclass(frozen=True, slots=True)
class Glyph:
    """What a cell's pixels read as: a character, how confidently (its word's confidence),
    where its ink is in the cell (left, top, right, bottom, exclusive)."""

    char: str
    confidence: float
    box: Rect


class GlyphCache:
    """The glyphs read so far, by their cell's pixels (and the cell's size), and the last
    grid found (in a frame's coordinates), which the next frame tries first."""

    def __init__(self, max_glyphs: int = MAX_GLYPHS) -> None:
        self._glyphs: OrderedDict[bytes, Glyph] = OrderedDict()
        self._lock = threading.Lock()
        self.max_glyphs = max_glyphs
        self.grid: Grid | None = None
        #: rows of cells tesseract has read (all frames): what benchmarks and tests count
        self.rows_read = 0

    def __len__(self) -> int:
        return len(self._glyphs)

    def known(self, key: bytes) -> bool:
        return key in self._glyphs

    def lookup(self, keys: Sequence[bytes]) -> list[Glyph] | None:
        """The glyphs of ``keys``, or ``None`` if one is not known (or was just dropped)."""
        with self._lock:
            found = []
            for key in keys:
                glyph = self._glyphs.get(key)
                if glyph is None:
                    return None
                found.append(glyph)
                self._glyphs.move_to_end(key)
            return found

    def learn(self, key: bytes, glyph: Glyph) -> None:
        """Keep ``glyph`` for ``key`` unless a reading at least as confident is kept (two
        confident readings that differ: the more confident)."""
        with self._lock:
            old = self._glyphs.get(key)
            if old is None or glyph.confidence > old.confidence:
                self._glyphs[key] = glyph
            self._glyphs.move_to_end(key)
            while len(self._glyphs) > self.max_glyphs:
                self._glyphs.popitem(last=False)

    def counted(self, rows: int) -> None:
        with self._lock:
            self.rows_read += rows

    def forget(self) -> None:
        """Drop every glyph and the grid (a cold start: benchmarks, tests)."""
        with self._lock:
            self._glyphs.clear()
            self.grid = None


@dataclass(frozen=True, slots=True)
class _Row:
    """A row of cells: its pixel rows, each cell's key (``None``: no ink), and whether all
    its ink lies in whole cells; or (``block``) pixel rows off the grid, read as a block."""

    span: Span
    cells: list[bytes | None]
    whole: bool
    block: bool = False

    def runs(self) -> list[Span]:
        """The runs of cells with ink: the row's words."""
        runs: list[Span] = []
        start = None
        for c, key in enumerate([*self.cells, None]):
            if key is not None and start is None:
                start = c
            elif key is None and start is not None:
                runs.append((start, c))
                start = None
        return runs


def read_grid(
    engine: OcrEngine, gray: Image.Image, cache: GlyphCache, *, top: int = 0
) -> list[RawLine] | None:
    """Tesseract's lines of ``gray`` (prepared for OCR; rows ``[top, top + height)`` of a
    frame), read row by row of its grid, from known glyphs where it can; ``None`` when the
    frame has no grid (the caller reads it as a block). ``engine``'s typed errors
    propagate."""
    hint = cache.grid.moved(top) if cache.grid is not None else None
    bg = background(gray)
    mask = ink_mask(gray, bg)
    layout = find_grid(mask, hint)
    if layout is None:
        return None
    grid = layout.grid
    cache.grid = grid.moved(-top)
    pending = _rows(gray, mask, grid, layout.odd)
    lines: dict[int, list[RawLine]] = {}
    while pending:
        unknown = {row.span[0]: _unknown(row, cache) for row in pending}
        for row in [row for row in pending if not unknown[row.span[0]]]:
            built = _built(row, grid, cache)
            if built is not None:
                lines[row.span[0]] = built
                pending.remove(row)
        if not pending:
            break
        first = max(pending, key=lambda r: (len(unknown[r.span[0]]), -r.span[0]))
        second = _second(pending, unknown, first)
        done = _ocr_rows(engine, gray, bg, first, second)
        cache.counted(len(done))
        for row, read in done:
            _learn(cache, grid, row, read)
            lines[row.span[0]] = read
            pending.remove(row)
    return [line for start in sorted(lines) for line in lines[start]]


def refit(cache: GlyphCache, gray: Image.Image) -> None:
    """The grid of a whole frame (``gray``, prepared) kept as the one its bands are cut by;
    the cache's grid, tried first, stays when it fits as well as any."""
    layout = find_grid(ink_mask(gray, background(gray)), cache.grid)
    if layout is not None:
        cache.grid = layout.grid


def _rows(gray: Image.Image, mask: Image.Image, grid: Grid, odd: tuple[Span, ...]) -> list[_Row]:
    """The rows of cells with ink, each cut into cells keyed by their pixels (and size),
    and the odd spans as blocks. A cell is blank when no pixel of it is ink (``mask``), or
    when it is all one colour (a bar's empty cells)."""
    columns = grid.columns(gray.width)
    right = grid.left + columns * grid.width
    rows = [_Row(span, [], whole=False, block=True) for span in odd]
    first, inks = row_ink(mask, grid.height, grid.top)
    for index, ink in enumerate(inks, start=first):
        span = grid.row_span(index, gray.height)
        height = span[1] - span[0]
        if height <= 0 or columns == 0 or ink.count(0) == len(ink):
            continue
        if any(a < span[1] and span[0] < b for a, b in odd):
            continue
        band = gray.crop((grid.left, span[0], right, span[1]))
        data = band.transpose(Image.Transpose.TRANSPOSE).tobytes()  # column by column
        size = grid.width * height
        prefix = bytes((grid.width, height))
        cells: list[bytes | None] = []
        for c in range(columns):
            x = grid.left + c * grid.width
            pixels = data[c * size : (c + 1) * size]
            blank = ink.count(0, x, x + grid.width) == grid.width
            cells.append(None if blank or pixels.count(pixels[0]) == size else prefix + pixels)
        outside = ink.count(0, 0, grid.left) + ink.count(0, right)
        whole = outside == grid.left + len(ink) - right
        if whole and all(key is None for key in cells):
            continue
        rows.append(_Row(span, cells, whole))
    return rows


def _unknown(row: _Row, cache: GlyphCache) -> set[bytes | int]:
    """The row's distinct cells not known as glyphs; a row that can never be written from
    glyphs (ink outside its cells, a block) has one unknown of its own (where it starts)."""
    unknown: set[bytes | int] = {
        key for key in row.cells if key is not None and not cache.known(key)
    }
    if not row.whole:
        unknown.add(row.span[0])
    return unknown


def _second(pending: list[_Row], unknown: dict[int, set[bytes | int]], first: _Row) -> _Row | None:
    """The row to read beside ``first``: the most unknown glyphs ``first`` does not have
    (a row whose unknowns ``first`` has may be known after it)."""
    best: tuple[int, int] | None = None
    chosen = None
    mine = unknown[first.span[0]]
    for row in pending:
        if row is first:
            continue
        score = (len(unknown[row.span[0]] - mine), -row.span[0])
        if score[0] > 0 and (best is None or score > best):
            best, chosen = score, row
    return chosen


def _ocr_rows(
    engine: OcrEngine, gray: Image.Image, bg: int, first: _Row, second: _Row | None
) -> list[tuple[_Row, list[RawLine]]]:
    """``first`` read by ``engine``, ``second`` at the same time by its partner when it is
    ready (else next round); a partner that fails on its row leaves it to ``engine``."""
    future = None
    if second is not None:
        band, psm = _padded(gray, bg, second.span), _psm(second)
        future = pool.submit(engine, lambda partner: partner.recognize_gray(band, psm))
    out = [(first, _read(engine, gray, bg, first))]
    if future is not None and second is not None:
        try:
            read = _placed(future.result(), second)
        except DeskpilotError:
            read = _read(engine, gray, bg, second)
        out.append((second, read))
    return out


def _read(engine: OcrEngine, gray: Image.Image, bg: int, row: _Row) -> list[RawLine]:
    return _placed(engine.recognize_gray(_padded(gray, bg, row.span), _psm(row)), row)


def _psm(row: _Row) -> int | None:
    """A row of cells as one line; a block as the engine reads a page (a block of text)."""
    return None if row.block else PSM_SINGLE_LINE


def _placed(lines: list[RawLine], row: _Row) -> list[RawLine]:
    """Lines read in ``row``'s padded band, in the frame's coordinates (a row of cells's
    line marked as such)."""
    moved = shifted(lines, row.span[0] - ROW_PAD)
    if row.block:
        return moved
    return [RawLine(line.box, line.words, row=True) for line in moved]


def _padded(gray: Image.Image, bg: int, span: Span) -> Image.Image:
    band = gray.crop((0, span[0], gray.width, span[1]))
    out = Image.new("L", (band.width, band.height + 2 * ROW_PAD), bg)
    out.paste(band, (0, ROW_PAD))
    return out


def _learn(cache: GlyphCache, grid: Grid, row: _Row, lines: list[RawLine]) -> None:
    """Each confident word that covers exactly one run of cells, one cell per character,
    teaches those cells their characters."""
    runs = row.runs()
    for line in lines:
        for word in line.words:
            if word.confidence < LEARN_CONFIDENCE:
                continue
            left, _, right, _ = word.box
            hit = [
                (s, e)
                for s, e in runs
                if grid.left + s * grid.width < right and grid.left + e * grid.width > left
            ]
            if len(hit) != 1 or hit[0][1] - hit[0][0] != len(word.text):
                continue
            start, _ = hit[0]
            for offset, char in enumerate(word.text):
                key = row.cells[start + offset]
                if key is not None:
                    box = _ink_box(key, grid.width)
                    cache.learn(key, Glyph(char, word.confidence, box))


def _built(row: _Row, grid: Grid, cache: GlyphCache) -> list[RawLine] | None:
    """The row written out from known glyphs: one line, its words the runs of cells;
    ``None`` if a glyph was dropped from the cache meanwhile."""
    words = []
    for start, end in row.runs():
        keys = [key for key in row.cells[start:end] if key is not None]
        glyphs = cache.lookup(keys)
        if glyphs is None:
            return None
        x = grid.left + start * grid.width
        box = (
            x + glyphs[0].box[0],
            row.span[0] + min(g.box[1] for g in glyphs),
            x + (end - 1 - start) * grid.width + glyphs[-1].box[2],
            row.span[0] + max(g.box[3] for g in glyphs),
        )
        text = "".join(g.char for g in glyphs)
        words.append(Word(text, min(g.confidence for g in glyphs), box))
    if not words:
        return []
    line_box = (
        words[0].box[0],
        min(w.box[1] for w in words),
        words[-1].box[2],
        max(w.box[3] for w in words),
    )
    return [RawLine(line_box, words, row=True)]


def _ink_box(key: bytes, width: int) -> Rect:
    """Where a cell's ink is, from its key (its size, then its pixels column by column)."""
    height = key[1]
    cell = Image.frombytes("L", (height, width), key[2:])  # transposed: x is the cell's y
    box = ink_mask(cell, background(cell)).getbbox()
    if box is None:
        return 0, 0, width, height
    top, left, bottom, right = box
    return left, top, right, bottom
