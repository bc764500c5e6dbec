"""Where a frame can be cut in two for OCR, and the geometry of tesseract's lines.

A large frame is recognised as two horizontal bands at once (:mod:`deskpilot.vision.pool`).
The cut must not change what is read, so it is made only through background:

- a row is *background* when at most ``MAX_STEPS`` of its pixels differ from their left
  neighbour by more than ``INK_DELTA`` (a window's border or a panel's edge crossing it, not
  a line of text: text makes a step at every stroke) and no pixel differs from the rows
  above and below by more than ``INK_DELTA`` (nothing starts or ends there);
- a cut is the middle row of a run of at least ``MIN_BAND`` background rows, the run nearest
  the middle of the frame within ``WINDOW`` of its height either side; each structure that
  crosses it (each step) must run straight for ``STRUCTURE_REACH`` rows above and below (a
  border does; a glyph's stem does not), otherwise the next nearest run is tried;
- no such run: no cut, the frame is read whole.

All of it is done with Pillow on the grayscale image tesseract is given (after the polarity
pass), about 2 ms for 1280x800.
"""

from __future__ import annotations

from dataclasses import dataclass

from PIL import Image, ImageChops

#: A step between neighbouring pixels larger than this (of 255) is ink or an edge.
INK_DELTA = 32
#: At most this many steps in a background row (window borders, panel edges).
MAX_STEPS = 24
#: A cut needs at least this many background rows in a row.
MIN_BAND = 4
#: Cuts are looked for within this fraction of the height either side of the middle.
WINDOW = 0.2
#: Each structure crossing a cut must be straight this many rows above and below it (a
#: window's border is; the stem of a glyph shorter than 97 px, i.e. text up to ~130 px, is not).
STRUCTURE_REACH = 48
#: Frames with fewer pixels are read whole: the OCR is short and a split would not pay.
MIN_SPLIT_PIXELS = 400_000

Rect = tuple[int, int, int, int]  # left, top, right, bottom (exclusive), tesseract's order

_INK_LUT = [0 if v <= INK_DELTA else 1 for v in range(256)]


@dataclass(frozen=True)
class Word:
    text: str
    confidence: float
    box: Rect


@dataclass
class RawLine:
    """One line as tesseract gives it: its box and its words (before any filtering).
    ``row``: a terminal's row of cells (vision/glyphs.py), whose least confident words are
    dropped rather than the whole line."""

    box: Rect
    words: list[Word]
    row: bool = False


def shifted(lines: list[RawLine], dy: int) -> list[RawLine]:
    """``lines`` read in a band starting at row ``dy``, in the coordinates of the frame."""
    if dy == 0:
        return lines
    return [
        RawLine(
            _shift(line.box, dy),
            [Word(w.text, w.confidence, _shift(w.box, dy)) for w in line.words],
            line.row,
        )
        for line in lines
    ]


def split_row(
    gray: Image.Image, *, min_pixels: int = MIN_SPLIT_PIXELS, min_band: int = MIN_BAND
) -> int | None:
    """The row to cut ``gray`` (mode ``L``) at into a top band ``[0, row)`` and a bottom band
    ``[row, height)``, or ``None`` when the frame is too small to gain or has no safe cut.
    ``min_band``: the background rows a cut needs (a terminal's rows are 2 apart)."""
    width, height = gray.size
    if width * height < min_pixels or width < 2:
        return None
    middle = height // 2
    lo = max(1, middle - int(height * WINDOW))
    hi = min(height - 1, middle + int(height * WINDOW))
    if hi - lo < min_band:
        return None
    region = gray.crop((0, lo - 1, width, hi + 1))  # rows lo-1 .. hi
    rows = region.height
    steps = _ink(
        ImageChops.difference(
            region.crop((1, 0, width, rows)), region.crop((0, 0, width - 1, rows))
        )
    )
    below = _ink(
        ImageChops.difference(
            region.crop((0, 1, width, rows)), region.crop((0, 0, width, rows - 1))
        )
    )
    step_bytes, below_bytes = steps.tobytes(), below.tobytes()
    background = []
    for i in range(1, rows - 1):  # region row i is frame row lo - 1 + i
        row_steps = (width - 1) - step_bytes.count(0, (width - 1) * i, (width - 1) * (i + 1))
        changes = width - below_bytes.count(0, width * i, width * (i + 1))
        above = width - below_bytes.count(0, width * (i - 1), width * i)
        background.append(row_steps <= MAX_STEPS and changes == 0 and above == 0)
    candidates = sorted(_runs(background, lo, min_band), key=lambda row: abs(row - middle))
    for row in candidates:
        offset = (row - lo + 1) * (width - 1)
        if _structures_straight(gray, step_bytes[offset : offset + width - 1], row):
            return row
    return None


def _runs(background: list[bool], first_row: int, min_band: int = MIN_BAND) -> list[int]:
    """The middle row of each run of at least ``min_band`` background rows."""
    middles = []
    start = None
    for i, blank in enumerate([*background, False]):
        if blank and start is None:
            start = i
        elif not blank and start is not None:
            if i - start >= min_band:
                middles.append(first_row + (start + i) // 2)
            start = None
    return middles


def _structures_straight(gray: Image.Image, steps: bytes, row: int) -> bool:
    """Whether every pixel of ``row`` beside a step (``steps``: the row's step mask) keeps its
    value ``STRUCTURE_REACH`` rows up and down: a border or an edge running through, not a
    piece of a glyph."""
    top, bottom = max(0, row - STRUCTURE_REACH), min(gray.height, row + STRUCTURE_REACH + 1)
    x = steps.find(1)
    while x >= 0:
        for column in (x, x + 1):
            strip = gray.crop((column, top, column + 1, bottom)).tobytes()
            value = strip[row - top]
            if max(strip) - value > INK_DELTA or value - min(strip) > INK_DELTA:
                return False
        x = steps.find(1, x + 1)
    return True


def _ink(diff: Image.Image) -> Image.Image:
    return diff.point(_INK_LUT)


def _shift(box: Rect, dy: int) -> Rect:
    left, top, right, bottom = box
    return left, top + dy, right, bottom + dy
