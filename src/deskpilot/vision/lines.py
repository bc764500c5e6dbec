"""The order of OCR lines, and one line per phrase however tesseract's layout cut it.

Tesseract sometimes cuts a line of text in two at an ordinary word space, where its layout
analysis of the whole page sees a column edge (e.g. nine lines "Line 1: the invoice ..."
aligned after the colon, but not twelve, nor six). That depends on what else is on the page,
so it differs between a frame and a band of it (:mod:`deskpilot.vision.bands`).
:func:`join_fragments` undoes it: two lines of one row that are closer than
``JOIN_GAP`` x their height are one line. Separate labels (buttons, menu items) are further
apart than that and stay separate.
"""

from __future__ import annotations

from deskpilot.vision.evidence import OcrLine

#: Lines of a row closer than this many line heights are one line (a word space is ~0.3-0.5).
JOIN_GAP = 0.75


def reading_order(lines: list[OcrLine]) -> list[OcrLine]:
    """Top to bottom, and left to right within a row: lines whose vertical centres lie
    within half a line height of a row's first line belong to that row."""
    return [line for row in _rows(lines) for line in row]


def rows(lines: list[OcrLine]) -> list[list[OcrLine]]:
    """``lines`` in rows (as :func:`reading_order` groups them), each left to right."""
    return _rows(lines)


def join_fragments(lines: list[OcrLine]) -> list[OcrLine]:
    """``lines`` in reading order, each row's neighbours closer than ``JOIN_GAP`` x their
    height made one line: the union of the boxes, the texts joined by a space, the
    confidence weighted by the characters of each part."""
    out: list[OcrLine] = []
    for row in _rows(lines):
        joined = [row[0]]
        for line in row[1:]:
            last = joined[-1]
            gap = line.x - (last.x + last.width)
            if gap <= JOIN_GAP * max(last.height, line.height):
                joined[-1] = _join(last, line)
            else:
                joined.append(line)
        out.extend(joined)
    return out


def _rows(lines: list[OcrLine]) -> list[list[OcrLine]]:
    rows: list[list[OcrLine]] = []
    for line in sorted(lines, key=lambda ln: (ln.y, ln.x)):
        centre = line.y + line.height / 2
        if rows:
            first = rows[-1][0]
            if abs(centre - (first.y + first.height / 2)) <= max(first.height, 1) / 2:
                rows[-1].append(line)
                continue
        rows.append([line])
    return [sorted(row, key=lambda ln: ln.x) for row in rows]


def _join(a: OcrLine, b: OcrLine) -> OcrLine:
    left, top = min(a.x, b.x), min(a.y, b.y)
    right = max(a.x + a.width, b.x + b.width)
    bottom = max(a.y + a.height, b.y + b.height)
    chars_a, chars_b = len(a.text.replace(" ", "")), len(b.text.replace(" ", ""))
    confidence = (a.confidence * chars_a + b.confidence * chars_b) / max(chars_a + chars_b, 1)
    text = f"{a.text} {b.text}"
    words = a.words + b.words
    return OcrLine(text, round(confidence, 1), left, top, right - left, bottom - top, words)
