"""Visual trees in the kernel: an OCR outline for a window that shows no accessibility tree,
and actions on its elements sent to the host as clicks on points of the image.

The host sits below the vision layer and reads no pixels' text; the kernel may. So an
observation the host answered with no tree (or only its window root) and a screenshot is
given an outline built by OCR of that screenshot (vision/outline.py) before it becomes the
session's current frame: ``tree_read.source`` is ``visual``, the version ``visual-…``,
``sensitiveRegions`` honestly empty (nothing says where a secret is), and the elements' boxes
travel with the state by value (``ObservedState.visual``). Not when the tree is fine: OCR of a
1280×800 frame costs hundreds of milliseconds, an AT-SPI tree's elements already have boxes.
What lies over the window is not read as its text: other windows (``covered_regions``) are
painted out, and its popups (``popup_regions``: an open menu) too, each read in its own box
and appended as a ``- popup`` section.

The host bound that frame with its own version (``t-none``) and knows no element of the
outline. :func:`for_host` rewrites a request checked against a visual frame before it goes
out: the host's version, and an action on an element as the pointer action at the centre of
the element's box (a click, a scroll, a plain or activating invoke as a click; text goes to
the focused window). What only an accessibility element can do (set a value, select a range,
a secondary action, an invoke that does not activate: focus, expand, select…) is refused
before dispatch: a picture has no such element, and a click in its place would activate what
the policy rated as not activated (``NON_ACTIVATING_ACTIONS``, kernel/policy/signals.py). So
what passes is rated as what is sent: an invoke that passes is an activation, as the left
click sent for it is. The policy rates every element or point of a visual tree as an unknown
target (``visual_tree``, kernel/policy/action_rules.py): OCR'd text is no control.

Each window's last frame is kept (vision/incremental.py): the same pixels again cost no OCR,
a few changed rows (a command typed at a terminal's prompt) only those rows'. A terminal is
read as a grid of character cells, each distinct glyph by OCR once (vision/grid.py,
vision/glyphs.py); where no grid fits, as one uniform block of text (vision/outline.py
``engine_for``).

No OCR engine (tesserocr or its language data missing) or an OCR failure: the observation
stays as the host sent it, today's tree-less state.
"""

from __future__ import annotations

import asyncio
import logging
import time

from deskpilot.kernel import opaque_text
from deskpilot.kernel.image_boxes import image_boxes, within
from deskpilot.kernel.policy.signals import NON_ACTIVATING_ACTIONS, role_key_like
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.observed import ObservedState, VisualTree
from deskpilot.protocol.wire import (
    Action,
    ClickAction,
    ExecuteAction,
    InvokeElementAction,
    PasteTextAction,
    Point,
    ScrollAction,
    Truncation,
    TypeTextAction,
)
from deskpilot.vision.frames import decode_image
from deskpilot.vision.incremental import Box, Reading, window_reader
from deskpilot.vision.ocr import OcrEngine, default_engine, ocr_ready
from deskpilot.vision.outline import PopupReading, build_outline, engine_for

log = logging.getLogger(__name__)

#: ``invoke_element`` names a click on a visual element stands in for (none: the default);
#: all activate, as the click does (never one of ``NON_ACTIVATING_ACTIONS``: a click in place
#: of "focus" would press what the policy rated as only focused)
_CLICK_LIKE = frozenset({"click", "press", "activate", "jump", "open", "toggle"})


def wanted(state: ObservedState) -> bool:
    """Should this observation get a visual tree? Only a complete, current read of a window
    that exposes no tree (or only its root), with a screenshot to read."""
    obs = state.observation
    r = obs.tree_read
    return (
        state.png is not None
        and state.visual is None
        and r.source != "visual"
        and obs.element_count <= 1
        and not obs.truncation.tree_unavailable
        and r.partial is None
        and r.stale_age_ms is None
    )


async def outlined(state: ObservedState, engine: OcrEngine | None = None) -> ObservedState:
    """``state`` with a visual tree when it has none and OCR can read its screenshot; else
    ``state`` as it is. Never raises: after an action this is its post-action state, and a
    failed OCR must not turn an action that ran into one that failed."""
    if not wanted(state):
        if opaque_text.wanted(state):
            return await opaque_text.with_text(state, engine)
        return state
    chosen = engine if engine is not None else engine_for(state.observation.app)
    if not ocr_ready(chosen):
        return state
    png = state.png
    assert png is not None
    obs = state.observation
    key = f"{obs.app.pid}:{obs.window.window_id}"
    started = time.perf_counter()
    covered = image_boxes(obs, obs.covered_regions)
    popups = image_boxes(obs, obs.popup_regions)
    try:
        reading, popup_readings = await asyncio.to_thread(_read, chosen, key, png, covered, popups)
    except Exception as exc:  # typed, or an engine bug: neither may fail the observation
        typed = exc.code if isinstance(exc, DeskpilotError) else None
        log.log(
            logging.WARNING if typed else logging.ERROR,
            "visual tree: OCR failed (%s); the observation keeps no tree",
            typed or type(exc).__name__,
            exc_info=typed is None,  # a bug's traceback; a typed failure says enough
        )
        return state
    result = reading.result
    outline = build_outline(result, obs.window.title, popups=popup_readings)
    timings = {
        **obs.timings_ms,
        "ocr": round(result.elapsed_ms, 2),
        # the frame rows OCR read: the height (a full read), fewer (only the rows that
        # changed since the window's last frame), 0 (the same pixels: the last reading)
        "ocr_rows": float(reading.rows),
        "visual": round((time.perf_counter() - started) * 1000.0, 2),
    }
    visual_obs = obs.model_copy(
        update={
            "tree": outline.text,
            "tree_version": outline.tree_version,
            "element_count": outline.element_count,
            "truncation": Truncation(
                omitted_elements=outline.omitted, element_cap_hit=outline.omitted > 0
            ),
            "tree_read": obs.tree_read.model_copy(update={"source": "visual"}),
            "sensitive_regions": [],
            "timings_ms": timings,
        }
    )
    visual = VisualTree(
        host_tree_version=obs.tree_version,
        bounds=outline.bounds,
        image_size=(result.width, result.height),
    )
    return ObservedState(visual_obs, state.png, state.windows, visual)


def _read(
    engine: OcrEngine, key: str, png: bytes, covered: list[Box], popups: list[Box]
) -> tuple[Reading, list[PopupReading]]:
    """The window's reading with what lies over it painted out, and each popup's reading of
    its own box (the popups above it painted out: a submenu over its menu). Blocking."""
    reader = window_reader()
    image = decode_image(png)
    reading = reader.read_image(engine, key, image, [*covered, *popups])
    readings: list[PopupReading] = []
    popup_engine = default_engine()  # a terminal's menu is no grid of cells
    for i, box in enumerate(popups):
        x, y, w, h = box
        above = [within(b, box) for b in (*covered, *popups[:i])]
        part = image.crop((x, y, x + w, y + h))
        read = reader.read_image(
            popup_engine, f"{key}:popup:{x},{y},{w},{h}", part, [b for b in above if b]
        )
        readings.append(PopupReading(read.result, box))
    return reading, readings


def for_host(state: ObservedState | None, request: ExecuteAction) -> ExecuteAction:
    """The request as the host must get it: unchanged unless it was checked against ``state``
    and ``state`` is visual; then with the host's version and element actions as points."""
    visual = state.visual if state is not None else None
    if state is None or visual is None:
        return request
    obs = state.observation
    if request.frame_id != obs.frame_id or request.tree_version != obs.tree_version:
        return request
    action = _pointed(request.action, visual)
    return request.model_copy(update={"tree_version": visual.host_tree_version, "action": action})


def _pointed(action: Action, visual: VisualTree) -> Action:
    element_id = getattr(action, "element_id", None)
    if visual.mixed and element_id not in visual.bounds:
        return action  # the host's own element (or none): it checks and acts on it
    match action:
        case ClickAction(element_id=int(element_id)) | ScrollAction(element_id=int(element_id)):
            # the same click or scroll (button, count, direction, amount…) at the point
            point = centre(visual, element_id)
            return action.model_copy(update={"element_id": None, "point": point})
        case InvokeElementAction() if _clicks(action.action):
            return ClickAction(
                point=centre(visual, action.element_id), duration_ms=action.duration_ms
            )
        case TypeTextAction(element_id=int()) | PasteTextAction(element_id=int()):
            # the runtime focused the element first (a click on it): keys go to that window
            return action.model_copy(update={"element_id": None})
        case ClickAction() | ScrollAction() | TypeTextAction() | PasteTextAction():
            return action
        case _ if getattr(action, "element_id", None) is not None:
            raise DeskpilotError(
                ErrorCode.UNSUPPORTED_ACTION,
                f"{action.kind} needs an accessibility element; this window shows none (its "
                "tree is an OCR outline of the screenshot): click its elements, type, press "
                "keys or act on points of the image",
                details={"kind": action.kind, "treeSource": "visual"},
            )
        case _:
            return action


def _clicks(name: str | None) -> bool:
    """Does a left click stand in for this invoke? The default action or an activating one;
    a non-activating one never, however it is spelled ("Focus", "grab focus")."""
    if name is None:
        return True
    key = role_key_like(name)
    return key not in NON_ACTIVATING_ACTIONS and key in _CLICK_LIKE


def centre(visual: VisualTree, element_id: int) -> Point:
    """The centre of the element's box as a window point (the host maps ``x`` to pixel
    ``round(x × (width − 1))``, host/action_checks.py ``to_screen``)."""
    box = visual.bounds.get(element_id)
    if box is None:
        raise DeskpilotError(
            ErrorCode.STALE_TREE,
            "element id does not resolve in the current (visual) tree; observe again",
            details={"elementId": element_id},
        )
    x, y, width, height = box
    image_w, image_h = visual.image_size
    cx, cy = x + width // 2, y + height // 2
    return Point(x=_fraction(cx, image_w), y=_fraction(cy, image_h))


def _fraction(pixel: int, size: int) -> float:
    if size <= 1:
        return 0.0
    return min(max(pixel / (size - 1), 0.0), 1.0)
