"""A terminal's screen as a grid of character cells: where the cells are.

A terminal draws every character in a cell of one fixed size at a fixed place: row ``r``,
column ``c`` is the rectangle at ``(left + c x width, top + r x height)``. The same
character in the same colours is the same pixels in every cell, so a glyph tesseract has
read once can be recognised again by its pixels alone (:mod:`deskpilot.vision.glyphs`).

The grid is found in the ink mask of the frame prepared for OCR (dark text on light, the
cursor painted out), with Pillow and a few loops over rows (a few ms for 1280x800):

- **rows**: the runs of pixel rows with ink. A terminal's line spacing covers its glyphs,
  so a run of text lies inside one row of cells. Each cell height from the median run's
  height to twice it, at its best phase, is scored by its *clean* rows of cells: rows
  holding ink, none of it in a run that crosses into another row. The most clean rows win
  (a double height holds two runs per row: half as many); on a tie the hint (below), then
  the smaller height. A run that crosses rows (box-drawing lines joining the rows of a text
  UI, a highlight drawn past its cells) makes the rows it crosses *odd*: the caller reads
  them as a block of text, as before;
- **columns**: over the clean rows, how many have ink in each pixel column. A glyph keeps a
  bearing to its cell's edge, so for the true cell width (``ASPECT`` of the height) one
  phase puts the cells' first columns where there is little ink: its share of ink, over an
  average column's, must be at most ``MAX_EDGE_INK``, and at most ``CONTRAST`` times the
  best of any other width. Text that several grids fit as well (a few short words) has no
  grid.

No grid: the caller reads the frame as before (a block of text, :mod:`deskpilot.vision.ocr`).
A grid found in one frame is tried first on the next (``hint``), so two frames of one
terminal cut their cells the same way even when the second shows a single row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PIL import Image

from deskpilot.vision.bands import INK_DELTA
from deskpilot.vision.cursor import MAX_CELL

#: A cell's width over its height lies in this range (monospace fonts: about 0.45-0.6; the
#: range leaves out twice a true width).
ASPECT = (0.35, 0.7)
#: The ink on the cells' first columns, over an average column's, is at most this (14 pt
#: DejaVu Sans Mono: 0.05; 10 pt, whose glyphs fill more of their cells: 0.34).
MAX_EDGE_INK = 0.5
#: ... and less than this times the best of any other width (14 pt: 0.06; 10 pt: 0.46; a
#: few glyphs that many widths fit with no edge ink at all: 0, no grid).
CONTRAST = 0.6
#: A row of cells inked across more than this share of its width is a bar, not text: its
#: cells do not tell where cells begin.
BAR = 0.9

Span = tuple[int, int]  # first, end (exclusive)


@dataclass(frozen=True, slots=True)
class Grid:
    """Cells of ``width`` x ``height`` px; the first column starts at x ``left``, rows
    start at y = ``top`` + k x ``height`` (``0 <= top < height``)."""

    width: int
    height: int
    left: int
    top: int

    def columns(self, image_width: int) -> int:
        """Whole cells in a row of an image ``image_width`` px wide."""
        return max(0, (image_width - self.left) // self.width)

    def row_of(self, y: int) -> int:
        return (y - self.top) // self.height

    def row_span(self, row: int, image_height: int) -> Span:
        """Pixel rows of cell row ``row``, clipped to the image."""
        first = self.top + row * self.height
        return max(0, first), min(image_height, first + self.height)

    def moved(self, dy: int) -> Grid:
        """The same grid in an image whose row 0 is this one's row ``dy``."""
        return Grid(self.width, self.height, self.left, (self.top - dy) % self.height)


@dataclass(frozen=True, slots=True)
class Layout:
    """A frame's grid, and the pixel rows not on it (``odd``: read as blocks of text)."""

    grid: Grid
    odd: tuple[Span, ...]


def background(gray: Image.Image) -> int:
    """The most common pixel value: the background of a terminal's screen."""
    histogram = gray.histogram()
    return max(range(256), key=histogram.__getitem__)


def ink_mask(gray: Image.Image, bg: int) -> Image.Image:
    """255 where a pixel differs from ``bg`` by more than ``INK_DELTA``, else 0."""
    return gray.point([255 if abs(v - bg) > INK_DELTA else 0 for v in range(256)])


def ink_runs(mask: Image.Image) -> list[Span]:
    """The runs of pixel rows with ink in ``mask`` (see :func:`ink_mask`)."""
    column = _any_along(mask, horizontal=True).tobytes()
    runs: list[Span] = []
    start = None
    for y, ink in enumerate([*column, 0]):
        if ink and start is None:
            start = y
        elif not ink and start is not None:
            runs.append((start, y))
            start = None
    return runs


def find_grid(mask: Image.Image, hint: Grid | None = None) -> Layout | None:
    """The grid of character cells of a frame prepared for OCR, from its ink ``mask``
    (:func:`ink_mask`), or ``None`` when its text is not on one. ``hint``: a grid found
    before, kept when it fits as well as any."""
    runs = ink_runs(mask)
    if not runs:
        return None
    pitch = _row_pitch(runs, hint)
    if pitch is None:
        return None
    height, top = pitch
    clean, odd = _rows(runs, height, top)
    if not clean:
        return None
    columns = _columns(_ink_counts(mask, height, top, clean), height, hint)
    if columns is None:
        return None
    width, left = columns
    spans = tuple(
        (max(0, top + first * height), min(mask.height, top + (last + 1) * height))
        for first, last in odd
    )
    return Layout(Grid(width, height, left, top), spans)


def row_ink(mask: Image.Image, height: int, top: int) -> tuple[int, list[bytes]]:
    """The first row of cells (0, or -1 for the partial row above ``top``) and, for it and
    each row of cells below, one byte per pixel column: 255 where the column has ink in
    that row of cells (``mask``: :func:`ink_mask`), else 0."""
    first = top - height if top > 0 else 0
    count = -(-(mask.height - first) // height)
    rows = mask.crop((0, first, mask.width, first + count * height))
    data = _any_along(rows, horizontal=False, step=height).tobytes()
    width = mask.width
    return (first - top) // height, [data[r * width : (r + 1) * width] for r in range(count)]


def _row_pitch(runs: list[Span], hint: Grid | None) -> tuple[int, int] | None:
    """(height, top) of the rows of cells: see the module's docstring."""
    lengths = sorted(b - a for a, b in runs)
    typical = lengths[len(lengths) // 2]
    if typical > MAX_CELL[1]:
        return None
    heights = range(max(typical, 2), min(MAX_CELL[1], 2 * typical) + 1)
    candidates = [(height, _best_phase(runs, height)) for height in heights]
    if hint is not None:
        candidates.insert(0, (hint.height, hint.top))
    best, chosen = 0, None
    for height, top in candidates:  # hint first, then by height: ties keep the first
        clean = len(_rows(runs, height, top)[0])
        if clean > best:
            best, chosen = clean, (height, top)
    return chosen


def _best_phase(runs: list[Span], height: int) -> int:
    """The phase (0 <= top < height) that puts the most runs inside one row of cells: a run
    of length ``n`` starting at ``a`` fits the phases ``a - (height - n)`` to ``a``."""
    fits = [0] * (height + 1)
    for a, b in runs:
        slack = height - (b - a)
        if slack < 0:
            continue
        start = (a - slack) % height
        end = start + slack + 1  # exclusive; may wrap past ``height``
        fits[start] += 1
        if end <= height:
            fits[end] -= 1
        else:
            fits[height] -= 1
            fits[0] += 1
            fits[end - height] -= 1
    best, phase, count = -1, 0, 0
    for top in range(height):
        count += fits[top]
        if count > best:
            best, phase = count, top
    return phase


def _rows(runs: list[Span], height: int, top: int) -> tuple[list[int], list[Span]]:
    """The clean rows of cells, and the odd ones as (first, last) row ranges, merged."""
    inked: set[int] = set()
    odd: list[Span] = []
    for a, b in runs:
        first, last = (a - top) // height, (b - 1 - top) // height
        if first == last:
            inked.add(first)
        elif odd and first <= odd[-1][1] + 1:
            odd[-1] = (odd[-1][0], max(odd[-1][1], last))
        else:
            odd.append((first, last))
    clean = [r for r in sorted(inked) if not any(lo <= r <= hi for lo, hi in odd)]
    return clean, odd


def _ink_counts(mask: Image.Image, height: int, top: int, clean: list[int]) -> bytes:
    """Per pixel column, the share of the clean rows of cells with ink there (0-255: only
    ratios are compared), leaving out bars (``BAR``)."""
    width = mask.width
    first, lines = row_ink(mask, height, top)
    kept = bytearray()
    for row in clean:
        line = lines[row - first]
        inked = width - line.count(0)
        if 0 < inked <= BAR * width:
            kept += line
    if not kept:
        return b""
    stacked = Image.frombytes("L", (width, len(kept) // width), bytes(kept))
    return stacked.resize((width, 1), Image.Resampling.BOX).tobytes()


def _columns(counts: bytes, height: int, hint: Grid | None) -> tuple[int, int] | None:
    """(width, left) of the cells, from ``counts`` (per pixel column, the share of rows of
    cells with ink there); see the module's docstring."""
    total = sum(counts)
    if total == 0:
        return None
    low, high = math.ceil(ASPECT[0] * height), min(int(ASPECT[1] * height), MAX_CELL[0])
    widths = range(max(2, low), high + 1)
    edges: dict[int, tuple[float, int]] = {}  # width: (edge ink / an average column's, left)
    for width in widths:
        score, left = min((sum(counts[left::width]), left) for left in range(width))
        edges[width] = (score * width / total, left)
    if not edges:
        return None
    width = min(edges, key=lambda w: (edges[w][0], w))
    edge, left = edges[width]
    if hint is not None and hint.height == height and hint.width <= len(counts):
        hinted = sum(counts[hint.left :: hint.width]) * hint.width / total
        if hinted <= MAX_EDGE_INK and hinted <= edge / CONTRAST:
            return hint.width, hint.left
    others = [edges[w][0] for w in edges if w != width]
    if edge > MAX_EDGE_INK or (others and edge >= CONTRAST * min(others)):
        return None
    return width, left


def _any_along(mask: Image.Image, *, horizontal: bool, step: int | None = None) -> Image.Image:
    """A 0/255 mask reduced along its rows (``horizontal``) or its columns to one pixel per
    ``step`` pixels (all of them by default): 255 where any of them is ink. Box reductions
    of at most 255 pixels (one ink pixel still averages to 1 or more), each result
    saturated again."""
    saturate = [0] + [255] * 255
    out = mask
    left = step or (mask.width if horizontal else mask.height)
    while left > 1:
        factor = min(left, 255)
        out = out.reduce((factor, 1) if horizontal else (1, factor)).point(saturate)
        left = -(-left // factor)
    return out
