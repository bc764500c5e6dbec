"""Known text drawn with Pillow and a DejaVu font (Debian's fonts-dejavu-core), with the
boxes Pillow says it drew, so OCR boxes can be checked against where the text really is."""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

_FONT_DIRS = ("/usr/share/fonts/truetype/dejavu",)


def font(size: int, *, bold: bool = False) -> ImageFont.FreeTypeFont:
    name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
    for d in _FONT_DIRS:
        path = Path(d) / name
        if path.is_file():
            return ImageFont.truetype(str(path), size)
    raise RuntimeError("DejaVu fonts missing: install the Debian package fonts-dejavu-core")


Box = tuple[int, int, int, int]  # x, y, width, height


def draw_text(
    draw: ImageDraw.ImageDraw,
    xy: tuple[int, int],
    text: str,
    *,
    size: int = 20,
    fill: tuple[int, int, int] = (20, 20, 20),
    bold: bool = False,
) -> Box:
    """Draw ``text`` and return its ink box (x, y, width, height)."""
    f = font(size, bold=bold)
    draw.text(xy, text, font=f, fill=fill)
    left, top, right, bottom = draw.textbbox(xy, text, font=f)
    return left, top, right - left, bottom - top


def png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def jpeg(img: Image.Image, quality: int = 90) -> bytes:
    buf = io.BytesIO()
    img.convert("RGB").save(buf, format="JPEG", quality=quality)
    return buf.getvalue()
