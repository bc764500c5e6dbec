"""Which parts of a live frame are painted out, and the painting.

Password fields are painted out of live frames exactly as out of stored images: the regions
the host reports in an observation (``ObservationBody.sensitive_regions``, window
coordinates) filled with the vault's opaque grey by the vault's own painter
(:func:`deskpilot.vault.images.redact`). A frame is a picture of the *screen*, so the regions
of every window it shows are needed, not only the watched one's.

An observation reads the accessibility tree (tens of milliseconds per window), so regions
are not read per frame: :class:`SensitiveRegions` keeps the last regions of each window and
re-reads them at most once per :data:`REFRESH_S` per window, between frames (never while a
capture is on its way, so reading them adds no latency to a frame). What that means for a
person watching:

* a window the view has not read yet — the first frame, a window that just opened, one
  that was resized since its regions were read — is painted out *whole* until its regions
  are known (usually the next frame: new windows are read first);
* a password field that appears in a window already known (a dialog that switches pages)
  shows until that window's next read, at most :data:`REFRESH_S` later. Text typed into a
  known field is never shown: the field's region is painted from the moment it is known.

Regions and unknown windows are painted only where the window is on top: the part of a
window that another window covers is that other window's pixels (windows are listed topmost
first, so the covering ones are those before it).
"""

from __future__ import annotations

import io
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from PIL import Image

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import ObservationBody, Rect, WindowInfo
from deskpilot.vault import images

#: each window's regions are read again at most this often (seconds)
REFRESH_S = 1.0
#: a window whose read failed (for a reason other than being gone) is tried again after this
RETRY_S = 1.0
#: JPEG quality of a frame re-encoded after painting (the host's live frames use the same)
JPEG_QUALITY = 80

Observe = Callable[[str], Awaitable[ObservationBody]]


# ------------------------------------------------------------------ geometry


def intersect(a: Rect, b: Rect) -> Rect | None:
    x0, y0 = max(a.x, b.x), max(a.y, b.y)
    x1, y1 = min(a.x + a.width, b.x + b.width), min(a.y + a.height, b.y + b.height)
    if x1 <= x0 or y1 <= y0:
        return None
    return Rect(x=x0, y=y0, width=x1 - x0, height=y1 - y0)


def subtract(rect: Rect, covers: Sequence[Rect]) -> list[Rect]:
    """The parts of ``rect`` outside every rectangle of ``covers`` (at most four pieces per
    cover: the bands above and below it, then left and right of it)."""
    pieces = [rect]
    for cover in covers:
        rest: list[Rect] = []
        for piece in pieces:
            cut = intersect(piece, cover)
            if cut is None:
                rest.append(piece)
                continue
            top, bottom = piece.y, piece.y + piece.height
            left, right = piece.x, piece.x + piece.width
            bands = (
                (left, top, right, cut.y),
                (left, cut.y + cut.height, right, bottom),
                (left, cut.y, cut.x, cut.y + cut.height),
                (cut.x + cut.width, cut.y, right, cut.y + cut.height),
            )
            rest.extend(
                Rect(x=x0, y=y0, width=x1 - x0, height=y1 - y0)
                for x0, y0, x1, y1 in bands
                if x1 > x0 and y1 > y0
            )
        pieces = rest
    return pieces


# ------------------------------------------------------------------ what is known


@dataclass(slots=True)
class Known:
    """A window's regions as last read."""

    regions: list[Rect]  # window coordinates
    size: tuple[int, int]  # the window's size when they were read
    read_at: float  # time.monotonic()
    #: a never-captured app's window: painted whole here too (the host already did)
    withheld: bool = False


@dataclass(slots=True)
class _Pending:
    failed_at: float | None = None


class SensitiveRegions:
    """The last regions of each window a live source shows, and their refresh."""

    def __init__(self, observe: Observe, *, refresh_s: float = REFRESH_S) -> None:
        self._observe = observe
        self.refresh_s = refresh_s
        self._known: dict[str, Known] = {}
        self._pending: dict[str, _Pending] = {}
        #: observations made (the stats route shows it)
        self.reads = 0

    def note(self, windows: Sequence[WindowInfo]) -> None:
        """The windows of the latest frame: new ones wait to be read, gone ones are
        forgotten, a resized one is unknown again (its regions moved)."""
        present = {w.window_id for w in windows}
        for gone in set(self._known) - present:
            del self._known[gone]
        for gone in set(self._pending) - present:
            del self._pending[gone]
        for w in windows:
            known = self._known.get(w.window_id)
            size = (w.bounds.width, w.bounds.height)
            if known is not None and not known.withheld and known.size != size:
                del self._known[w.window_id]
            if w.window_id not in self._known:
                self._pending.setdefault(w.window_id, _Pending())

    def known(self, window_id: str) -> Known | None:
        return self._known.get(window_id)

    def due(self, now: float | None = None) -> list[str]:
        """Windows to read, most urgent first: never read (not failing), then the stalest."""
        now = time.monotonic() if now is None else now
        unknown = [
            wid
            for wid, p in self._pending.items()
            if p.failed_at is None or now - p.failed_at >= RETRY_S
        ]
        stale = sorted(
            (k.read_at, wid) for wid, k in self._known.items() if now - k.read_at >= self.refresh_s
        )
        return unknown + [wid for _, wid in stale]

    async def refresh(self, deadline: float) -> int:
        """Read due windows until ``deadline`` (``time.monotonic()``); at least one when any
        is due, so a view that never has time to spare still learns its windows. Returns how
        many were read."""
        done = 0
        for window_id in self.due():
            if done and time.monotonic() >= deadline:
                break
            await self._read(window_id)
            done += 1
        return done

    async def _read(self, window_id: str) -> None:
        self.reads += 1
        try:
            body = await self._observe(window_id)
        except DeskpilotError as exc:
            if exc.code in (ErrorCode.TARGET_NOT_FOUND, ErrorCode.NO_WINDOWS_AVAILABLE):
                self._pending.pop(window_id, None)
                self._known.pop(window_id, None)
            elif exc.code == ErrorCode.SENSITIVE_INPUT_BLOCKED:
                # a never-captured app: the host paints its whole window out of every frame
                self._store(window_id, [], (0, 0), withheld=True)
            else:
                self._pending.setdefault(window_id, _Pending()).failed_at = time.monotonic()
                self._known.pop(window_id, None)
            return
        size = (body.window.bounds.width, body.window.bounds.height)
        self._store(window_id, list(body.sensitive_regions), size)

    def _store(
        self, window_id: str, regions: list[Rect], size: tuple[int, int], *, withheld: bool = False
    ) -> None:
        self._pending.pop(window_id, None)
        self._known[window_id] = Known(regions, size, time.monotonic(), withheld)

    def boxes(self, windows: Sequence[WindowInfo], frame: Rect) -> list[Rect]:
        """What to paint in a frame taken at ``frame`` (screen pixels) showing ``windows``
        (topmost first): the secure regions of known windows and the whole of unknown ones,
        each only where its window is on top; in frame (image) pixels."""
        out: list[Rect] = []
        covers: list[Rect] = []
        for w in windows:
            b = w.bounds
            known = self._known.get(w.window_id)
            if known is None or known.withheld or known.size != (b.width, b.height):
                screen = [b]
            else:
                screen = [
                    Rect(x=b.x + r.x, y=b.y + r.y, width=r.width, height=r.height)
                    for r in known.regions
                ]
            for rect in screen:
                inside = intersect(rect, frame)
                if inside is None:
                    continue
                for piece in subtract(inside, covers):
                    out.append(
                        Rect(
                            x=piece.x - frame.x,
                            y=piece.y - frame.y,
                            width=piece.width,
                            height=piece.height,
                        )
                    )
            covers.append(b)
        return out


def paint(jpeg: bytes, boxes: Sequence[Rect], quality: int = JPEG_QUALITY) -> tuple[bytes, int]:
    """Paint ``boxes`` (image pixels) out of a host JPEG with the vault's painter; returns the
    new JPEG and how many boxes were painted. The size is checked before decoding."""
    if not boxes:
        return jpeg, 0
    if images.sniff_content_type(jpeg) != "image/jpeg":
        raise DeskpilotError(ErrorCode.PROTOCOL_ERROR, "a live frame must be a JPEG")
    try:
        img = Image.open(io.BytesIO(jpeg), formats=["JPEG"])
        width, height = img.size
        if width * height > images.MAX_SNAPSHOT_PIXELS:
            raise DeskpilotError(ErrorCode.SNAPSHOT_TOO_LARGE, "live frame exceeds 50,000,000 px")
        img.load()
    except DeskpilotError:
        raise
    except Exception as exc:  # Pillow raises many types for corrupt data
        raise DeskpilotError(ErrorCode.PROTOCOL_ERROR, "a live frame could not be decoded") from exc
    if img.mode != "RGB":
        img = img.convert("RGB")
    info = images.redact(img, list(boxes), 1.0)
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=quality)
    return buf.getvalue(), info.region_count
