"""The local OCR engine: Debian's tesseract through ``tesserocr``, one engine per process.

Why these choices (measured in docs/vision.md, "Engine settings"):

- ``tesserocr`` keeps the engine and its model loaded between calls; the ``tesseract`` CLI
  reloads them for every image.
- ``OMP_THREAD_LIMIT=1`` is set (unless the caller set it) before the library loads: Debian's
  libtesseract is built with OpenMP and starts more threads than a small machine has cores,
  which makes it several times slower, not faster.
- LSTM only; page segmentation "sparse text" (a screenshot is scattered labels, not a page);
  the image in grayscale with light-on-dark regions inverted first (:func:`dark_text_on_light`:
  tesseract's own inverted-text detection misses a dark bar's labels), so that detection is
  turned off (``tessedit_do_invert=0``), which also saves a little time.
- Lines are built from words: a word made only of border glyphs (``|``, ``[``...) is what
  tesseract makes of a button's frame, so it is dropped and the line's box is the union of
  the words kept; a line under ``MIN_CONFIDENCE`` is dropped as garbage; pieces of one line
  that tesseract's layout cut apart at a word space are joined again (:mod:`.lines`).

Boxes are in pixels of the image given: the engine reads the image at its own size, so
tesseract's coordinates are the caller's. One engine is shared through a lock; callers on
the event loop go through :func:`ocr_image`, which runs it in a worker thread.

A large frame with a background band near its middle (:func:`~deskpilot.vision.bands.split_row`)
is read as two bands at once: the bottom one by a second tesseract API on a thread
(:mod:`deskpilot.vision.pool`), the top one by this engine; the lines are the same as the
whole frame's, in 0.5–0.6 of the time on two cores.

A terminal's engine (:func:`terminal_engine`) reads its frame as a grid of character cells
instead: tesseract reads a row only while it shows glyphs not read before, the other rows
are written out from the glyphs (:mod:`deskpilot.vision.glyphs`); a full 1280x800 terminal
in ~0.16 s of CPU instead of ~1.3 s.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PIL import Image, ImageChops, ImageFilter, ImageOps

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.vision import pool
from deskpilot.vision.bands import MIN_BAND, MIN_SPLIT_PIXELS, RawLine, Word, split_row
from deskpilot.vision.cursor import erase_block_cursor
from deskpilot.vision.evidence import OcrLine, OcrResult, OcrWord
from deskpilot.vision.frames import decode_image
from deskpilot.vision.glyphs import GlyphCache, read_grid, refit
from deskpilot.vision.grid import background
from deskpilot.vision.lines import join_fragments
from deskpilot.vision.lines import reading_order as reading_order  # re-exported
from deskpilot.vision.polarity import backgrounds_to_light

if TYPE_CHECKING:
    from tesserocr import PyTessBaseAPI

#: Lines whose (length-weighted) word confidence is under this are dropped as garbage.
#: a box in pixels of the image given: x, y, width, height
Box = tuple[int, int, int, int]

MIN_CONFIDENCE = 50.0
#: a line dropped under MIN_CONFIDENCE is said as unread when it had at least this many
#: characters: the artefacts a page read finds (the edge of a dark bar read as "cr", an
#: icon's outline) are one to three; "-rw-r--r--" dropped from a listing is ten
MIN_UNREAD_CHARS = 4
#: Tesseract's page segmentation modes used here: "sparse text" for screenshots (scattered
#: labels), "a single uniform block of text" for a terminal's grid of text (read whole lines,
#: in half the time; docs/vision.md, "Visual trees")
PSM_SPARSE_TEXT = 11
PSM_SINGLE_BLOCK = 6
DEFAULT_LANG = "eng"
#: Where Debian's tesseract-ocr-eng puts its model (TESSDATA_PREFIX overrides it).
DEBIAN_TESSDATA = "/usr/share/tesseract-ocr/5/tessdata"
DEBIAN_PACKAGES = "tesseract-ocr tesseract-ocr-eng"
BUILD_PACKAGES = "libtesseract-dev libleptonica-dev pkg-config g++ python3-dev"
#: Tesseract's reading of a widget's frame, not text.
_BORDER_GLYPHS = frozenset("|[]{}()!")
#: Polarity: a neighbourhood mean under this (of 255) counts as a dark background.
_DARK_BACKGROUND = 110
_BACKGROUND_RADIUS = 12


class OcrEngine:
    """One loaded tesseract API behind a lock. Loaded on first use; a missing library or
    language data is a typed ``vision_unavailable`` error naming the packages to install.

    ``split_min_pixels``: frames of at least this many pixels may be read in two bands at
    once (``None``: always read whole). ``psm``: tesseract's page segmentation mode."""

    def __init__(
        self,
        *,
        lang: str = DEFAULT_LANG,
        tessdata: str | Path | None = None,
        min_confidence: float = MIN_CONFIDENCE,
        psm: int = PSM_SPARSE_TEXT,
    ) -> None:
        self.lang = lang
        self.psm = psm
        self.tessdata = str(tessdata) if tessdata is not None else _default_tessdata()
        self.min_confidence = min_confidence
        self._lock = threading.Lock()
        self._api: PyTessBaseAPI | None = None
        self.split_min_pixels: int | None = MIN_SPLIT_PIXELS
        #: paint a terminal's block cursor out before reading (vision/cursor.py)
        self.erase_cursor = False
        #: background rows a band cut needs, and rows of background added at each band's
        #: cut edge (a cut 1 px from a line of text makes tesseract misread its first glyph)
        self.split_min_band = MIN_BAND
        self.band_pad = 0
        #: a terminal's engine reads a grid of cells, each distinct glyph once, keeping what
        #: it read here (vision/glyphs.py); ``None``: read as page segmentation says
        self.glyphs: GlyphCache | None = None
        #: grayscale by each pixel's strongest channel (:func:`colour_gray`), not luminance:
        #: a terminal's coloured text (``ls --color``) stays as dark as its black text
        self.colour_text = False

    def read(self, image: bytes) -> OcrResult:
        """OCR of encoded image bytes (PNG, JPEG, WebP, BMP). Blocking: use off the loop."""
        started = time.perf_counter()
        img = decode_image(image)
        lines, unread = self.read_lines(img)
        elapsed = (time.perf_counter() - started) * 1000.0
        return OcrResult(
            lines=tuple(lines),
            width=img.width,
            height=img.height,
            elapsed_ms=elapsed,
            min_confidence=self.min_confidence,
            unread=tuple(unread),
        )

    def recognize(self, img: Image.Image, *, top: int = 0) -> list[OcrLine]:
        """The lines of a decoded image, in reading order. ``top``: the image is a band of a
        frame starting at that row (a terminal's grid is then where the frame's was)."""
        return self.read_lines(img, top=top)[0]

    def read_lines(self, img: Image.Image, *, top: int = 0) -> tuple[list[OcrLine], list[Box]]:
        """:meth:`recognize`'s lines, and the boxes of the lines of text found but too
        unclear to read (at least ``MIN_UNREAD_CHARS`` characters other than border glyphs,
        under ``min_confidence``), top to bottom."""
        gray = self.prepared(img)
        raw = read_grid(self, gray, self.glyphs, top=top) if self.glyphs is not None else None
        if raw is None:  # no glyph cache, or no grid of cells: the frame as a page
            raw = self._recognize_page(gray)
        lines: list[OcrLine] = []
        unread: list[Box] = []
        for r in raw:
            line = self._line(r)
            if line is not None:
                lines.append(line)
            elif _text_chars(r) >= MIN_UNREAD_CHARS:
                left, top_, right, bottom = r.box
                unread.append((left, top_, right - left, bottom - top_))
        return join_fragments(lines), sorted(unread, key=lambda b: (b[1], b[0]))

    def prepared(self, img: Image.Image) -> Image.Image:
        """``img`` as tesseract is given it: grayscale, dark text on light, the cursor
        painted out (as this engine is set)."""
        if img.mode == "L":
            gray = img
        else:
            gray = colour_gray(img) if self.colour_text else img.convert("L")
        gray = dark_text_on_light(gray)
        if self.colour_text and img.mode != "L":  # a terminal's cells on their own colours
            gray = backgrounds_to_light(gray, img)
        if self.erase_cursor:
            gray = erase_block_cursor(gray)
        return gray

    def refit_grid(self, img: Image.Image) -> None:
        """Find a terminal's grid of cells again in the whole frame ``img`` before a band of
        it is read (vision/incremental.py): a band of a row or two fits a wrong cell height
        as well as the right one, and a grid found in a frame of few rows may be one (21 or
        22 px for 23 px cells: each row further down is cut higher, its glyphs misread and
        learned). Nothing for other engines."""
        if self.glyphs is not None:
            refit(self.glyphs, self.prepared(img))

    def widened(self, top: int, bottom: int, height: int) -> tuple[int, int]:
        """Rows ``[top, bottom)`` of a frame ``height`` rows high, widened to whole rows of
        the terminal's cells last found (a band read again must cut its cells as the frame
        did: glyphs are known by whole cells); unchanged for other engines."""
        grid = self.glyphs.grid if self.glyphs is not None else None
        if grid is None:
            return top, bottom
        first = grid.row_span(grid.row_of(top), height)[0]
        last = grid.row_span(grid.row_of(bottom - 1), height)[1]
        return min(top, first), max(bottom, last)

    def _recognize_page(self, gray: Image.Image) -> list[RawLine]:
        row = None
        if self.split_min_pixels is not None:
            row = split_row(gray, min_pixels=self.split_min_pixels, min_band=self.split_min_band)
        raw = pool.recognize_split(self, gray, row) if row is not None else None
        if raw is None:  # not split, or the partner failed: the whole frame, here
            raw = self.recognize_gray(gray)
        return raw

    def recognize_gray(self, gray: Image.Image, psm: int | None = None) -> list[RawLine]:
        """Tesseract's lines of a prepared grayscale image, in its coordinates; ``psm``: a
        page segmentation mode for this call instead of the engine's."""
        with self._lock:
            api = self._loaded()
            if psm is not None:
                api.SetPageSegMode(psm)
            try:
                api.SetImageBytes(gray.tobytes(), gray.width, gray.height, 1, gray.width)
                if not api.Recognize():
                    raise DeskpilotError(
                        ErrorCode.VISION_UNAVAILABLE,
                        "tesseract failed to recognise the image",
                        retryable=True,
                        details={"cause": "ocr_failed"},
                    )
                raw = _raw_lines(api)
            finally:
                api.Clear()
                if psm is not None:
                    api.SetPageSegMode(self.psm)
        return raw

    @property
    def loaded(self) -> bool:
        """Whether tesseract has been loaded (it is on the first read)."""
        return self._api is not None

    def load(self) -> None:
        """Load tesseract now (or raise its typed error) instead of on the first read."""
        with self._lock:
            self._loaded()

    def close(self) -> None:
        with self._lock:
            if self._api is not None:
                self._api.End()
                self._api = None

    def _loaded(self) -> PyTessBaseAPI:
        if self._api is None:
            self._api = self._load()
        return self._api

    def _load(self) -> PyTessBaseAPI:
        os.environ.setdefault("OMP_THREAD_LIMIT", "1")
        try:
            import tesserocr
        except ImportError:
            raise _unavailable(
                "the OCR engine is not installed: the Python package tesserocr is missing "
                f"(install Debian's {DEBIAN_PACKAGES} {BUILD_PACKAGES}, then "
                "pip install --no-binary tesserocr tesserocr)",
                cause="tesserocr_missing",
            ) from None
        model = Path(self.tessdata) / f"{self.lang}.traineddata"
        if not model.is_file():
            package = f"tesseract-ocr-{self.lang}" if self.lang.isalpha() else "its package"
            raise _unavailable(
                f"tesseract has no language data for {self.lang!r} in {self.tessdata} "
                f"(install the Debian package {package}; for English: {DEBIAN_PACKAGES})",
                cause="language_missing",
                lang=self.lang,
            )
        try:
            api = tesserocr.PyTessBaseAPI(
                path=self.tessdata.rstrip("/") + "/",
                lang=self.lang,
                oem=tesserocr.OEM.LSTM_ONLY,
                psm=self.psm,
            )
        except RuntimeError:
            raise _unavailable(
                f"tesseract could not load its {self.lang!r} model from {self.tessdata} "
                f"(reinstall the Debian packages {DEBIAN_PACKAGES})",
                cause="init_failed",
                lang=self.lang,
            ) from None
        api.SetVariable("tessedit_do_invert", "0")
        return api

    def _line(self, raw: RawLine) -> OcrLine | None:
        """The line's box is tesseract's line box (its ink, from layout analysis; LSTM word
        boxes can stray), narrowed past any border glyphs dropped at either end. A line
        under ``min_confidence`` is dropped, except a terminal's row of cells (``raw.row``):
        one misread word does not make a row garbage, so its least confident words are
        dropped until it passes, and its box is its words' (a row's word boxes are its
        cells' ink)."""
        keep = [bool(w.text) and not set(w.text) <= _BORDER_GLYPHS for w in raw.words]
        kept = [w for w, k in zip(raw.words, keep, strict=True) if k]
        if raw.row:
            kept = _confident(kept, self.min_confidence)
        if not kept or _confidence(kept) < self.min_confidence:
            return None
        left, top, right, bottom = raw.box
        if raw.row:
            left, right = kept[0].box[0], kept[-1].box[2]
        else:
            if not keep[0]:
                left = max(left, kept[0].box[0])
            if not keep[-1]:
                right = min(right, kept[-1].box[2])
        text = " ".join(w.text for w in kept)
        words = tuple(
            OcrWord(
                w.text,
                w.box[0],
                w.box[1],
                w.box[2] - w.box[0],
                w.box[3] - w.box[1],
                round(w.confidence, 1),
            )
            for w in kept
        )
        confidence = round(_confidence(kept), 1)
        return OcrLine(text, confidence, left, top, right - left, bottom - top, words)


def _text_chars(raw: RawLine) -> int:
    """The characters of a line's words other than border glyphs (a frame's edge read as
    ``|`` is no text)."""
    return sum(len(w.text) for w in raw.words if w.text and not set(w.text) <= _BORDER_GLYPHS)


def _confidence(words: list[Word]) -> float:
    """The words' confidences weighted by their lengths."""
    chars = sum(len(w.text) for w in words)
    return sum(w.confidence * len(w.text) for w in words) / chars if chars else 0.0


def _confident(words: list[Word], minimum: float) -> list[Word]:
    """``words`` without the least confident ones, dropped one by one until the rest reach
    ``minimum`` (in their order)."""
    kept = list(words)
    while kept and _confidence(kept) < minimum:
        kept.remove(min(kept, key=lambda w: w.confidence))
    return kept


def colour_gray(img: Image.Image) -> Image.Image:
    """``img`` in grayscale by the channel farthest from a light background (the darkest of
    R, G, B) or a dark one (the lightest). Luminance makes bright green or cyan text on
    white a light gray tesseract does not see (``ls --color`` file names: 1,725 of 1,904
    characters read, 1,891 this way); here every colour is as far from the background as
    black is."""
    rgb = img.convert("RGB")
    red, green, blue = rgb.split()
    pick = ImageChops.darker if background(rgb.convert("L")) >= 128 else ImageChops.lighter
    return pick(pick(red, green), blue)


def dark_text_on_light(gray: Image.Image) -> Image.Image:
    """``gray`` with light-on-dark regions (dark bars, panels, dark themes) inverted, so all
    text is dark on light as tesseract reads best: a pixel whose neighbourhood (a 25 px box
    blur) is dark is inverted. About 10 ms for 1280x800."""
    background = gray.filter(ImageFilter.BoxBlur(_BACKGROUND_RADIUS))
    dark = background.point(lambda v: 255 if v < _DARK_BACKGROUND else 0)
    if dark.getbbox() is None:
        return gray
    return Image.composite(ImageOps.invert(gray), gray, dark)


def _raw_lines(api: Any) -> list[RawLine]:
    from tesserocr import RIL, iterate_level

    lines: list[RawLine] = []
    iterator = api.GetIterator()
    if iterator is None:
        return lines
    for item in iterate_level(iterator, RIL.WORD):
        if item.IsAtBeginningOf(RIL.TEXTLINE) or not lines:
            line_box = item.BoundingBox(RIL.TEXTLINE)
            lines.append(RawLine(line_box if line_box is not None else (0, 0, 0, 0), []))
        try:
            text = (item.GetUTF8Text(RIL.WORD) or "").strip()
        except RuntimeError:
            continue
        box = item.BoundingBox(RIL.WORD)
        if not text or box is None:
            continue
        word = Word(" ".join(text.split()), float(item.Confidence(RIL.WORD)), box)
        lines[-1].words.append(word)
    return [line for line in lines if line.words and line.box[2] > line.box[0]]


def _default_tessdata() -> str:
    prefix = os.environ.get("TESSDATA_PREFIX", "").strip()
    return prefix or DEBIAN_TESSDATA


def _unavailable(message: str, *, cause: str, **details: str) -> DeskpilotError:
    return DeskpilotError(
        ErrorCode.VISION_UNAVAILABLE,
        message,
        retryable=False,
        details={"cause": cause, "debianPackages": DEBIAN_PACKAGES, **details},
    )


_ENGINE_LOCK = threading.Lock()
_ENGINE: OcrEngine | None = None


def default_engine() -> OcrEngine:
    """The process's one engine (English, Debian's tessdata or ``TESSDATA_PREFIX``)."""
    global _ENGINE
    with _ENGINE_LOCK:
        if _ENGINE is None:
            _ENGINE = OcrEngine()
        return _ENGINE


_BLOCK_ENGINE: OcrEngine | None = None


def terminal_engine() -> OcrEngine:
    """A new engine for a terminal's text: a grid of cells whose distinct glyphs tesseract
    reads once (vision/glyphs.py), coloured text kept dark (:func:`colour_gray`), the block
    cursor painted out; a frame with no grid is read as one uniform block of text, in two
    bands at once (a terminal's rows are ~4 px apart, 2 of them with no ink above or
    below)."""
    engine = OcrEngine(psm=PSM_SINGLE_BLOCK)
    engine.erase_cursor = True
    engine.colour_text = True
    engine.glyphs = GlyphCache()
    engine.split_min_band = 2
    engine.band_pad = 8
    return engine


def block_engine() -> OcrEngine:
    """The process's engine for a terminal (:func:`terminal_engine`), loaded on first use:
    its glyphs serve every terminal window read."""
    global _BLOCK_ENGINE
    with _ENGINE_LOCK:
        if _BLOCK_ENGINE is None:
            _BLOCK_ENGINE = terminal_engine()
        return _BLOCK_ENGINE


def ocr_ready(engine: OcrEngine | None = None) -> bool:
    """Whether OCR can run here: tesserocr is installed and the language data is present.
    Cheap (no model is loaded); a caller uses it to decide whether to offer OCR at all."""
    chosen = engine if engine is not None else default_engine()
    if chosen.loaded:
        return True
    if importlib.util.find_spec("tesserocr") is None:
        return False
    return (Path(chosen.tessdata) / f"{chosen.lang}.traineddata").is_file()


async def ocr_image(image: bytes, *, engine: OcrEngine | None = None) -> OcrResult:
    """OCR of an encoded image, off the event loop."""
    chosen = engine if engine is not None else default_engine()
    return await asyncio.to_thread(chosen.read, image)
