"""Parts of a window as boxes of its screenshot, for OCR (kernel/visual_tree.py,
kernel/opaque_text.py)."""

from __future__ import annotations

from collections.abc import Sequence

from deskpilot.protocol.wire import Observation, Rect
from deskpilot.vault import images
from deskpilot.vision.incremental import Box


def image_boxes(obs: Observation, regions: Sequence[Rect]) -> list[Box]:
    """``regions`` (window coordinates: the windows lying over this one, its popups, a
    widget's place) as boxes of the screenshot, scaled as redaction scales sensitive regions
    (vault/images.py) and rounded outwards: a covering window's edge pixel is not left in."""
    image, bounds = obs.image, obs.window.bounds
    if not regions or image is None:
        return []
    size = (image.width, image.height)
    scale = images.region_scale(size, (bounds.width, bounds.height))
    return [b for r in regions if (b := images.image_box(r, scale, size))]


def within(box: Box, frame: Box) -> Box | None:
    """``box`` in the coordinates of ``frame`` (both image boxes), clipped; None outside."""
    x0, y0 = max(box[0], frame[0]), max(box[1], frame[1])
    x1 = min(box[0] + box[2], frame[0] + frame[2])
    y1 = min(box[1] + box[3], frame[1] + frame[3])
    if x1 <= x0 or y1 <= y0:
        return None
    return x0 - frame[0], y0 - frame[1], x1 - x0, y1 - y0
