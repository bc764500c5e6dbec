"""Items drawn on a highlight: where a list or an icon view paints its selection, and the
text in it made dark on light.

An icon view draws a selected item's icon and name on a solid highlight (Thunar's: white text
on blue, with rounded corners). Read with the rest of the widget, its name is white on a mid
gray in luminance, which tesseract does not see; the frame-wide polarity pass
(vision/polarity.py) reads it, but the highlight's rounded corners come out as ink beside
it ("_alpha.txt,"). So the highlights are found first and their insides read on their own:

* the widget's background is its most common colour; the *highlight* colour is the most
  common colour of the solid areas of another colour (pixels farther than ``INK_DELTA`` from
  the background, eroded by a ``SOLID`` square: glyph strokes vanish);
* its areas are the pixels within ``NEAR`` of that colour, the holes glyphs leave closed
  (``HOLE``) and then opened by the same square, boxed
  per band of rows and run of columns; a box smaller than ``MIN_SIDE`` on a side is an icon's
  detail, not a highlight;
* each box, ``INSET`` px in from its edges (its rounded corners left out), is made dark on
  light as ``255 - distance to the highlight colour`` and read alone.

A widget with nothing selected has no such colour, or only icons of one (their boxes hold no
text: nothing is read from them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from PIL import Image, ImageChops, ImageFilter

from deskpilot.vision.bands import INK_DELTA
from deskpilot.vision.grid import ink_runs

#: the square (px) a highlight fills and a glyph stroke does not
SOLID: Final = 7
#: the holes glyphs leave in a highlight are closed up to this square (px): less than the
#: gap between two highlighted items
HOLE: Final = 5
#: a pixel this close to the highlight colour (largest channel difference) is of it
NEAR: Final = 16
#: a highlight is at least this big on each side (px)
MIN_SIDE: Final = 16
#: px left out along a highlight's edges (its rounded corners)
INSET: Final = 3

Colour = tuple[int, int, int]
Box = tuple[int, int, int, int]  # x, y, width, height


@dataclass(frozen=True, slots=True)
class Highlight:
    """One highlighted area: its box in the image, and its inside made dark on light (the
    image to read; its boxes are relative to ``box`` moved ``INSET`` px in)."""

    box: Box
    inside: Image.Image


def background(img: Image.Image) -> Colour:
    """The most common colour of ``img`` (of a quarter-size copy)."""
    rgb = img.convert("RGB")
    small = rgb.reduce(4) if rgb.width >= 8 and rgb.height >= 8 else rgb
    return _mode(small, None) or (255, 255, 255)


def highlights(img: Image.Image) -> list[Highlight]:
    """The highlighted areas of ``img`` (see the module docstring), top to bottom, left to
    right."""
    rgb = img.convert("RGB")
    bg = background(rgb)
    other = _distance(rgb, bg).point(lambda v: 255 if v > INK_DELTA else 0)
    core = other.filter(ImageFilter.MinFilter(SOLID))
    if core.getbbox() is None:
        return []
    sentinel = Image.new("RGB", rgb.size, bg)
    colour = _mode(Image.composite(rgb, sentinel, core), bg)
    if colour is None:
        return []
    near = _distance(rgb, colour).point(lambda v: 255 if v <= NEAR else 0)
    # the text's holes closed first (a row of glyphs would break the area in two), then
    # what is thinner than the square opened away
    closed = near.filter(ImageFilter.MaxFilter(HOLE)).filter(ImageFilter.MinFilter(HOLE))
    solid = closed.filter(ImageFilter.MinFilter(SOLID)).filter(ImageFilter.MaxFilter(SOLID))
    out: list[Highlight] = []
    for x, y, w, h in _boxes(solid):
        tight = solid.crop((x, y, x + w, y + h)).getbbox()
        if tight is None:
            continue
        x, y, w, h = x + tight[0], y + tight[1], tight[2] - tight[0], tight[3] - tight[1]
        if w < MIN_SIDE or h < MIN_SIDE:
            continue
        part = rgb.crop((x + INSET, y + INSET, x + w - INSET, y + h - INSET))
        inside = _invert(_distance(part, colour))
        out.append(Highlight((x, y, w, h), inside.convert("RGB")))
    return out


def _boxes(mask: Image.Image) -> list[Box]:
    """The set areas of ``mask`` as boxes: per band of rows holding some, each run of
    columns set in the band."""
    out: list[Box] = []
    for top, bottom in ink_runs(mask):
        band = mask.crop((0, top, mask.width, bottom))
        columns = band.resize((band.width, 1), Image.Resampling.BOX).tobytes()
        x = 0
        while x < len(columns):
            if columns[x]:
                start = x
                while x < len(columns) and columns[x]:
                    x += 1
                out.append((start, top, x - start, bottom - top))
            x += 1
    return out


def _distance(img: Image.Image, colour: Colour) -> Image.Image:
    """Each pixel's largest channel difference to ``colour``."""
    diff = ImageChops.difference(img, Image.new("RGB", img.size, colour))
    red, green, blue = diff.split()
    return ImageChops.lighter(ImageChops.lighter(red, green), blue)


def _invert(gray: Image.Image) -> Image.Image:
    return gray.point(lambda v: 255 - v)


def _mode(img: Image.Image, leave_out: Colour | None) -> Colour | None:
    """The most common colour of ``img`` other than ``leave_out``."""
    best: tuple[int, Colour] | None = None
    for count, value in img.getcolors(img.width * img.height) or []:
        if not isinstance(value, tuple):
            continue
        rgb: Colour = (int(value[0]), int(value[1]), int(value[2]))
        if rgb != leave_out and (best is None or count > best[0]):
            best = (count, rgb)
    return best[1] if best is not None else None
