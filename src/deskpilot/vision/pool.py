"""A second tesseract API on a thread, reading one band of a split frame while the engine
reads the other.

tesserocr releases the GIL while tesseract recognises, so two APIs on two threads use both
cores (docs/vision.md, "Large frames: two bands at once": the same gain a worker process gave,
without a process to spawn or a ``__main__`` guard for every script that reads frames).

- One partner per engine: its own API (same language, data and settings) behind its own
  lock, on one worker thread. It is loaded in the background on the first frame that could
  be split; until it is ready, frames are read whole, so the first large frame is never slower
  than without it. :func:`start` starts it and waits (benchmarks, tests).
- The engine reads the top band, the partner the bottom one; the bottom band's lines are
  moved to the frame's coordinates (:func:`~deskpilot.vision.bands.shifted`).
- If the partner cannot load or fails on a band, :func:`recognize_split` returns ``None`` and
  the caller reads the whole frame itself: the result is the whole frame's, or the engine's
  own typed error, never part of a frame. A partner that cannot load is not tried again.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from PIL import Image

from deskpilot.protocol.errors import DeskpilotError
from deskpilot.vision.bands import RawLine, shifted

if TYPE_CHECKING:
    from deskpilot.vision.ocr import OcrEngine


T = TypeVar("T")


@dataclass
class _Partner:
    engine: OcrEngine
    thread: ThreadPoolExecutor
    ready: Future[object]

    def usable(self) -> bool:
        return self.ready.done() and self.ready.exception() is None


_LOCK = threading.Lock()
_PARTNERS: dict[int, _Partner] = {}


def _partner(engine: OcrEngine) -> _Partner:
    from deskpilot.vision.ocr import OcrEngine

    with _LOCK:
        partner = _PARTNERS.get(id(engine))
        if partner is None:
            second = OcrEngine(
                lang=engine.lang,
                tessdata=engine.tessdata,
                min_confidence=engine.min_confidence,
                psm=engine.psm,
            )
            thread = ThreadPoolExecutor(1, thread_name_prefix="deskpilot-ocr-band")
            partner = _PARTNERS[id(engine)] = _Partner(second, thread, thread.submit(second.load))
        return partner


def submit(engine: OcrEngine, work: Callable[[OcrEngine], T]) -> Future[T] | None:
    """``work(partner)`` on the partner's thread, or ``None`` when ``engine``'s partner is
    not ready (its load is started then, in the background): the caller does the work
    itself. A terminal's rows (vision/glyphs.py) are read two at a time this way."""
    partner = _partner(engine)
    if not partner.usable():
        return None
    return partner.thread.submit(work, partner.engine)


def recognize_split(engine: OcrEngine, gray: Image.Image, row: int) -> list[RawLine] | None:
    """Tesseract's lines of ``gray`` read as ``[0, row)`` by ``engine`` and ``[row, height)``
    by its partner at the same time, in the frame's coordinates; ``None`` when the partner is
    not ready or could not do its part (the caller then reads the whole frame). ``engine``'s
    own typed errors propagate."""
    pad = engine.band_pad
    bottom = _padded(gray.crop((0, row, gray.width, gray.height)), pad, top=True)
    future = submit(engine, lambda partner: partner.recognize_gray(bottom))
    if future is None:
        return None
    top_lines = engine.recognize_gray(_padded(gray.crop((0, 0, gray.width, row)), pad))
    try:
        bottom_lines = future.result()
    except DeskpilotError:
        return None
    return top_lines + shifted(bottom_lines, row - pad)


def _padded(band: Image.Image, pad: int, *, top: bool = False) -> Image.Image:
    """``band`` with ``pad`` rows of background (white: after the polarity pass text is dark
    on light) added at its cut edge: the bottom, or with ``top`` the top."""
    if pad <= 0:
        return band
    out = Image.new("L", (band.width, band.height + pad), 255)
    out.paste(band, (0, pad if top else 0))
    return out


def start(engine: OcrEngine) -> bool:
    """Load ``engine``'s partner now and wait: whether frames can be read in two bands."""
    partner = _partner(engine)
    partner.ready.exception()  # waits
    return partner.usable()


def shutdown() -> None:
    """Close every partner (at interpreter exit; tests use it to start afresh)."""
    with _LOCK:
        partners = list(_PARTNERS.values())
        _PARTNERS.clear()
    for partner in partners:
        partner.thread.shutdown(wait=True, cancel_futures=True)
        partner.engine.close()


atexit.register(shutdown)
