"""``visual`` specs: is a text on screen? Decided from the tree's text and the window title.

The tree's text is every rendered element's name and value, each searched on its own (a text
never spans two elements), plus the window title; case and whitespace are folded.

A window without an accessibility tree (an xterm, a canvas app) is read by OCR: its
observation usually already carries the visual tree the kernel built from the screenshot
(``tree_read.source == "visual"``, kernel/visual_tree.py); a tree-less state that does not
(taken before the engine was there, or after an OCR failure) is read here from its
screenshot, the same way. OCR text is matched with all whitespace ignored (tesseract splits
``DESKPILOT-VISUAL-4711`` as ``DESKPILOT-VISUAL- 4711``), and the evidence says it was OCR:
an absence is only what OCR did not read. No screenshot, or no OCR engine: such a check is
undecidable unless the title alone settles it.
"""

from __future__ import annotations

import logging

from deskpilot.protocol.errors import DeskpilotError
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.verification import VisualSpec
from deskpilot.protocol.wire import ObservationBody, Truncation
from deskpilot.vision import ocr_image, ocr_ready
from deskpilot.vision.outline import build_outline, engine_for

from .evidence import Outcome, clip, passed, undecidable
from .text import TreeView, contains, element_line, element_texts, fold, tree_view

log = logging.getLogger(__name__)

NO_OCR = "the window has no accessibility tree and OCR could not read its screenshot"


def find_text(obs: ObservationBody, view: TreeView, text: str) -> str | None:
    """Where the text was seen (an element line, or "window title"), None when not seen."""
    if contains(obs.window.title, text):
        return "window title"
    ocr = obs.tree_read.source == "visual"
    for e in view.elements:
        if any((contains_ocr if ocr else contains)(t, text) for t in element_texts(e)):
            return element_line(e)
    return None


def contains_ocr(haystack: str, needle: str) -> bool:
    """OCR's spacing is not the screen's: compared with all whitespace removed."""
    return "".join(fold(needle).split()) in "".join(fold(haystack).split())


def tree_less(obs: ObservationBody) -> bool:
    """No tree to search: no element, or only the window's root, and not a visual tree."""
    return obs.tree_read.source != "visual" and obs.element_count <= 1


async def visual_reading(state: ObservedState) -> tuple[ObservationBody, str | None]:
    """The observation to search: a tree-less one with its screenshot's OCR outline as its
    tree (and None), or the observation as it is and why OCR could not read it."""
    obs = state.observation
    if not tree_less(obs):
        return obs, None
    if state.png is None:
        return obs, "the state has no screenshot"
    engine = engine_for(obs.app)
    if not ocr_ready(engine):
        return obs, "no OCR engine here (tesserocr and tesseract-ocr-eng)"
    try:
        result = await ocr_image(state.png, engine=engine)
    except DeskpilotError as exc:
        log.warning("visual check: OCR failed (%s)", exc.code)
        return obs, f"OCR failed ({exc.code.value})"
    outline = build_outline(result, obs.window.title)
    read = obs.tree_read.model_copy(update={"source": "visual"})
    truncation = Truncation(omitted_elements=outline.omitted, element_cap_hit=outline.omitted > 0)
    update = {
        "tree": outline.text,
        "element_count": outline.element_count,
        "tree_read": read,
        "truncation": truncation,
    }
    return obs.model_copy(update=update), None


async def check_visual(spec: VisualSpec, state: ObservedState | None) -> Outcome:
    if state is None:
        return undecidable("no observation of the target window")
    obs, no_ocr = await visual_reading(state)
    view = tree_view(obs)
    seen = find_text(obs, view, spec.text)
    ocr = obs.tree_read.source == "visual"
    evidence: dict[str, object] = {
        "windowTitle": clip(obs.window.title),
        "elementCount": len(view.elements),
        **view.completeness(),
    }
    if ocr:
        evidence["source"] = "ocr"
    if seen is not None:
        evidence["seenIn"] = seen
    present = spec.assertion == "text_present"
    if seen is not None:
        return passed(present, **evidence)
    if tree_less(obs):
        return undecidable(f"{NO_OCR}: {no_ocr}", ocr="not available", **evidence)
    if not view.complete:
        return undecidable("not in the tree as shown, and the tree is not complete", **evidence)
    return passed(not present, **evidence)
