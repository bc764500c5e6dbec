"""The text a widget draws but does not expose, read from the screenshot and listed under its
element in an accessibility tree.

Thunar's icon view shows a folder's files, and its accessible has no children: the host finds
such widgets and says where they are (``opaque_regions``: the element each is shown under
and its box, host/atspi/opaque.py), since it reads no pixels' text. Here, before the
observation becomes the session's frame (as a window with no tree at all gets its OCR
outline, kernel/visual_tree.py), each such box of the screenshot is read by OCR — with the
popups and the windows lying over it painted out — and what it shows is listed under the
element, one line per item of text::

      - group "Icon view" [62]
        - text "alpha.txt" [ocr] [114]
        - text "beta.txt" [ocr] [115]

Where another window or a popup lies over part of the widget, that part is listed as
``- text [covered] [ocr] [id]`` (its box): its text is not read there, and a widget under
another window is not taken for an empty one.

* **Items**: the OCR pieces of the box, each split where its words lie more than a line height
  apart (the labels of an icon view's row are separate items; the words of one label are
  not), in reading order, at most ``MAX_ITEMS`` per box.
* **Ids**: from ``SCREEN_TEXT_IDS`` (protocol/tree.py) on: a block the host's id book never
  gives, so an item's id never names a host element, in this state or a later one (with ids
  after the host's highest, a host element that appeared later took an id an item had had).
  Per window, an item keeps the id its text had in the window's last listing, and a new text
  gets an id never given before: trial-6 saw ``shopping-list.txt`` at 1000006 and, one
  state later, ``f`` at 1000006 (ids were places in reading order), and an id carried over
  clicked another file. An action quoting one from an older state still finds it again by
  its text (runtime/tree.py). The ``[ocr]`` mark
  tells an agent, and the policy, that the element is text read from the screen
  (``visual_tree``: an unknown target, as any element of an OCR outline).
* **Version**: the tree's text changed, so its version is the visual recipe over the new text
  (``visual-…``: a step on it re-observes with a screenshot); the host's own version is kept
  to quote back (``VisualTree.host_tree_version``), with ``VisualTree.mixed``: an action on an
  ``[ocr]`` element goes to the host as a pointer action at the centre of its text, one on
  any other element as it is (kernel/visual_tree.py ``for_host``).

No OCR engine, or an OCR failure: the observation stays as the host sent it.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from PIL import Image

from deskpilot.kernel.image_boxes import image_boxes, within
from deskpilot.protocol.errors import DeskpilotError
from deskpilot.protocol.observed import ObservedState, VisualTree
from deskpilot.protocol.tree import SCREEN_TEXT_IDS
from deskpilot.vision.evidence import OcrLine, OcrWord
from deskpilot.vision.frames import decode_image
from deskpilot.vision.highlights import INSET, highlights
from deskpilot.vision.incremental import Box, window_reader
from deskpilot.vision.ocr import OcrEngine, default_engine, ocr_ready
from deskpilot.vision.outline import UNSURE_CONFIDENCE, UNSURE_MARK, quote_name, visual_version

#: the state word of an element read from the screenshot
OCR_STATE: Final = "ocr"
#: the state word of an item drawn on a highlight (the colour a selection is drawn in)
HIGHLIGHT_STATE: Final = "highlighted"
#: the state word of the part of a widget another window or a popup lies over: its text is
#: not read there (an icon view under another window looked like an empty folder)
COVERED_STATE: Final = "covered"
#: items listed per widget, at most (a folder of thousands shows a screenful anyway)
MAX_ITEMS: Final = 200
#: words of a piece farther apart than this many line heights are separate items
ITEM_GAP: Final = 1.0

log = logging.getLogger(__name__)

_ID: Final = re.compile(r"\[(\d+)\]\s*$")


def wanted(state: ObservedState) -> bool:
    """A complete, current accessibility tree with widgets whose text only the screenshot
    shows, and that screenshot."""
    obs = state.observation
    r = obs.tree_read
    return (
        bool(obs.opaque_regions)
        and state.png is not None
        and state.visual is None
        and r.source == "accessibility"
        and r.partial is None
        and r.stale_age_ms is None
    )


@dataclass(frozen=True, slots=True)
class Item:
    """One item of text a widget shows, its box in the screenshot, and whether it is drawn
    on a highlight (another background than the widget's: a selected file's)."""

    text: str
    box: Box
    highlighted: bool = False
    #: the part of the widget that something lies over (no text: none was read there)
    covered: bool = False
    #: a word of it was read with low confidence (vision/outline.py ``UNSURE_CONFIDENCE``)
    uncertain: bool = False


#: widgets whose last items are kept (their pixels' digest → items)
MAX_KEPT: Final = 16
_LAST: OrderedDict[str, tuple[bytes, list[Item]]] = OrderedDict()
_LOCK = threading.Lock()


@dataclass
class _IdBook:
    """One window's item ids: the ids each item text had in its last listing, and the next
    id never given yet (an id once given is never given to another text)."""

    last: dict[str, list[int]]
    next_id: int


#: item ids by window (``pid:window id``), the least recently listed dropped first
_IDS: OrderedDict[str, _IdBook] = OrderedDict()


async def with_text(state: ObservedState, engine: OcrEngine | None = None) -> ObservedState:
    """``state`` with the text of its widgets that expose none listed under their elements;
    ``state`` as it is when OCR cannot read it. Never raises (after an action this is its
    post-action state: a failed OCR must not turn an action that ran into one that failed)."""
    chosen = engine if engine is not None else default_engine()
    if not ocr_ready(chosen):
        return state
    obs = state.observation
    png = state.png
    assert png is not None
    started = time.perf_counter()
    key = f"{obs.app.pid}:{obs.window.window_id}"
    masked = image_boxes(obs, [*obs.covered_regions, *obs.popup_regions])
    areas = obs.opaque_regions
    boxes = image_boxes(obs, [a.rect for a in areas])
    if len(boxes) != len(areas):  # one lies outside the image: none is read rather than guess
        return state

    def read_all() -> list[tuple[int, list[Item]]]:
        image = decode_image(png)
        found = []
        for area, box in zip(areas, boxes, strict=True):
            # the parts of the widget other windows lie over, in its own coordinates: painted
            # out for the OCR, and listed as covered items
            inside = [b for m in masked if (b := within(m, box)) is not None]
            items = read_items(chosen, key, image, box, inside) + _covered(box, inside)
            found.append((area.element_id, items))
        return found

    try:
        found = await asyncio.to_thread(read_all)
    except Exception as exc:  # typed, or an engine bug: neither may fail the observation
        typed = exc.code if isinstance(exc, DeskpilotError) else None
        log.log(
            logging.WARNING if typed else logging.ERROR,
            "opaque text: OCR failed (%s); the observation keeps the host's tree",
            typed or type(exc).__name__,
            exc_info=typed is None,
        )
        return state
    out = listed(state, found, key)
    elapsed = round((time.perf_counter() - started) * 1000.0, 2)
    timings = {**out.observation.timings_ms, "opaque": elapsed}
    observation = out.observation.model_copy(update={"timings_ms": timings})
    return ObservedState(observation, out.png, out.windows, out.visual)


def forget() -> None:
    """Drop the widgets' kept items and item ids (the next read of each is an OCR, its ids
    new; benchmarks and tests)."""
    with _LOCK:
        _LAST.clear()
        _IDS.clear()


def read_items(
    engine: OcrEngine, key: str, image: Image.Image, box: Box, inside: list[Box]
) -> list[Item]:
    """The items of text in ``box`` of ``image`` (``inside``: the parts of it other windows
    lie over, in the box's coordinates, painted out), in reading order. Blocking.

    The widget is read with its highlights painted out, and each highlight's inside on its
    own (vision/highlights.py): a selected item's white name on its highlight is read, and
    marked ``highlighted``."""
    x, y, w, h = box
    part = image.crop((x, y, x + w, y + h)).convert("RGB")
    key = f"{key}:opaque:{x},{y},{w},{h}"
    digest = hashlib.blake2b(part.tobytes() + repr(inside).encode(), digest_size=16).digest()
    with _LOCK:
        kept = _LAST.get(key)
        if kept is not None and kept[0] == digest:
            _LAST.move_to_end(key)
            return kept[1]  # the same pixels: the same items, no OCR
    items = _read(engine, key, part, x, y, inside)
    with _LOCK:
        _LAST[key] = (digest, items)
        _LAST.move_to_end(key)
        while len(_LAST) > MAX_KEPT:
            _LAST.popitem(last=False)
    return items


def _read(
    engine: OcrEngine, key: str, part: Image.Image, x: int, y: int, inside: list[Box]
) -> list[Item]:
    lit = highlights(part)
    hidden = [*inside, *(hl.box for hl in lit)]
    reading = window_reader().read_image(engine, key, part, hidden, patch=False)
    items = [_item(words, x, y, False) for line in reading.result.lines for words in _runs(line)]
    for hl in lit:
        if any(within(b, hl.box) for b in inside):
            continue  # a popup or a window over it: not this widget's text
        ox, oy = x + hl.box[0] + INSET, y + hl.box[1] + INSET
        for line in engine.recognize(hl.inside):
            items += [_item(words, ox, oy, True) for words in _runs(line)]
    return _reading_order([i for i in items if i.text])[:MAX_ITEMS]


def _covered(box: Box, inside: list[Box]) -> list[Item]:
    """The covered parts of ``box`` (``inside``, in its coordinates) as items without text:
    said, so that a widget whose items are under another window is not taken for an empty
    one."""
    return [Item("", (box[0] + x, box[1] + y, w, h), covered=True) for x, y, w, h in inside]


def _item(words: list[OcrWord], dx: int, dy: int, highlighted: bool) -> Item:
    text = " ".join(wd.text for wd in words).strip()
    left, top = min(wd.x for wd in words), min(wd.y for wd in words)
    right = max(wd.x + wd.width for wd in words)
    bottom = max(wd.y + wd.height for wd in words)
    box = (dx + left, dy + top, right - left, bottom - top)
    # a widget's names are a toolkit's UI font, not a terminal's bitmap one: the plain floor
    doubt = any(wd.confidence < UNSURE_CONFIDENCE for wd in words)
    return Item(text, box, highlighted, uncertain=doubt)


def _reading_order(items: list[Item]) -> list[Item]:
    """Top to bottom by rows (items whose vertical centres lie within half a height of the
    row's first), left to right within a row."""
    rows: list[list[Item]] = []
    for item in sorted(items, key=lambda i: i.box[1]):
        centre = item.box[1] + item.box[3] / 2
        if rows:
            head = rows[-1][0]
            if abs(centre - (head.box[1] + head.box[3] / 2)) < max(head.box[3], item.box[3]) / 2:
                rows[-1].append(item)
                continue
        rows.append([item])
    return [i for row in rows for i in sorted(row, key=lambda i: i.box[0])]


def listed(
    state: ObservedState, found: Sequence[tuple[int, list[Item]]], key: str = ""
) -> ObservedState:
    """``state`` with each widget's items (``found``: the element each is listed under, and
    its items) in its tree (see the module docstring); ``key`` names the window, whose item
    ids are kept from one listing to the next."""
    obs = state.observation
    lines = obs.tree.splitlines()
    with _LOCK:
        book = _IDS.pop(key, None) or _IdBook({}, SCREEN_TEXT_IDS)
    now: dict[str, list[int]] = {}

    def id_for(text: str) -> int:
        # the id this text had (the first of them not taken yet in this listing), else a
        # new one: an item keeps its id while it is listed, and an id never names another
        taken = now.setdefault(text, [])
        for old in book.last.get(text, ()):
            if old not in taken:
                taken.append(old)
                return old
        taken.append(book.next_id)
        book.next_id += 1
        return taken[-1]

    bounds: dict[int, Box] = {}
    for element_id, items in found:
        at = _line_of(lines, element_id)
        if at is None or not items:
            continue
        depth = _depth(lines[at]) + 1
        end = at + 1
        while end < len(lines) and lines[end].startswith("  " * depth):
            end += 1
        added: list[str] = []
        indent = "  " * depth
        for item in items:
            if item.covered:
                item_id = id_for(f"\0covered {item.box}")
                added.append(f"{indent}- text [{COVERED_STATE}] [{OCR_STATE}] [{item_id}]")
            else:
                item_id = id_for(item.text)
                lit = f" [{HIGHLIGHT_STATE}]" if item.highlighted else ""
                lit += UNSURE_MARK if item.uncertain else ""
                name = quote_name(item.text)
                added.append(f'{indent}- text "{name}"{lit} [{OCR_STATE}] [{item_id}]')
            bounds[item_id] = item.box
        lines[end:end] = added
    with _LOCK:
        _IDS[key] = _IdBook(now, book.next_id)
        while len(_IDS) > MAX_KEPT:
            _IDS.popitem(last=False)
    if not bounds:
        return state
    text = "\n".join(lines)
    count = obs.element_count + len(bounds)
    image = obs.image
    size = (image.width, image.height) if image is not None else (0, 0)
    visual = VisualTree(obs.tree_version, bounds, size, mixed=True)
    changed = obs.model_copy(
        update={"tree": text, "element_count": count, "tree_version": visual_version(text, count)}
    )
    return ObservedState(changed, state.png, state.windows, visual)


def _runs(line: OcrLine) -> list[list[OcrWord]]:
    """The words of an OCR piece in runs: a gap wider than ``ITEM_GAP`` line heights starts
    a new one (two labels of a row that tesseract read as one piece)."""
    words = sorted(line.words, key=lambda wd: wd.x) if line.words else []
    if not words:
        return [[OcrWord(line.text, line.x, line.y, line.width, line.height, line.confidence)]]
    runs: list[list[OcrWord]] = [[words[0]]]
    for wd in words[1:]:
        last = runs[-1][-1]
        gap = wd.x - (last.x + last.width)
        if gap > ITEM_GAP * max(last.height, wd.height, 1):
            runs.append([wd])
        else:
            runs[-1].append(wd)
    return runs


def _line_of(lines: list[str], element_id: int) -> int | None:
    suffix = f" [{element_id}]"
    return next((i for i, ln in enumerate(lines) if ln.rstrip().endswith(suffix)), None)


def _depth(line: str) -> int:
    return (len(line) - len(line.lstrip(" "))) // 2
