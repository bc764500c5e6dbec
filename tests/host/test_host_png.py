"""The host's own PNG writer: whatever it writes, a standard decoder reads back exactly."""

from __future__ import annotations

import io
import os

from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from deskpilot.host.x11.capture import encode_png


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 300), st.integers(1, 120), st.sampled_from(["noise", "flat", "stripes"]))
def test_png_round_trips_through_pillow(width: int, height: int, kind: str) -> None:
    if kind == "noise":
        image = Image.frombytes("RGB", (width, height), os.urandom(width * height * 3))
    elif kind == "flat":
        image = Image.new("RGB", (width, height), (12, 200, 34))
    else:
        image = Image.new("RGB", (width, height))
        image.putdata(
            [((x * 7) % 256, (y * 13) % 256, 99) for y in range(height) for x in range(width)]
        )
    data = encode_png(image)
    decoded = Image.open(io.BytesIO(data))
    assert decoded.format == "PNG"
    assert decoded.mode == "RGB"
    assert decoded.size == (width, height)
    assert decoded.tobytes() == image.tobytes()


def test_other_modes_fall_back_to_pillow() -> None:
    image = Image.new("RGBA", (5, 4), (1, 2, 3, 128))
    decoded = Image.open(io.BytesIO(encode_png(image)))
    assert decoded.mode == "RGBA"
    assert decoded.getpixel((4, 3)) == (1, 2, 3, 128)


def test_flat_frames_compress_small() -> None:
    image = Image.new("RGB", (1280, 800), (246, 245, 244))
    assert len(encode_png(image)) < 20_000  # a 3 MB frame of one colour
