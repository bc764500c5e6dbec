"""A terminal's text on its own background: cells on a dark or coloured background made dark
on light before the grid is found and before OCR.

A terminal paints a background per cell: reverse video (``\\033[7m``, a selection), a
coloured background (``\\033[44m``), a status bar. The frame-wide preparation
(:func:`~deskpilot.vision.ocr.colour_gray`, then
:func:`~deskpilot.vision.ocr.dark_text_on_light`) decides polarity from a 25 px
neighbourhood, wider than a row of cells: one inverted line stays light on dark, which
tesseract (``tessedit_do_invert=0``) does not read, and black text on blue is black on black
by the darkest channel. Such a row's solid background also joins the rows above and below
into one run of ink, so no grid of cells is found and the rows are read as a block.

So, in colour, before the grid is looked for:

- the pixels that differ from the frame's background (its most common colour) by more than
  ``INK_DELTA`` in a channel, eroded by a 5x5 square, are the *cores* of solid backgrounds
  (glyph strokes, 1-3 px, vanish); none (most frames): nothing more is done (~15 ms);
- the cores dilated back and closed (dilated then eroded by ``REACH``: the holes glyphs
  left are filled, a filled cell's rectangle comes back whole) are the background areas;
- each run of such pixels in a pixel row, grouped with the rows above and below whose runs
  are the same (one rectangle of cells), is one area: its background is the most common
  colour of its cores, and each of its pixels becomes ``255 - distance`` to it (the largest
  of the three channels' differences). White on black, black on blue, yellow on red come
  out dark on light, like the rest of the frame.

Pillow per area, not per pixel: a few ms for a few coloured runs.
"""

from __future__ import annotations

from collections.abc import Callable

from PIL import Image, ImageChops, ImageFilter, ImageOps

from deskpilot.vision.bands import INK_DELTA
from deskpilot.vision.grid import ink_runs

#: The square a background must fill to be one (5x5 px): glyph strokes (1-4 px, bold ones
#: with their antialiasing too) do not. Thinner strips of background (the 4 px of an
#: inverted row above its capitals) are taken in by growing the areas into them.
SOLID = 5
#: The holes glyphs leave in a background's core are closed up to this far (px).
REACH = 6

#: How far the frame-wide pass's neighbourhood reaches (ocr.py: a 25 px box).
NEIGHBOURHOOD = 13

Colour = tuple[int, int, int]
Box = tuple[int, int, int, int]
_ANY = [255 if v > 0 else 0 for v in range(256)]
#: a distance to the frame's background that is another colour
_OTHER = [255 if v > INK_DELTA else 0 for v in range(256)]


def backgrounds_to_light(gray: Image.Image, colour: Image.Image) -> Image.Image:
    """``gray`` (the frame prepared for OCR: dark text on light) with each area of another
    solid background than the frame's made again from ``colour`` as dark text on light;
    ``gray`` itself when there is none."""
    rgb = colour if colour.mode == "RGB" else colour.convert("RGB")
    frame_bg = _mode(rgb.reduce(4)) or (255, 255, 255)
    far = _distance(rgb, Image.new("RGB", rgb.size, frame_bg))
    other = far.point(_OTHER)
    core = _square(other, SOLID, ImageChops.darker)
    if core.getbbox() is None:
        return gray
    out = gray.copy()
    # the work is done in windows around the cores only (a cursor's cell: a few ms)
    for window in _windows(core, 2 * SOLID + REACH + NEIGHBOURHOOD + 1):
        crops = (rgb.crop(window), far.crop(window), other.crop(window), core.crop(window))
        _make_light(out, *crops, window, frame_bg)
    return out


def _make_light(
    out: Image.Image,
    rgb: Image.Image,
    far: Image.Image,
    other: Image.Image,
    core: Image.Image,
    window: Box,
    frame_bg: Colour,
) -> None:
    """The areas around ``core`` in ``window`` of the frame, pasted into ``out`` dark on
    light (see the module's docstring). ``far``: each pixel's distance to the frame's
    background; ``other``: where that is over ``INK_DELTA``."""
    opened = _square(core, SOLID, ImageChops.lighter, back=True)
    closed = area = _closed(opened, REACH)
    for _ in range(2 * SOLID):  # the strips of background too thin for the square: grown into
        area = ImageChops.lighter(closed, ImageChops.multiply(_dilate(area, 1), other))
    origin = window[:2]
    # around the areas, the frame-wide pass took their darkness for a dark neighbourhood
    # and inverted text on the frame's own background: it is made again from that
    out.paste(ImageOps.invert(far), origin, _dilate(area, NEIGHBOURHOOD))
    sentinel = Image.new("RGB", rgb.size, frame_bg)  # not a core's colour: left out of modes
    for box, band in _rectangles(area):
        # its background: the commonest colour of the cores above and below it too (a
        # strip of a few rows, the tops of capitals, has too few of its own)
        wide = (box[0], band[0], box[2], band[1])
        bg = _mode(Image.composite(rgb.crop(wide), sentinel.crop(wide), core.crop(wide)), frame_bg)
        if bg is None:
            continue
        light = ImageOps.invert(_distance(rgb.crop(box), Image.new("RGB", _size(box), bg)))
        out.paste(light, (origin[0] + box[0], origin[1] + box[1]), area.crop(box))


def _windows(core: Image.Image, margin: int) -> list[Box]:
    """Boxes around the cores: per band of rows holding some (``margin`` more above and
    below, bands that then overlap merged), the cores' columns and ``margin`` either side."""
    bands: list[list[int]] = []
    for top, bottom in ink_runs(core):
        lo, hi = max(0, top - margin), min(core.height, bottom + margin)
        if bands and lo <= bands[-1][1]:
            bands[-1][1] = hi
        else:
            bands.append([lo, hi])
    boxes = []
    for lo, hi in bands:
        inner = core.crop((0, lo, core.width, hi)).getbbox()
        if inner is not None:
            left, right = max(0, inner[0] - margin), min(core.width, inner[2] + margin)
            boxes.append((left, lo, right, hi))
    return boxes


def _rectangles(area: Image.Image) -> list[tuple[Box, tuple[int, int]]]:
    """The areas of ``area`` as boxes, each with its band of rows: per pixel row, its runs;
    consecutive rows with the same runs make one box per run."""
    boxes = []
    width = area.width
    for top, bottom in ink_runs(area):
        data = area.crop((0, top, width, bottom)).tobytes()
        start, runs = top, _runs(data[:width])
        for y in range(top + 1, bottom + 1):
            now = _runs(data[(y - top) * width : (y - top + 1) * width]) if y < bottom else None
            if now != runs:
                boxes += [((a, start, b, y), (top, bottom)) for a, b in runs]
                start, runs = y, now or []
    return boxes


def _runs(line: bytes) -> list[tuple[int, int]]:
    runs = []
    x = line.find(255)
    while x >= 0:
        end = line.find(0, x)
        end = len(line) if end < 0 else end
        runs.append((x, end))
        x = line.find(255, end)
    return runs


def _mode(img: Image.Image, leave_out: Colour | None = None) -> Colour | None:
    """The most common colour of ``img`` other than ``leave_out``."""
    colours = img.getcolors(img.width * img.height) or []
    best = None
    for count, value in colours:
        assert isinstance(value, tuple)
        rgb: Colour = (value[0], value[1], value[2])
        if rgb != leave_out and (best is None or count > best[0]):
            best = (count, rgb)
    return best[1] if best is not None else None


def _size(box: Box) -> tuple[int, int]:
    return box[2] - box[0], box[3] - box[1]


def _square(
    mask: Image.Image,
    size: int,
    pick: Callable[[Image.Image, Image.Image], Image.Image],
    *,
    back: bool = False,
) -> Image.Image:
    """``mask`` eroded (``pick``: darker) or dilated (lighter) by a ``size`` x ``size``
    square anchored at its top left (``back``: at its bottom right, undoing the other)."""
    step = -1 if back else 1
    out = mask
    for _ in range(size - 1):
        right, below = ImageChops.offset(out, -step, 0), ImageChops.offset(out, 0, -step)
        out = pick(pick(out, right), pick(below, ImageChops.offset(out, -step, -step)))
    return out


def _closed(mask: Image.Image, radius: int) -> Image.Image:
    """``mask`` dilated, then eroded, by a square of ``2 x radius + 1``: holes filled, the
    outline kept; padded first, so that a frame's edge does not count as set."""
    padded = ImageOps.expand(mask, radius + 1, fill=0)
    closed = _erode(_dilate(padded, radius), radius)
    return closed.crop((radius + 1, radius + 1, radius + 1 + mask.width, radius + 1 + mask.height))


def _erode(mask: Image.Image, radius: int) -> Image.Image:
    """Set where the whole square around is set: the background's dilation, inverted (a
    box blur's average rounds a square one pixel short of full up to full)."""
    return ImageOps.invert(_dilate(ImageOps.invert(mask), radius))


def _dilate(mask: Image.Image, radius: int) -> Image.Image:
    return mask.filter(ImageFilter.BoxBlur(radius)).point(_ANY)


def _distance(a: Image.Image, b: Image.Image) -> Image.Image:
    """Per pixel, the largest of the three channels' differences of ``a`` and ``b``."""
    red, green, blue = ImageChops.difference(a, b).split()
    return ImageChops.lighter(ImageChops.lighter(red, green), blue)
