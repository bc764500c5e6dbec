"""In-process capture of a window's on-screen area (or the whole screen), and its encoding.

mss keeps one persistent XCB connection and uses XShmGetImage when the server offers MIT-SHM
(falling back to GetImage by itself), which puts a 1280×800 grab well under a millisecond.
The grab is of the screen area the window covers, as the user sees it (overlapping windows
included, no pointer): a window-only pixmap would need a compositing manager.

PNG is written by the host itself: every row with filter type None, one zlib stream at level
1. Pillow's encoder chooses a filter per row adaptively, which on UI frames (flat colour and
text) costs more time than deflate saves: on a 1280×800 text page 29 ms vs 39 ms at the
same size, on a mostly empty desktop 3.4 ms vs 8.6 ms (see docs/host.md).

**Off the event loop.** A grab is a round trip to the X server that the calling thread
waits out (XShmGetImage of a 2560×1600 screen ≈ 4–25 ms, a GetImage without MIT-SHM more,
and up to ≈ 70 ms on a loaded machine). The host's event loop must not wait it out while a
tree read's D-Bus replies queue up behind it and that read's deadline counts down, so the
observer's grabs (and their PNG encoding) run on ``CaptureThread``: one thread of its own
with its own mss connection, which nothing else touches.

JPEG is for the dashboard's live view only (a frame every 100–200 ms, shown and dropped):
libjpeg-turbo through Pillow writes a 1280×800 frame in ≈ 2–3 ms at quality 80, where PNG
level 1 takes 8–30 ms depending on the content (benchmarks/ui_live_bench.py). Nothing stored
or shown to a model is ever a host JPEG.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import struct
import time
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import mss
from PIL import Image, ImageDraw

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import Rect

T = TypeVar("T")

PNG_COMPRESS_LEVEL = 1
JPEG_QUALITY = 80
MAX_PIXELS = 50_000_000
#: what a withheld window is painted with: the vault's redaction grey (vault/images.py)
WITHHELD_FILL = (128, 128, 128)


@dataclass(frozen=True, slots=True)
class Frame:
    """A captured area: packed BGRX rows, and where on screen it came from."""

    rect: Rect
    bgrx: bytes | bytearray
    capture_ms: float

    def image(self) -> Image.Image:
        return Image.frombuffer(
            "RGB", (self.rect.width, self.rect.height), self.bgrx, "raw", "BGRX", 0, 1
        )

    def fingerprint(self) -> int:
        """A cheap content checksum, for "did the picture change" questions."""
        return zlib.crc32(self.bgrx)


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _chunk(tag: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(data, zlib.crc32(tag))
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc)


def encode_png(image: Image.Image, level: int = PNG_COMPRESS_LEVEL) -> bytes:
    """An 8-bit RGB PNG: filter None on every row, one zlib stream at ``level``."""
    if image.mode != "RGB":
        buf = io.BytesIO()
        image.save(buf, "PNG", compress_level=level)
        return buf.getvalue()
    raw = image.tobytes()
    stride = image.width * 3
    rows = b"\x00" + b"\x00".join(raw[i : i + stride] for i in range(0, len(raw), stride))
    header = struct.pack(">IIBBBBB", image.width, image.height, 8, 2, 0, 0, 0)
    return (
        PNG_SIGNATURE
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(rows, level))
        + _chunk(b"IEND", b"")
    )


def encode_jpeg(image: Image.Image, quality: int = JPEG_QUALITY) -> bytes:
    """A baseline JPEG (4:2:0), for the live view's frames."""
    buf = io.BytesIO()
    image.save(buf, "JPEG", quality=quality)
    return buf.getvalue()


def paint_out(image: Image.Image, origin: Rect, rects: list[Rect]) -> list[Rect]:
    """Fill the screen rectangles ``rects`` of an image taken at ``origin`` with opaque grey,
    in place; returns the parts that fell inside the picture (screen coordinates)."""
    painted: list[Rect] = []
    draw: ImageDraw.ImageDraw | None = None
    for r in rects:
        x0, y0 = max(r.x, origin.x), max(r.y, origin.y)
        x1 = min(r.x + r.width, origin.x + origin.width)
        y1 = min(r.y + r.height, origin.y + origin.height)
        if x1 <= x0 or y1 <= y0:
            continue
        draw = draw or ImageDraw.Draw(image)
        draw.rectangle(
            (x0 - origin.x, y0 - origin.y, x1 - origin.x - 1, y1 - origin.y - 1),
            fill=WITHHELD_FILL,
        )
        painted.append(Rect(x=x0, y=y0, width=x1 - x0, height=y1 - y0))
    return painted


class Capturer:
    """One persistent mss instance; reopened once if its connection breaks."""

    def __init__(self, display_name: str) -> None:
        self._display_name = display_name
        self._mss: Any = None
        self._size = (0, 0)

    def _instance(self) -> Any:
        if self._mss is None:
            try:
                self._mss = mss.MSS(display=self._display_name)
                mon = self._mss.monitors[0]
                self._size = (int(mon["width"]), int(mon["height"]))
            except Exception as exc:
                raise DeskpilotError(
                    ErrorCode.CAPTURE_FAILED, f"cannot open the screen for capture: {exc}"
                ) from None
        return self._mss

    @property
    def uses_shm(self) -> bool | None:
        """True once an XShm grab succeeded; False when it fell back; None before the first."""
        inst = self._mss
        impl = getattr(inst, "_impl", inst)
        status = getattr(impl, "shm_status", None)
        if status is None:
            return False if inst is not None else None
        name = getattr(status, "name", "")
        return True if name == "AVAILABLE" else False if name == "UNAVAILABLE" else None

    def screen_size(self) -> tuple[int, int]:
        self._instance()
        return self._size

    def grab(self, rect: Rect) -> Frame:
        """The on-screen pixels of ``rect``, clipped to the screen."""
        sw, sh = self.screen_size()
        x0, y0 = max(rect.x, 0), max(rect.y, 0)
        x1, y1 = min(rect.x + rect.width, sw), min(rect.y + rect.height, sh)
        if x1 <= x0 or y1 <= y0:
            raise DeskpilotError(
                ErrorCode.CAPTURE_FAILED,
                "the window is entirely off screen",
                details={"bounds": rect.wire()},
            )
        clipped = Rect(x=x0, y=y0, width=x1 - x0, height=y1 - y0)
        if clipped.width * clipped.height > MAX_PIXELS:
            raise DeskpilotError(ErrorCode.SNAPSHOT_TOO_LARGE, "capture exceeds 50,000,000 px")
        start = time.perf_counter()
        region = {"left": x0, "top": y0, "width": clipped.width, "height": clipped.height}
        for attempt in range(2):
            try:
                shot = self._instance().grab(region)
                break
            except Exception as exc:
                self.close()
                if attempt:
                    raise DeskpilotError(
                        ErrorCode.CAPTURE_FAILED, f"screen grab failed: {exc}"
                    ) from None
        return Frame(clipped, shot.raw, (time.perf_counter() - start) * 1000)

    def close(self) -> None:
        if self._mss is not None:
            with contextlib.suppress(Exception):  # a broken connection cannot close cleanly
                self._mss.close()
            self._mss = None


class CaptureThread:
    """Grabs, and encodes what it grabbed, on one thread of its own with its own X connection
    (a ``Capturer`` created and used only there), so the caller's event loop goes on serving
    D-Bus replies meanwhile. Jobs run one at a time, in order."""

    def __init__(self, display_name: str) -> None:
        self._display_name = display_name
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="deskpilot-capture")
        self._capturer: Capturer | None = None  # the thread's own; touched only there
        self._pool.submit(self._warm)  # its connection and shared memory, before any observe

    def _warm(self) -> None:
        with contextlib.suppress(DeskpilotError):  # a real grab says what is wrong
            self._own().grab(Rect(x=0, y=0, width=1, height=1))

    def _own(self) -> Capturer:
        if self._capturer is None:
            self._capturer = Capturer(self._display_name)
        return self._capturer

    async def _run(self, job: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, job)

    async def grab(self, rect: Rect) -> Frame:
        """The on-screen pixels of ``rect`` (``Capturer.grab``), grabbed on the thread."""
        return await self._run(lambda: self._own().grab(rect))

    async def grab_png(self, rect: Rect) -> tuple[Frame, bytes, float]:
        """``rect`` grabbed and encoded as PNG on the thread: the frame, the PNG and the
        encoding's own time in ms."""

        def job() -> tuple[Frame, bytes, float]:
            frame = self._own().grab(rect)
            return (frame, *_timed_png(frame))

        return await self._run(job)

    async def encode(self, frame: Frame) -> tuple[bytes, float]:
        """A frame grabbed earlier, encoded as PNG on the thread; the PNG and its time."""
        return await self._run(lambda: _timed_png(frame))

    def close(self) -> None:
        """Close the thread's connection (on the thread, after the jobs before) and let the
        thread go."""
        with contextlib.suppress(RuntimeError):  # closed already
            self._pool.submit(self._close_own)
        self._pool.shutdown(wait=False)

    def _close_own(self) -> None:
        if self._capturer is not None:
            self._capturer.close()
            self._capturer = None


def _timed_png(frame: Frame) -> tuple[bytes, float]:
    start = time.perf_counter()
    png = encode_png(frame.image())
    return png, (time.perf_counter() - start) * 1000
