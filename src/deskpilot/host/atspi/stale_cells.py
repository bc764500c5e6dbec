"""A spreadsheet's current cell whose text the app did not bring up to date.

LibreOffice Calc 7.4 keeps one accessible object for the current cell and hands it out for
that address until the cursor moves; its text is the one the cell had when the cursor came
to it. A change made in place — Delete, a paste, an undo, a fill, with the cursor staying —
leaves that text as it was, and sends no event for the cell or its sheet (measured: Delete on
C3 holding 0.75 left ``Text`` "0.75" while the formula cell next to it showed its new value,
and the bus carried only the status bar's and the Undo menu's changes). The cell's
``Value.CurrentValue`` is read from the document each time it is asked (0 after that
Delete), so where the text is a plain number and the value another number, the text is known
to be old.

Such a cell is not shown with its old text: the render says the text is out of date and what
the value tells (:func:`stale_words`): the number, or — for 0, the value of an empty cell, a
0 and a text alike — all three. A cell that held 0 and was emptied keeps text "0" and value
0: nothing tells it apart from a cell that still holds 0 (trial-6), a limit noted in
docs/host-tree.md. A text cell changed in place cannot be told this way
(its value is 0 before and after): that is a limit of the app's accessibility, noted in
docs/host-tree.md.
"""

from __future__ import annotations

import math
from typing import Final

from deskpilot.host.atspi.bus import I_PROPERTIES, I_VALUE, AtspiCallError, Conn
from deskpilot.host.atspi.collect import RawNode
from deskpilot.host.atspi.vocab import State, bit

_B_FOCUSED: Final = bit(State.FOCUSED)


async def mark_stale(conn: Conn, cells: list[RawNode]) -> None:
    """Ask the current (focused) filled cells among ``cells`` for their value, and mark those
    whose text is a number other than it: their text is dropped and ``stale`` holds the
    number now (one batch; a sheet has one current cell)."""
    current = [c for c in cells if c.path and c.value and c.states & _B_FOCUSED]
    if not current:
        return
    res = await conn.batch(
        [(c.bus, c.path, I_PROPERTIES, "Get", "ss", (I_VALUE, "CurrentValue")) for c in current]
    )
    for cell, got in zip(current, res, strict=True):
        if isinstance(got, AtspiCallError) or cell.value is None:
            continue
        now = _number(got[0].value)
        if now is not None and is_stale(cell.value, now):
            cell.stale = _shown(now)
            cell.value = None


def stale_words(number: str) -> str:
    """What the state says of such a cell: never the old text, and never more than the value
    tells — 0 is also the value of an empty cell and of a text (trial-6 read "its number now:
    0" as "it holds 0" of a cell that was empty)."""
    if number == "0":
        return (
            "text out of date (the app did not update it): the cell is now empty, 0 or a "
            "text; it is read right once the cursor has moved"
        )
    return f"text out of date (the app did not update it): its number now: {number}"


def is_stale(text: str, value: float) -> bool:
    """Whether ``text``, as a plain number, is not ``value`` (a text that is no plain number —
    a word, ``75 %``, ``1,234.50`` — cannot be compared, and is taken as it is)."""
    shown = _number(text.strip())
    if shown is None:
        return False
    return not math.isclose(shown, value, rel_tol=1e-9, abs_tol=1e-12)


def _number(v: object) -> float | None:
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _shown(value: float) -> str:
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:g}"
