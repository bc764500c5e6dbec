"""An observation as it travels up from the host client: the window's state plus its pixels.

It is a value, handed back by the call that produced it (an ``observe``, or an action that
carried its post-action observation); no layer keeps a side cache of it for another to read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from deskpilot.protocol.wire import Observation, WindowInfo


@dataclass(frozen=True, slots=True)
class VisualTree:
    """What an observation whose tree was built by OCR (``tree_read.source == "visual"``)
    needs to be acted on: each element's box, and the host's own version of the tree.

    The host knows nothing of the outline (it read no tree): an action on it goes to the host
    as a click on a point of the image, quoting the version the host bound
    (kernel/visual_tree.py)."""

    #: the tree version the host bound for this frame (``t-none``): what the host checks
    host_tree_version: str
    #: element id → (x, y, width, height) in pixels of the screenshot
    bounds: Mapping[int, tuple[int, int, int, int]]
    #: the screenshot's size, in pixels
    image_size: tuple[int, int]
    #: an accessibility tree with some elements read from the screenshot (the text of a
    #: widget that exposes none: kernel/opaque_text.py): only the ids in ``bounds`` are
    #: OCR'd, the others are the host's and go to it as they are
    mixed: bool = False


@dataclass(frozen=True, slots=True)
class ObservedState:
    """An observation with its screenshot (PNG bytes, or None when not requested)."""

    observation: Observation
    png: bytes | None
    #: the desktop's top-level windows when this state was taken, when the host carried them
    #: (an action's post-action state does): an action that opened a dialog or a new window
    #: is told so without a second listing
    windows: tuple[WindowInfo, ...] | None = None
    #: set when the tree is a visual (OCR) outline: the elements' boxes, for actions on them
    visual: VisualTree | None = None
