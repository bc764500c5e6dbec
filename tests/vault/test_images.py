"""Image products, limits and redaction geometry."""

from __future__ import annotations

import io
import struct
import zlib

import pytest
from PIL import Image
from vault_helpers import decode, make_png

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import Rect
from deskpilot.vault import images

GREY = (128, 128, 128)


def _fake_png_header(width: int, height: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    return (
        images.PNG_MAGIC
        + struct.pack(">I", len(ihdr))
        + chunk
        + struct.pack(">I", zlib.crc32(chunk))
    )


def test_only_png_is_accepted() -> None:
    img = Image.new("RGB", (10, 10))
    for fmt in ("JPEG", "GIF", "BMP", "WEBP"):
        buf = io.BytesIO()
        img.save(buf, format=fmt)
        with pytest.raises(DeskpilotError) as err:
            images.png_dimensions(buf.getvalue())
        assert err.value.code is ErrorCode.INVALID_REQUEST
    with pytest.raises(DeskpilotError):
        images.png_dimensions(b"")


@pytest.mark.parametrize(
    ("width", "height"),
    [(10_000, 5_001), (16_385, 10), (10, 16_385), (7072, 7071)],
)
def test_pixel_and_dimension_limits_checked_before_decoding(width: int, height: int) -> None:
    with pytest.raises(DeskpilotError) as err:
        images.png_dimensions(_fake_png_header(width, height))
    assert err.value.code is ErrorCode.SNAPSHOT_TOO_LARGE


def test_limits_allow_the_maximum() -> None:
    assert images.png_dimensions(_fake_png_header(10_000, 5_000)) == (10_000, 5_000)


def test_byte_limit() -> None:
    too_big = _fake_png_header(100, 100) + b"\0" * (images.MAX_SNAPSHOT_BYTES)
    with pytest.raises(DeskpilotError) as err:
        images.png_dimensions(too_big)
    assert err.value.code is ErrorCode.SNAPSHOT_TOO_LARGE


def test_corrupt_png_body_is_a_clear_error() -> None:
    with pytest.raises(DeskpilotError) as err:
        images.decode_png(_fake_png_header(20, 20) + b"garbage")
    assert err.value.code is ErrorCode.INVALID_REQUEST


@pytest.mark.parametrize(
    ("size", "expected"),
    [((2560, 1600), (1200, 750)), ((1201, 100), (1200, 100)), ((1200, 900), (1200, 900))],
)
def test_preview_width(size: tuple[int, int], expected: tuple[int, int]) -> None:
    img = decode(make_png(*size))
    assert images.preview_image(img).size == expected


@pytest.mark.parametrize(
    ("size", "expected"),
    [((5120, 2880), (1600, 900)), ((1000, 3200), (500, 1600)), ((1280, 800), (1280, 800))],
)
def test_model_frame_long_edge_and_jpeg(size: tuple[int, int], expected: tuple[int, int]) -> None:
    jpeg, w, h, scale = images.model_frame(make_png(*size))
    assert (w, h) == expected
    assert jpeg.startswith(images.JPEG_MAGIC)
    assert decode(jpeg).size == expected
    assert scale == pytest.approx(expected[0] / size[0])


def test_redaction_scales_window_to_image_coordinates() -> None:
    """A 2x capture of a 640x400 window: the region (10,20,50x10) lands at (20,40,100x20)."""
    img = decode(make_png(1280, 800, (255, 255, 255)))
    info = images.redact(
        img,
        [Rect(x=10, y=20, width=50, height=10)],
        images.region_scale(img.size, (640, 400)),
    )
    assert info.applied and info.region_count == 1
    assert info.image_regions == ((20, 40, 100, 20),)
    assert img.getpixel((20, 40)) == GREY
    assert img.getpixel((119, 59)) == GREY
    assert img.getpixel((120, 60)) == (255, 255, 255)
    assert img.getpixel((19, 40)) == (255, 255, 255)


def test_fractional_scale_widens_outward() -> None:
    img = decode(make_png(300, 300, (255, 255, 255)))
    info = images.redact(img, [Rect(x=1, y=1, width=3, height=3)], 1.5)
    # 1.5..6.0 → pixels 1..5 inclusive: floor the start, ceil the end
    assert info.image_regions == ((1, 1, 5, 5),)


def test_regions_outside_are_clipped_or_skipped() -> None:
    img = decode(make_png(100, 100, (255, 255, 255)))
    info = images.redact(
        img,
        [Rect(x=90, y=90, width=50, height=50), Rect(x=500, y=500, width=5, height=5)],
    )
    assert info.region_count == 1
    assert info.image_regions == ((90, 90, 10, 10),)
    assert img.getpixel((99, 99)) == GREY


def test_rgba_is_painted_opaque() -> None:
    img = decode(make_png(50, 50, mode="RGBA"))
    images.redact(img, [Rect(x=0, y=0, width=10, height=10)])
    assert img.getpixel((5, 5)) == (128, 128, 128, 255)


def test_model_frame_keeps_regions_painted() -> None:
    png = make_png(3200, 2000, (255, 0, 0))
    jpeg, _w, _h, _ = images.model_frame(
        png, redact_regions=[Rect(x=100, y=100, width=400, height=200)], window_size=(1600, 1000)
    )
    frame = decode(jpeg)
    # window (100..500, 100..300) → image x2 → frame x0.5: back to (100..500, 100..300)
    r, g, b = frame.getpixel((300, 200))
    assert abs(r - 128) < 6 and abs(g - 128) < 6 and abs(b - 128) < 6
    r, _, _ = frame.getpixel((800, 800))
    assert r > 240


def test_prepare_without_regions_keeps_host_bytes() -> None:
    png = make_png(64, 64)
    prepared = images.prepare_capture(png, regions=[])
    assert prepared.png is png
    assert not prepared.redaction.applied


def test_sniff() -> None:
    assert images.sniff_content_type(make_png(2, 2)) == "image/png"
    assert images.sniff_content_type(b"\xff\xd8\xff\xe0rest") == "image/jpeg"
    assert images.sniff_content_type(b"RIFF\0\0\0\0WEBPVP8 ") == "image/webp"
    assert images.sniff_content_type(b"GIF89a....") == "image/gif"
    assert images.sniff_content_type(b"<svg xmlns=...") is None
    assert images.sniff_content_type(b"") is None
