"""A visual tree: the outline of a window that exposes no accessibility tree, built by OCR.

An xterm, a canvas app or a game shows text but exports no AT-SPI objects, so its observation
has no element ids and a text-only agent has only a screenshot it cannot read. The OCR lines
of that screenshot (:mod:`deskpilot.vision.ocr`) become an outline in the format of the
host's AT-SPI trees (docs/host-tree.md), so the agent reads and acts on it the same way::

    - window "xterm" [1]
      - block [2]
        - text "total 48" [3]
          - word "total" [4]
          - word "48" [5]
        - text "README.md" [6]

* ``block``: rows of text less than 1.2 line heights apart (a paragraph; a terminal's
  output is one block, a panel below a gap is another);
* ``text``: one line of a row: OCR pieces closer than three line heights (tesseract reads a
  terminal's columns as separate pieces), its text as the name;
* ``word``: the words of a line of more than one word, so a click can aim at one word.

A popup over the window (a menu: its own window, read in its own box) follows as a section
whose root line says ``popup``, as the host appends an app's popups to a window's tree::

    - popup [7]
      - block [8]
        - text "Duplicate" [9]

Each element keeps its box (pixels of the image read, :attr:`Outline.bounds`): the kernel
turns an action on the element into a click at the centre of that box. The version is
``visual-`` and a content hash of the text (as the host's ``treeVersion`` is of its text), so
two reads of the same screen compare equal and an AT-SPI version can never collide with it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from deskpilot.protocol.wire import AppIdentity
from deskpilot.vision.evidence import OcrLine, OcrResult
from deskpilot.vision.lines import rows as ocr_rows
from deskpilot.vision.ocr import OcrEngine, block_engine, default_engine

#: The prefix of a visual tree's version (an AT-SPI tree's is bare hex, or ``t-none``).
VERSION_PREFIX = "visual-"
#: Names are cut like the host's (host/atspi/render.py NAME_MAX_CHARS).
NAME_MAX_CHARS = 200
#: The host's default element cap (docs/host-tree.md, "Limits").
MAX_ELEMENTS = 2000
#: The root line of a popup's section (the host's word for it: host/atspi/popup_sections.py)
POPUP_ROLE = "popup"
#: Lines closer than this many line heights (vertically) may share a block.
BLOCK_GAP = 1.2
#: Pieces of a row closer than this many line heights are one line (a terminal's columns).
LINE_GAP = 4.0

Box = tuple[int, int, int, int]  # x, y, width, height in pixels of the image read

#: Terminals that export no accessibility tree: the window is a grid of text, read as one
#: uniform block (executable or a part of WM_CLASS, lower case)
TERMINALS = frozenset(
    {
        *("xterm", "uxterm", "urxvt", "rxvt", "rxvt-unicode", "st", "st-256color"),
        *("alacritty", "kitty", "foot", "footclient", "wezterm", "wezterm-gui"),
        *("aterm", "eterm", "mlterm", "cool-retro-term", "terminology"),
    }
)

#: a line of text the OCR found but could not read (under its confidence floor): its place
#: is known, its words are not (zoom in, or read the screenshot)
UNREAD_ROLE = "text [unreadable]"
#: a word read with less confidence than this is marked ``[uncertain]``, and so is its line:
#: a terminal's small bitmap font read "report-2026.txt" as "report-2028.txt" at 56, where
#: words read right come in at 80–97 (docs/vision.md, "Uncertain words")
UNSURE_CONFIDENCE = 70.0
#: text under this many pixels high (a terminal's 6×13 bitmap font: lines 9–11 px) is read
#: far less reliably: a word there is uncertain under ``SMALL_UNSURE_CONFIDENCE`` (a trial
#: saw "318,75" for 318.75 and "14230" for 14:30 come in above 70)
SMALL_TEXT_PX = 12
SMALL_UNSURE_CONFIDENCE = 90.0
UNSURE_MARK = " [uncertain]"


def unsure(confidence: float, height: int) -> bool:
    """Whether a word read with ``confidence`` in text ``height`` pixels high is marked
    ``[uncertain]``."""
    floor = SMALL_UNSURE_CONFIDENCE if height < SMALL_TEXT_PX else UNSURE_CONFIDENCE
    return confidence < floor


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\x7f\u2028\u2029]')


@dataclass(frozen=True, slots=True)
class Outline:
    """The rendered outline, its element count and version, and each element's box."""

    text: str
    element_count: int
    tree_version: str
    bounds: dict[int, Box] = field(default_factory=dict)
    #: elements left out at the element cap (the text then ends with a truncation marker)
    omitted: int = 0
    #: the OCR lines found (0: the screenshot shows no text)
    lines: int = 0
    #: lines of text found but too unclear to read (each a ``text [unreadable]`` element)
    unread: int = 0


@dataclass(frozen=True, slots=True)
class PopupReading:
    """The reading of one popup over the window (a menu, a list: its own window, read apart
    from the window under it) and where its box lies in the image the window was read from
    (its lines' boxes are relative to that box)."""

    result: OcrResult
    box: Box


def build_outline(
    result: OcrResult,
    title: str | None,
    *,
    popups: Sequence[PopupReading] = (),
    max_elements: int = MAX_ELEMENTS,
) -> Outline:
    """The outline of an OCR reading: the window, its blocks, their lines and words; then
    each popup over it as a section of its own whose root line says ``popup`` (as the host
    appends an app's popups to a window's tree: docs/host-tree.md, "Popups over the window"),
    bottom to top (``popups`` is topmost first, as listed)."""
    rows: list[str] = []
    bounds: dict[int, Box] = {}
    omitted = 0

    def add(depth: int, role: str, name: str | None, box: Box, marks: str = "") -> bool:
        nonlocal omitted
        if len(bounds) >= max_elements:
            omitted += 1
            return False
        element_id = len(rows) + 1
        label = f' "{quote_name(name)}"' if name else ""
        rows.append(f"{'  ' * depth}- {role}{label}{marks} [{element_id}]")
        bounds[element_id] = box
        return True

    def add_text(reading: OcrResult, dx: int, dy: int) -> None:
        for block in group_blocks(text_rows(list(reading.lines))):
            add(1, "block", None, _moved(_union([ln for row in block for ln in row]), dx, dy))
            for line in (line for row in block for line in row):
                marks = UNSURE_MARK if _unsure(line) else ""
                if not add(2, "text", line.text, _moved(_box(line), dx, dy), marks):
                    continue
                if len(line.words) > 1:
                    for w in line.words:
                        mark = UNSURE_MARK if unsure(w.confidence, line.height) else ""
                        box = _moved((w.x, w.y, w.width, w.height), dx, dy)
                        add(3, "word", w.text, box, mark)
        for box in reading.unread:  # there, but not read: said, never left out in silence
            add(1, UNREAD_ROLE, None, _moved(box, dx, dy))

    add(0, "window", title, (0, 0, result.width, result.height))
    add_text(result, 0, 0)
    lines, unread = len(result.lines), len(result.unread)
    for popup in reversed(popups):
        add(0, POPUP_ROLE, None, popup.box)
        add_text(popup.result, popup.box[0], popup.box[1])
        lines += len(popup.result.lines)
        unread += len(popup.result.unread)
    if omitted:
        rows.append(f"[truncated: {omitted} elements omitted]")
    text = "\n".join(rows) + "\n"
    count = len(bounds)
    return Outline(text, count, visual_version(text, count), bounds, omitted, lines, unread)


def _moved(box: Box, dx: int, dy: int) -> Box:
    return box[0] + dx, box[1] + dy, box[2], box[3]


def text_rows(lines: list[OcrLine]) -> list[list[OcrLine]]:
    """The rows of the reading, each as its runs of text: OCR pieces of a row closer than
    ``LINE_GAP`` line heights are one line (a terminal's ``ls -l`` columns, a few spaces
    apart, are read by tesseract as separate pieces; labels far apart stay apart). The words
    of the pieces are kept, so each is still an element of its own."""
    out: list[list[OcrLine]] = []
    for row in ocr_rows(lines):
        runs: list[OcrLine] = []
        current = row[0]
        for piece in row[1:]:
            gap = piece.x - (current.x + current.width)
            if gap <= LINE_GAP * max(current.height, piece.height, 1):
                current = _joined(current, piece)
            else:
                runs.append(current)
                current = piece
        runs.append(current)
        out.append(runs)
    return out


def is_terminal(app: AppIdentity) -> bool:
    """Is the app a terminal emulator (its window a grid of text)?"""
    names = {app.executable or "", app.name or ""}
    names.update(re.split(r"[.\x00]", app.wm_class or ""))
    return any(n.lower() in TERMINALS for n in names if n)


def engine_for(app: AppIdentity) -> OcrEngine:
    """The engine to read a window of ``app`` with: a terminal's grid of text as one uniform
    block (whole lines, correct where sparse-text reading breaks ``-rw-r--r--`` into pieces,
    and half the time), anything else as sparse text, the engine's screenshot setting."""
    return block_engine() if is_terminal(app) else default_engine()


def visual_version(text: str, element_count: int) -> str:
    """``visual-`` and the first 20 hex digits of SHA-256 over the count and the text (the
    host's recipe, host/atspi/snapshot.py): the same screen text, the same version."""
    h = hashlib.sha256()
    h.update(f"{element_count}\n".encode())
    h.update(text.encode("utf-8", "surrogatepass"))
    return VERSION_PREFIX + h.hexdigest()[:20]


def is_visual_version(tree_version: str) -> bool:
    return tree_version.startswith(VERSION_PREFIX)


def group_blocks(rows: list[list[OcrLine]]) -> list[list[list[OcrLine]]]:
    """``rows`` (top to bottom) in blocks: a row starts a new block when the gap above it is
    more than ``BLOCK_GAP`` line heights (a paragraph break, a separate panel below)."""
    blocks: list[list[list[OcrLine]]] = []
    bottom = 0
    height = 1
    for row in rows:
        top = min(line.y for line in row)
        row_height = max(line.height for line in row)
        if not blocks or top - bottom > BLOCK_GAP * max(height, row_height, 1):
            blocks.append([row])
        else:
            blocks[-1].append(row)
        bottom = max(line.y + line.height for line in row)
        height = row_height
    return blocks


def _unsure(line: OcrLine) -> bool:
    """A line with an uncertain word (:func:`unsure`; without words, its own confidence)."""
    if line.words:
        return any(unsure(w.confidence, line.height) for w in line.words)
    return unsure(line.confidence, line.height)


def _joined(a: OcrLine, b: OcrLine) -> OcrLine:
    left, top = min(a.x, b.x), min(a.y, b.y)
    right = max(a.x + a.width, b.x + b.width)
    bottom = max(a.y + a.height, b.y + b.height)
    chars_a, chars_b = len(a.text), len(b.text)
    confidence = (a.confidence * chars_a + b.confidence * chars_b) / max(chars_a + chars_b, 1)
    return OcrLine(
        f"{a.text} {b.text}",
        round(confidence, 1),
        left,
        top,
        right - left,
        bottom - top,
        a.words + b.words,
    )


def _box(line: OcrLine) -> Box:
    return line.x, line.y, line.width, line.height


def _union(lines: list[OcrLine]) -> Box:
    left = min(ln.x for ln in lines)
    top = min(ln.y for ln in lines)
    right = max(ln.x + ln.width for ln in lines)
    bottom = max(ln.y + ln.height for ln in lines)
    return left, top, right - left, bottom - top


def quote_name(s: str) -> str:
    """A name on one line, escaped as the host escapes names (host/atspi/render.py): text on
    the screen can never look like another element."""
    s = " ".join(s.split())
    if len(s) > NAME_MAX_CHARS:
        s = s[:NAME_MAX_CHARS] + "…"
    if _NEEDS_ESCAPE.search(s):
        s = _NEEDS_ESCAPE.sub(_escape_char, s)
    return s


def _escape_char(m: re.Match[str]) -> str:
    ch = m.group(0)
    return _ESCAPES.get(ch) or f"\\u{ord(ch):04x}"
