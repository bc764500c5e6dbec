"""OCR of a window again, reading only the rows that changed since its last frame.

A visual tree is read on every observation of a window that shows no accessibility tree, and
OCR costs about 0.5 ms of CPU per character: a terminal full of text (~3,000 characters)
takes over a second. Between two observations such a window usually changes in a few rows
(a command typed at the prompt, one line of output) or not at all. So the last frame of each
window is kept (its grayscale pixels and its reading) and the next frame is compared with it:

* ``hit``: the same pixels: the last reading, no OCR;
* ``patched``: the rows that differ (widened to every old line they touch, and a margin, and
  for a terminal to whole rows of its cells) are read again as one band; the old lines
  above and below it are kept as they were;
* ``full``: the first frame of a window, another size, another engine, or a change over more
  than ``MAX_PATCH`` of the height (output scrolled): the whole frame is read.

A patched reading is the lines of the band as tesseract reads that band, which may differ
from what it would read of the whole frame in the rows of the band (it is the band's text,
read now); the rows outside it are pixel for pixel what the kept reading read.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from PIL import Image, ImageChops, ImageDraw

from deskpilot.vision.evidence import OcrLine, OcrResult, OcrWord
from deskpilot.vision.frames import decode_image
from deskpilot.vision.lines import reading_order
from deskpilot.vision.ocr import OcrEngine

#: A change over more of the frame's height than this is read whole.
MAX_PATCH = 0.5
#: Rows of margin around a changed band (a glyph's antialiasing, a cursor's outline).
MARGIN = 4
#: Windows (and popups over them) whose last frame is kept (the least recently read is
#: dropped).
MAX_WINDOWS = 16

Cache = Literal["hit", "patched", "full"]


@dataclass(frozen=True, slots=True)
class _Last:
    psm: int
    gray: Image.Image
    result: OcrResult


@dataclass(frozen=True, slots=True)
class Reading:
    """A reading and how it was made (``rows``: the frame rows OCR read, 0 on a hit)."""

    result: OcrResult
    cache: Cache
    rows: int


class IncrementalReader:
    """The last frame of each window (by a caller's key), and reads that reuse it."""

    def __init__(self, max_windows: int = MAX_WINDOWS) -> None:
        self._last: OrderedDict[str, _Last] = OrderedDict()
        self._lock = threading.Lock()
        self.max_windows = max_windows

    def read(
        self, engine: OcrEngine, key: str, image: bytes, masked: Sequence[Box] = ()
    ) -> Reading:
        """OCR of ``image`` (encoded), reusing the last frame read under ``key``. Blocking.
        ``masked``: boxes of the image (x, y, width, height) painted over with its most common
        colour first — other windows lying over this one, whose text is not its own."""
        return self.read_image(engine, key, decode_image(image), masked)

    def read_image(
        self,
        engine: OcrEngine,
        key: str,
        image: Image.Image,
        masked: Sequence[Box] = (),
        *,
        patch: bool = True,
    ) -> Reading:
        """:meth:`read` of an image already decoded (a part of a frame: a popup's box).
        ``patch=False``: the same pixels are a hit, any change is read whole (a band cut
        through an icon view's icons reads their pictures as letters)."""
        started = time.perf_counter()
        img = _masked(image, masked)
        gray = img if img.mode == "L" else img.convert("L")
        with self._lock:
            last = self._last.get(key)
        if not patch and last is not None and not _same(last.gray, gray):
            last = None
        reading = self._read(engine, img, gray, last)
        elapsed = (time.perf_counter() - started) * 1000.0
        result = replace(reading.result, width=img.width, height=img.height, elapsed_ms=elapsed)
        with self._lock:
            self._last[key] = _Last(engine.psm, gray, result)
            self._last.move_to_end(key)
            while len(self._last) > self.max_windows:
                self._last.popitem(last=False)
        return Reading(result, reading.cache, reading.rows)

    def forget(self, key: str | None = None) -> None:
        with self._lock:
            if key is None:
                self._last.clear()
            else:
                self._last.pop(key, None)

    def _read(
        self, engine: OcrEngine, img: Image.Image, gray: Image.Image, last: _Last | None
    ) -> Reading:
        if last is None or last.psm != engine.psm or last.gray.size != gray.size:
            return self._full(engine, img)
        box = ImageChops.difference(last.gray, gray).getbbox()
        if box is None:
            return Reading(last.result, "hit", 0)
        top, bottom = _band(last.result.lines, box[1], box[3], gray.height)
        engine.refit_grid(img)  # the band is cut by the whole frame's cells
        top, bottom = engine.widened(top, bottom, gray.height)
        if bottom - top > MAX_PATCH * gray.height:
            return self._full(engine, img)
        band, band_unread = engine.read_lines(img.crop((0, top, img.width, bottom)), top=top)
        kept = [ln for ln in last.result.lines if ln.y + ln.height <= top or ln.y >= bottom]
        lines = reading_order([*kept, *(_shifted(ln, top) for ln in band)])
        unread = sorted(
            [
                *(b for b in last.result.unread if b[1] + b[3] <= top or b[1] >= bottom),
                *((x, y + top, w, h) for x, y, w, h in band_unread),
            ],
            key=lambda b: (b[1], b[0]),
        )
        result = OcrResult(
            tuple(lines), img.width, img.height, 0.0, engine.min_confidence, tuple(unread)
        )
        return Reading(result, "patched", bottom - top)

    @staticmethod
    def _full(engine: OcrEngine, img: Image.Image) -> Reading:
        lines, unread = engine.read_lines(img)
        result = OcrResult(
            tuple(lines), img.width, img.height, 0.0, engine.min_confidence, tuple(unread)
        )
        return Reading(result, "full", img.height)


def _same(a: Image.Image, b: Image.Image) -> bool:
    return a.size == b.size and ImageChops.difference(a, b).getbbox() is None


def _band(lines: tuple[OcrLine, ...], top: int, bottom: int, height: int) -> tuple[int, int]:
    """Rows ``[top, bottom)`` with a margin, widened until no old line crosses an edge."""
    top, bottom = max(0, top - MARGIN), min(height, bottom + MARGIN)
    changed = True
    while changed:
        changed = False
        for ln in lines:
            touches = ln.y < bottom and ln.y + ln.height > top
            if touches and (ln.y < top or ln.y + ln.height > bottom):
                top = max(0, min(top, ln.y - MARGIN))
                bottom = min(height, max(bottom, ln.y + ln.height + MARGIN))
                changed = True
    return top, bottom


def _shifted(line: OcrLine, dy: int) -> OcrLine:
    words = tuple(
        OcrWord(w.text, w.x, w.y + dy, w.width, w.height, w.confidence) for w in line.words
    )
    return OcrLine(line.text, line.confidence, line.x, line.y + dy, line.width, line.height, words)


_READER = IncrementalReader()


def window_reader() -> IncrementalReader:
    """The process's reader: one last frame per window, shared by every caller."""
    return _READER


#: a box of an image: x, y, width, height in pixels
Box = tuple[int, int, int, int]


def _masked(img: Image.Image, boxes: Sequence[Box]) -> Image.Image:
    """``img`` with ``boxes`` painted in its most common colour (its background, mostly: a
    flat patch in it reads as nothing, and a terminal's cell grid still fits around it)."""
    if not boxes:
        return img
    thumb = img.resize((64, 40), Image.Resampling.NEAREST)
    colours = thumb.getcolors(64 * 40) or [(1, thumb.getpixel((0, 0)))]
    fill = max(colours, key=lambda c: c[0])[1]
    out = img.copy()
    draw = ImageDraw.Draw(out)
    for x, y, w, h in boxes:
        if w > 0 and h > 0:
            draw.rectangle((x, y, x + w - 1, y + h - 1), fill=fill)
    return out
