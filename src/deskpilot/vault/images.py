"""The image products of a capture and the redaction that precedes all of them.

A capture yields up to four different things, never to be confused (docs/vault.md, "What a
capture produces"):

=================  ===================================  ===========  ================
product            size                                 encoding     stored
=================  ===================================  ===========  ================
original (image)   as captured                          PNG          encrypted
preview            width > 1,200 scaled to 1,200        PNG          encrypted
model frame        long edge ≤ 1,600                    JPEG q85     memory only
evidence frame     width ≤ 1,200, redacted              PNG          encrypted
=================  ===================================  ===========  ================

Only PNG is accepted from the host; its header is checked (≤ 64 MiB, ≤ 50,000,000 px, each
side ≤ 16,384) *before* decoding so a hostile or broken frame cannot make us allocate a
huge bitmap.

Sensitive regions (password fields reported by the accessibility tree) arrive in **window
coordinates**: pixels relative to the captured window's top-left corner, in the window's own
size (``observation.window.bounds.width/height``). The captured image may differ from that
size (HiDPI, a scaled capture), so regions are converted with ``scale = image / window`` per
axis and widened outward to whole pixels: a redaction that is a pixel too big is harmless,
one that is a pixel too small leaks the edge of a glyph.
"""

from __future__ import annotations

import io
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from PIL import Image, ImageDraw

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import Rect

MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024
MAX_SNAPSHOT_PIXELS = 50_000_000
MAX_IMAGE_DIMENSION = 16_384
MAX_PREVIEW_WIDTH = 1_200
MAX_EVIDENCE_WIDTH = 1_200
MAX_MODEL_LONG_EDGE = 1_600
MODEL_JPEG_QUALITY = 85
#: Opaque mid-grey: distinguishable from any real UI at a glance; the one fill wherever an
#: image is painted out.
REDACTION_FILL = (128, 128, 128, 255)
#: zlib level for PNGs we encode ourselves. Level 1 is ~5x faster than Pillow's default 6 and
#: only ~15 % larger on UI screenshots; evidence frames are written on every observation.
PNG_COMPRESS_LEVEL = 1

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
JPEG_MAGIC = b"\xff\xd8\xff"
GIF_MAGICS = (b"GIF87a", b"GIF89a")


@dataclass(frozen=True)
class RedactionInfo:
    """What was painted out; recorded with every stored frame so an audit can tell."""

    applied: bool
    region_count: int
    reason_codes: tuple[str, ...] = ()
    #: The regions as painted, in image pixels (x, y, width, height), after clipping.
    image_regions: tuple[tuple[int, int, int, int], ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "applied": self.applied,
            "regionCount": self.region_count,
            "reasonCodes": list(self.reason_codes),
            "imageRegions": [list(r) for r in self.image_regions],
        }


NO_REDACTION = RedactionInfo(applied=False, region_count=0)


def sniff_content_type(data: bytes) -> str | None:
    """The image type named by the magic bytes; None when it is none of PNG/JPEG/WebP/GIF."""
    if data.startswith(PNG_MAGIC):
        return "image/png"
    if data.startswith(JPEG_MAGIC):
        return "image/jpeg"
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:6] in GIF_MAGICS:
        return "image/gif"
    return None


def png_dimensions(png: bytes) -> tuple[int, int]:
    """Validate a host PNG's size limits from its IHDR without decoding it."""
    if len(png) > MAX_SNAPSHOT_BYTES:
        raise DeskpilotError(
            ErrorCode.SNAPSHOT_TOO_LARGE,
            f"snapshot is {len(png)} bytes; the limit is {MAX_SNAPSHOT_BYTES}",
            details={"byteLength": len(png), "limit": MAX_SNAPSHOT_BYTES},
        )
    if not png.startswith(PNG_MAGIC) or len(png) < 24 or png[12:16] != b"IHDR":
        raise DeskpilotError(
            ErrorCode.INVALID_REQUEST, "only PNG images are accepted from the host"
        )
    width, height = struct.unpack(">II", png[16:24])
    if width <= 0 or height <= 0:
        raise DeskpilotError(ErrorCode.INVALID_REQUEST, "PNG has an empty dimension")
    if (
        width > MAX_IMAGE_DIMENSION
        or height > MAX_IMAGE_DIMENSION
        or width * height > MAX_SNAPSHOT_PIXELS
    ):
        raise DeskpilotError(
            ErrorCode.SNAPSHOT_TOO_LARGE,
            f"snapshot is {width}x{height}; limits are {MAX_SNAPSHOT_PIXELS} px and "
            f"{MAX_IMAGE_DIMENSION} px per side",
            details={"width": width, "height": height},
        )
    return width, height


def decode_png(png: bytes) -> Image.Image:
    """Decode a validated host PNG into RGB or RGBA."""
    png_dimensions(png)
    try:
        img = Image.open(io.BytesIO(png), formats=["PNG"])
        img.load()
    except Exception as exc:  # Pillow raises many types for corrupt data
        raise DeskpilotError(ErrorCode.INVALID_REQUEST, "PNG could not be decoded") from exc
    if img.mode not in ("RGB", "RGBA"):
        img = img.convert("RGBA" if "A" in img.getbands() or img.mode == "P" else "RGB")
    return img


def encode_png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=PNG_COMPRESS_LEVEL)
    return buf.getvalue()


def region_scale(
    image_size: tuple[int, int], window_size: tuple[int, int] | None
) -> tuple[float, float]:
    """Window→image scale per axis; 1:1 when the window size is unknown or degenerate."""
    if window_size is None or window_size[0] <= 0 or window_size[1] <= 0:
        return (1.0, 1.0)
    return (image_size[0] / window_size[0], image_size[1] / window_size[1])


def image_box(
    region: Rect, scale: tuple[float, float], size: tuple[int, int]
) -> tuple[int, int, int, int] | None:
    """A window-coordinate region as an image box (x, y, width, height), rounded outwards
    and clipped to the image; None when nothing of it is inside."""
    sx, sy = scale
    x0 = max(0, math.floor(region.x * sx))
    y0 = max(0, math.floor(region.y * sy))
    x1 = min(size[0], math.ceil((region.x + region.width) * sx))
    y1 = min(size[1], math.ceil((region.y + region.height) * sy))
    if x1 <= x0 or y1 <= y0:
        return None
    return (x0, y0, x1 - x0, y1 - y0)


def redact(
    img: Image.Image,
    regions: Sequence[Rect],
    scale: float | tuple[float, float] = 1.0,
    *,
    reason: str = "secure_field",
) -> RedactionInfo:
    """Paint ``regions`` (window coordinates) out of ``img`` in place, opaque grey.

    ``scale`` converts window to image coordinates (see :func:`region_scale`). Regions that
    fall wholly outside the image are skipped and not counted.
    """
    if not regions:
        return NO_REDACTION
    s = (float(scale), float(scale)) if isinstance(scale, (int, float)) else scale
    boxes = [b for r in regions if (b := image_box(r, s, img.size)) is not None]
    if not boxes:
        return NO_REDACTION
    draw = ImageDraw.Draw(img)
    fill: tuple[int, int, int] | tuple[int, int, int, int] = (
        REDACTION_FILL if img.mode == "RGBA" else REDACTION_FILL[:3]
    )
    for x, y, w, h in boxes:
        draw.rectangle((x, y, x + w - 1, y + h - 1), fill=fill)
    return RedactionInfo(
        applied=True,
        region_count=len(boxes),
        reason_codes=(reason,),
        image_regions=tuple(boxes),
    )


def _fit_width(img: Image.Image, max_width: int) -> Image.Image:
    if img.width <= max_width:
        return img
    height = max(1, round(img.height * max_width / img.width))
    return img.resize((max_width, height), Image.Resampling.BILINEAR, reducing_gap=2.0)


def preview_image(img: Image.Image) -> Image.Image:
    """The preview: wider than 1,200 px → exactly 1,200 wide, aspect kept; else unchanged."""
    return _fit_width(img, MAX_PREVIEW_WIDTH)


def evidence_image(img: Image.Image) -> Image.Image:
    return _fit_width(img, MAX_EVIDENCE_WIDTH)


@dataclass(frozen=True)
class PreparedCapture:
    """A host PNG with its sensitive regions painted out, ready to be stored."""

    png: bytes
    width: int
    height: int
    redaction: RedactionInfo
    image: Image.Image | None  # decoded pixels, when decoding was needed


def prepare_capture(
    png: bytes,
    *,
    regions: Sequence[Rect] = (),
    window_size: tuple[int, int] | None = None,
    redact_enabled: bool = True,
) -> PreparedCapture:
    """Validate a host PNG and paint out its secure regions.

    With nothing to redact the host's bytes are kept as they are (no decode/re-encode); this
    is the common case and keeps capture cheap.
    """
    width, height = png_dimensions(png)
    if not regions or not redact_enabled:
        reason = () if redact_enabled or not regions else ("redaction_disabled_by_setting",)
        return PreparedCapture(
            png=png,
            width=width,
            height=height,
            redaction=RedactionInfo(applied=False, region_count=0, reason_codes=reason),
            image=None,
        )
    img = decode_png(png)
    info = redact(img, regions, region_scale(img.size, window_size))
    return PreparedCapture(
        png=encode_png(img) if info.applied else png,
        width=width,
        height=height,
        redaction=info,
        image=img,
    )


def model_frame(
    png: bytes,
    *,
    redact_regions: Sequence[Rect] | None = None,
    window_size: tuple[int, int] | None = None,
) -> tuple[bytes, int, int, float]:
    """The decision model's view: long edge ≤ 1,600, JPEG q85, in memory only.

    Returns ``(jpeg, width, height, scale)`` where ``scale = width / original width`` so a
    coordinate the model gives in frame pixels maps back by dividing. Pass ``redact_regions``
    (window coordinates) to keep secure fields painted out; the runtime omits them only when
    the user has turned ``redactSensitiveContent`` off.
    """
    img = decode_png(png)
    if redact_regions:
        redact(img, redact_regions, region_scale(img.size, window_size))
    original_width = img.width
    long_edge = max(img.size)
    if long_edge > MAX_MODEL_LONG_EDGE:
        factor = MAX_MODEL_LONG_EDGE / long_edge
        size = (max(1, round(img.width * factor)), max(1, round(img.height * factor)))
        img = img.resize(size, Image.Resampling.BILINEAR, reducing_gap=2.0)
    scale = img.width / original_width
    if img.mode != "RGB":
        img = img.convert("RGB")
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=MODEL_JPEG_QUALITY)
    return buf.getvalue(), img.width, img.height, scale


__all__ = [
    "MAX_EVIDENCE_WIDTH",
    "MAX_MODEL_LONG_EDGE",
    "MAX_PREVIEW_WIDTH",
    "MAX_SNAPSHOT_BYTES",
    "MAX_SNAPSHOT_PIXELS",
    "MODEL_JPEG_QUALITY",
    "NO_REDACTION",
    "REDACTION_FILL",
    "PreparedCapture",
    "RedactionInfo",
    "decode_png",
    "encode_png",
    "evidence_image",
    "model_frame",
    "png_dimensions",
    "prepare_capture",
    "preview_image",
    "redact",
    "region_scale",
    "sniff_content_type",
]
