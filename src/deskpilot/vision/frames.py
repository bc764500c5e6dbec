"""Images in: load and check a screenshot, and re-encode it for a multimodal endpoint.

Everything the engine reads passes ``decode_image`` first, so "not an image", "too many bytes"
and "too many pixels" are typed errors before any decoder or OCR work runs. The limits follow
the snapshot limits (docs/architecture.md, "Numbers that matter"): a file of at most 20 MiB
and at most 50,000,000 pixels. The frame sent to an endpoint is the model frame of the same
table: JPEG, quality 85, long edge at most 1,600 px, aspect kept.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from deskpilot.protocol.errors import DeskpilotError, ErrorCode

MAX_IMAGE_BYTES = 20 * 1024 * 1024
MAX_IMAGE_PIXELS = 50_000_000
#: What a screenshot arrives as (the host's captures, files a person points at).
ACCEPTED_FORMATS = frozenset({"PNG", "JPEG", "WEBP", "BMP"})
MODEL_LONG_EDGE = 1600
MODEL_JPEG_QUALITY = 85


@dataclass(frozen=True)
class ModelFrame:
    """The JPEG sent to an endpoint and how it maps back: original = sent / ``scale``."""

    jpeg: bytes
    width: int
    height: int
    source_width: int
    source_height: int

    @property
    def scale(self) -> float:
        return self.width / self.source_width


def load_image_file(path: str | Path) -> bytes:
    """The bytes of an image file, refused before reading when larger than the limit."""
    p = Path(path)
    try:
        size = p.stat().st_size
    except OSError as exc:
        raise _bad_image(f"cannot read the image file: {exc.strerror or 'unreadable'}") from None
    if not p.is_file():
        raise _bad_image("the image path is not a regular file")
    _check_size(size)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise _bad_image(f"cannot read the image file: {exc.strerror or 'unreadable'}") from None
    _check_size(len(data))
    decode_image(data)  # an image or a typed error now, not at the first read
    return data


def decode_image(data: bytes) -> Image.Image:
    """The decoded image (RGB or L; transparency flattened onto white), or a typed error."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise _bad_image("the image must be bytes")
    _check_size(len(data))
    if not data:
        raise _bad_image("the image is empty")
    try:
        img = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError:
        raise DeskpilotError(
            ErrorCode.SNAPSHOT_TOO_LARGE,
            f"the image has more than {MAX_IMAGE_PIXELS:,} pixels",
            details={"maxPixels": MAX_IMAGE_PIXELS},
        ) from None
    except (UnidentifiedImageError, OSError, ValueError):
        raise _bad_image("the data is not an image (PNG, JPEG, WebP or BMP)") from None
    if img.format not in ACCEPTED_FORMATS:
        raise _bad_image(f"unsupported image format {img.format}; send PNG, JPEG, WebP or BMP")
    width, height = img.size
    if width < 1 or height < 1:
        raise _bad_image("the image has no pixels")
    if width * height > MAX_IMAGE_PIXELS:
        raise DeskpilotError(
            ErrorCode.SNAPSHOT_TOO_LARGE,
            f"the image is {width}x{height}: more than {MAX_IMAGE_PIXELS:,} pixels",
            details={"width": width, "height": height, "maxPixels": MAX_IMAGE_PIXELS},
        )
    try:
        img.load()
    except (OSError, ValueError, Image.DecompressionBombError):
        raise _bad_image("the image data is truncated or corrupt") from None
    return _flatten(img)


def model_frame(img: Image.Image) -> ModelFrame:
    """``img`` as the endpoint's JPEG: long edge at most 1,600 px (never enlarged)."""
    width, height = img.size
    factor = min(1.0, MODEL_LONG_EDGE / max(width, height))
    if factor < 1.0:
        size = (max(1, round(width * factor)), max(1, round(height * factor)))
        img = img.resize(size, Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    img.convert("RGB").save(buf, format="JPEG", quality=MODEL_JPEG_QUALITY, optimize=True)
    return ModelFrame(buf.getvalue(), img.width, img.height, width, height)


def _flatten(img: Image.Image) -> Image.Image:
    if img.mode in ("RGB", "L"):
        return img
    if img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info):
        rgba = img.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(background, rgba).convert("RGB")
    return img.convert("RGB")


def _check_size(size: int) -> None:
    if size > MAX_IMAGE_BYTES:
        raise DeskpilotError(
            ErrorCode.SNAPSHOT_TOO_LARGE,
            f"the image is {size:,} bytes: more than the {MAX_IMAGE_BYTES:,}-byte limit",
            details={"bytes": size, "maxBytes": MAX_IMAGE_BYTES},
        )


def _bad_image(message: str) -> DeskpilotError:
    return DeskpilotError(ErrorCode.INVALID_REQUEST, message, details={"cause": "image"})
