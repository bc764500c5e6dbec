"""Images in: size limits, not-an-image, and the endpoint's JPEG model frame."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image
from vision_images import png

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.vision import MAX_IMAGE_BYTES, load_image_file
from deskpilot.vision.frames import decode_image, model_frame


def test_loads_an_image_file(tmp_path: Path) -> None:
    data = png(Image.new("RGB", (64, 32), (1, 2, 3)))
    path = tmp_path / "shot.png"
    path.write_bytes(data)
    assert load_image_file(path) == data
    assert load_image_file(str(path)) == data


def test_a_file_over_the_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "huge.png"
    with path.open("wb") as f:
        f.truncate(MAX_IMAGE_BYTES + 1)  # sparse: refused by its size, never read
    with pytest.raises(DeskpilotError) as caught:
        load_image_file(path)
    assert caught.value.code is ErrorCode.SNAPSHOT_TOO_LARGE
    assert caught.value.details["maxBytes"] == MAX_IMAGE_BYTES


@pytest.mark.parametrize("kind", ["text", "missing", "directory", "truncated"])
def test_what_is_not_an_image_is_refused(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "x.png"
    if kind == "text":
        path.write_text("hello, not a picture")
    elif kind == "directory":
        path.mkdir()
    elif kind == "truncated":
        path.write_bytes(png(Image.new("RGB", (300, 300), (9, 99, 199)))[:120])
    with pytest.raises(DeskpilotError) as caught:
        load_image_file(path)
    assert caught.value.code is ErrorCode.INVALID_REQUEST


def test_bytes_over_the_limit_and_empty_bytes_are_refused() -> None:
    with pytest.raises(DeskpilotError) as big:
        decode_image(b"\x89PNG" + bytes(MAX_IMAGE_BYTES))
    assert big.value.code is ErrorCode.SNAPSHOT_TOO_LARGE
    with pytest.raises(DeskpilotError) as empty:
        decode_image(b"")
    assert empty.value.code is ErrorCode.INVALID_REQUEST


def test_too_many_pixels_is_refused_before_decoding() -> None:
    buf = io.BytesIO()
    Image.new("1", (8000, 7000), 1).save(buf, format="PNG")  # 56 Mpx, a few kB
    with pytest.raises(DeskpilotError) as caught:
        decode_image(buf.getvalue())
    assert caught.value.code is ErrorCode.SNAPSHOT_TOO_LARGE
    assert caught.value.details["width"] == 8000


def test_an_unaccepted_format_is_refused() -> None:
    buf = io.BytesIO()
    Image.new("RGB", (10, 10)).save(buf, format="TIFF")
    with pytest.raises(DeskpilotError) as caught:
        decode_image(buf.getvalue())
    assert caught.value.code is ErrorCode.INVALID_REQUEST
    assert "TIFF" in caught.value.message


def test_model_frame_keeps_aspect_with_long_edge_1600() -> None:
    frame = model_frame(decode_image(png(Image.new("RGB", (1000, 3000), (200, 10, 10)))))
    sent = Image.open(io.BytesIO(frame.jpeg))
    assert sent.format == "JPEG" and sent.size == (533, 1600) == (frame.width, frame.height)
    assert (frame.source_width, frame.source_height) == (1000, 3000)
    assert frame.scale == pytest.approx(0.533, abs=1e-3)


def test_transparency_is_flattened_onto_white() -> None:
    img = decode_image(png(Image.new("RGBA", (20, 20), (0, 0, 0, 0))))
    assert img.mode == "RGB" and img.getpixel((5, 5)) == (255, 255, 255)
