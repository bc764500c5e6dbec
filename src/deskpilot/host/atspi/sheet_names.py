"""A spreadsheet's sheet named after its tab, not after the name it had when it was first read.

LibreOffice Calc names its sheet's table when it makes the object ("Sheet Prices") and keeps
that name when the sheet is renamed: after Sheet ▸ Rename to "Q1" the table still said "Sheet
Prices" while its tab said "Q1" (a trial took the old name for the sheet's). The tab list
below the sheet is read fresh, and its selected tab is the sheet shown, so the table's name
is put together again from its first word (Calc's "Sheet", in the UI's language) and that
tab's name. Only where exactly one tab is selected (several are while sheets are grouped,
and the one shown is then not known from the tabs) and the window is LibreOffice's (the
caller's rule).
"""

from __future__ import annotations

from typing import Final

from deskpilot.host.atspi.collect import RawNode, virtual
from deskpilot.host.atspi.vocab import ROLE_NUMBER, State, bit

_R_TABLE: Final = ROLE_NUMBER["table"]
_R_TAB: Final = ROLE_NUMBER["page tab"]
_R_TAB_LIST: Final = ROLE_NUMBER["page tab list"]
_B_SELECTED: Final = bit(State.SELECTED)


def name_by_tab(nodes: list[RawNode]) -> None:
    """Rename each sheet table (a virtual table) after the selected tab of the window's tab
    list, keeping the first word of its own name."""
    sheets = [n for n in nodes if n.role == _R_TABLE and virtual(n)]
    if not sheets:
        return
    chosen = [
        n
        for n in nodes
        if n.role == _R_TAB
        and n.states & _B_SELECTED
        and n.parent >= 0
        and nodes[n.parent].role == _R_TAB_LIST
    ]
    if len(chosen) != 1:
        return
    tab = " ".join(chosen[0].name.split())
    for sheet in sheets:
        prefix, sep, rest = sheet.name.strip().partition(" ")
        if tab and sep and rest != tab:
            sheet.name = f"{prefix} {tab}"
