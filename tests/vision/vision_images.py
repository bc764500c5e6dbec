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


WORDS = [
    *("the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "settings", "network"),
    *("display", "keyboard", "mouse", "printer", "account", "invoice", "total", "window"),
]


def dense_page(lines: int = 30, pitch: int = 26) -> tuple[Image.Image, list[Box]]:
    """benchmarks/ocr_bench.py's dense frame: 1280x800, ``lines`` lines of 12 words of
    16 px text every ``pitch`` px; with the ink box of each line."""
    img = Image.new("RGB", (1280, 800), "white")
    d = ImageDraw.Draw(img)
    boxes = []
    for i in range(lines):
        words = [WORDS[(i * 3 + j) % len(WORDS)] for j in range(12)]
        boxes.append(draw_text(d, (20, 10 + i * pitch), " ".join(words), size=16, fill=(0, 0, 0)))
    return img, boxes


def desktop_frame() -> tuple[Image.Image, list[Box]]:
    """benchmarks/ocr_bench.py's desktop frame: wallpaper, a window with a title bar, four
    buttons, a 12-line text area and a dark panel; with the ink box of each text."""
    img = Image.new("RGB", (1280, 800), (58, 110, 165))
    d = ImageDraw.Draw(img)
    d.rectangle((160, 100, 1120, 700), fill=(246, 245, 244), outline=(160, 160, 160))
    d.rectangle((160, 100, 1120, 136), fill=(222, 221, 218))
    boxes = [draw_text(d, (560, 108), "Document Settings", size=15, fill=(0, 0, 0), bold=True)]
    for i, label in enumerate(["Save", "Cancel", "Apply", "Help"]):
        x = 200 + i * 120
        d.rounded_rectangle((x, 150, x + 100, 182), 6, fill="white", outline=(150, 150, 150))
        boxes.append(draw_text(d, (x + 22, 158), label, size=14, fill=(0, 0, 0)))
    d.rectangle((200, 200, 1080, 620), fill="white", outline=(180, 180, 180))
    for i in range(12):
        line = f"Line {i + 1}: the invoice total for account {1000 + i} is due on Monday"
        boxes.append(draw_text(d, (212, 210 + i * 32), line, size=14, fill=(30, 30, 30)))
    d.rectangle((0, 770, 1280, 800), fill=(40, 40, 40))
    panel = "Activities   Files   Terminal   10:42"
    boxes.append(draw_text(d, (10, 776), panel, size=14, fill=(255, 255, 255)))
    return img, boxes


#: DejaVu Sans Mono at 19 px in cells of 12 x 23: tesseract reads its ``ls -l`` lines
#: confidently (at 17-18 px it doubts ``-rw-r--r--`` and learns no glyph from it)
TERMINAL_CELL = (12, 23)
TERMINAL_FONT_SIZE = 19


def terminal_frame(
    rows: list[str],
    *,
    size: tuple[int, int] = (1280, 786),
    origin: tuple[int, int] = (2, 2),
    colours: dict[int, tuple[int, int, int]] | None = None,
) -> Image.Image:
    """``rows`` drawn as a terminal draws them: each character at its own cell (whole
    pixels apart, as xterm does; Pillow's text layout would place them at fractional
    advances), black on white, or row ``i`` in ``colours[i]``."""
    img = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(img)
    mono = ImageFont.truetype(str(Path(_FONT_DIRS[0]) / "DejaVuSansMono.ttf"), TERMINAL_FONT_SIZE)
    width, height = TERMINAL_CELL
    for r, text in enumerate(rows):
        fill = (colours or {}).get(r, (0, 0, 0))
        for c, char in enumerate(text):
            if char != " ":
                at = (origin[0] + c * width, origin[1] + r * height)
                draw.text(at, char, font=mono, fill=fill)
    return img
