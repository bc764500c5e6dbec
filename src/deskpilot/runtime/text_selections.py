"""What a ``select_text`` selected, told to the agent in the result.

The host reads the element's selection back once the action settled
(``ActionResult.selected``: the range and at most 100 characters of it). The agent is told
which characters are selected and what they say, so it does not have to count offsets in
the tree to know whether the word it meant is the one selected; and when the element
reports no selection afterwards, the result says that instead of letting it assume one. The
text goes to the agent only: the ledger keeps the range (kernel/broker/records.py).
"""

from __future__ import annotations

import json

from deskpilot.protocol.wire import ActionResult


def selection_note(result: ActionResult, element_id: int | None, start: int, end: int) -> str:
    """One sentence: what element ``element_id`` has selected after a ``select_text`` of
    ``start``..``end``."""
    sel = result.selected
    where = f"element {element_id}" if element_id is not None else "the element"
    if sel is None and start == end:
        # an empty range: no selection is what was asked for (trial-6 placed a caret this way
        # and was told the app "may not have taken the selection")
        return (
            f"No text of {where} is selected, as asked: an empty range ({start}-{end}) puts "
            f"the caret at {start}; the state shows where the element's caret is."
        )
    if sel is None:
        return (
            f"{where.capitalize()} reports no selected text after the call: it may not have "
            "taken the selection. Check the state before acting on a selection."
        )
    quoted = json.dumps(sel.text, ensure_ascii=False)
    said = f"Selected characters {sel.start}-{sel.end} of {where}: {quoted}."
    if (sel.start, sel.end) != (start, end):
        said += f" (asked for {start}-{end}: the app selected this instead.)"
    return said
