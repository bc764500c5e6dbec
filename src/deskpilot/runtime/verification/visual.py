"""``visual`` specs: is a text on screen? Decided from the tree's text and the window title.

The tree's text is every rendered element's name and value, each searched on its own (a text
never spans two elements), plus the window title; case and whitespace are folded. A window
without a tree (a canvas app, a tree the host could not read) has only its title: the OCR
fallback that reads the screenshot's text is a later issue, so until then such a check is
undecidable unless the title alone settles it.
"""

from __future__ import annotations

from deskpilot.protocol.verification import VisualSpec
from deskpilot.protocol.wire import ObservationBody

from .evidence import Outcome, clip, passed, undecidable
from .text import TreeView, contains, element_line, element_texts, tree_view

NO_OCR = "the window has no accessibility tree and OCR of the screenshot is not available yet"


def find_text(obs: ObservationBody, view: TreeView, text: str) -> str | None:
    """Where the text was seen (an element line, or "window title"), None when not seen."""
    if contains(obs.window.title, text):
        return "window title"
    for e in view.elements:
        if any(contains(t, text) for t in element_texts(e)):
            return element_line(e)
    return None


def check_visual(spec: VisualSpec, obs: ObservationBody | None) -> Outcome:
    if obs is None:
        return undecidable("no observation of the target window")
    view = tree_view(obs)
    seen = find_text(obs, view, spec.text)
    evidence: dict[str, object] = {
        "windowTitle": clip(obs.window.title),
        "elementCount": len(view.elements),
        **view.completeness(),
    }
    if seen is not None:
        evidence["seenIn"] = seen
    present = spec.assertion == "text_present"
    if seen is not None:
        return passed(present, **evidence)
    if view.empty:
        return undecidable(NO_OCR, ocr="not available", **evidence)
    if not view.complete:
        return undecidable("not in the tree as shown, and the tree is not complete", **evidence)
    return passed(not present, **evidence)
