"""``dom`` specs: the browser page's URL, title and text, read through the browser's tree.

There is no devtools connection: the page is what the accessibility tree exposes. The URL is
``ObservationBody.url`` (the host reads the document's URL attribute); the title is the name
of a ``document`` element or the window title (Chromium's is "<title> - Chromium"); the text
is the names and values inside the document elements. A window with neither a URL nor a
document element is not a browser page: every ``dom`` check there is undecidable.
``url_equals`` is exact up to one trailing "/"; the contains-checks fold case.
"""

from __future__ import annotations

from deskpilot.protocol.tree import TreeElement
from deskpilot.protocol.verification import DomSpec
from deskpilot.protocol.wire import ObservationBody

from .evidence import LISTED, Outcome, clip, passed, undecidable
from .text import TreeView, contains, element_line, element_texts, tree_view


def _documents(view: TreeView) -> list[TreeElement]:
    return [e for e in view.elements if e.key == "document"]


def _page_text_hit(view: TreeView, documents: list[TreeElement], text: str) -> str | None:
    for doc in documents:
        for e in [doc, *view.descendants(doc)]:
            if any(contains(t, text) for t in element_texts(e)):
                return element_line(e)
    return None


def check_dom(spec: DomSpec, obs: ObservationBody | None) -> Outcome:
    if obs is None:
        return undecidable("no observation of the target window")
    view = tree_view(obs)
    documents = _documents(view)
    url = obs.url
    if url is None and not documents:
        return undecidable(
            "not a browser page: the observation has no URL and the tree no document element",
            elementCount=len(view.elements),
        )
    evidence: dict[str, object] = {
        "url": clip(url) if url is not None else None,
        "documents": len(documents),
        "titles": [clip(d.name, 80) for d in documents[:LISTED] if d.name],
        "windowTitle": clip(obs.window.title),
    }
    a = spec.assertion
    if a in ("url_equals", "url_contains"):
        if url is None:
            return undecidable("the browser's tree exposes no URL for this page", **evidence)
        if a == "url_equals":
            same = url == spec.expected or url.rstrip("/") == spec.expected.rstrip("/")
            return passed(same, **evidence)
        return passed(contains(url, spec.expected), **evidence)
    if a == "title_contains":
        titles = [d.name for d in documents] + [obs.window.title]
        return passed(any(contains(t, spec.expected) for t in titles), **evidence)
    if not documents:
        return undecidable(
            "the tree has no document element to read the page text from", **evidence
        )
    hit = _page_text_hit(view, documents, spec.expected)
    if hit is not None:
        return passed(True, seenIn=hit, **evidence)
    if not view.complete:
        return undecidable(
            "not in the page as shown; the tree is not complete",
            **evidence,
            **view.completeness(),
        )
    return passed(False, **evidence)
