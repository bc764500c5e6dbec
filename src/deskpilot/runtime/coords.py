"""Screen coordinates from the model: pixels of the last image it saw → window fractions.

The image the model saw may have been downscaled (model frames are at most 1,600 px on the long
edge), so the conversion uses *that image's* size, not the capture's. The result is clamped
into [0, 1]: a point a pixel outside the image still means the edge, never another window.
"""

from __future__ import annotations

from deskpilot.protocol.errors import ErrorCode
from deskpilot.protocol.wire import Point
from deskpilot.runtime.refusals import refusal


def clamp01(v: float) -> float:
    return 0.0 if v < 0.0 else 1.0 if v > 1.0 else v


def to_window_point(x: float, y: float, image_size: tuple[int, int] | None) -> Point:
    if image_size is None or image_size[0] <= 0 or image_size[1] <= 0:
        raise refusal(
            ErrorCode.INVALID_REQUEST,
            "Coordinates need an image: this state came without a screenshot. Use element_id, "
            "or call get_app_state (which returns an image) and use its pixels.",
        )
    width, height = image_size
    return Point(x=clamp01(x / width), y=clamp01(y / height))
