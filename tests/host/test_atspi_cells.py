"""A GTK 3 tree view's cell of several renderers is one cell named by its text
(atspi/cells.py): on synthetic trees shaped as Thunar 4.18 exports its side pane and its
detailed list (tests/mcp/test_app_thunar.py reads the real ones)."""

from __future__ import annotations

from test_atspi_render import VISIBLE, Tree

from deskpilot.host.atspi.render import render
from deskpilot.host.atspi.vocab import State, bit

CELL_ACTIONS = ("Expand or contract", "Edit", "Activate")


def _actions(name: str) -> tuple[str, ...] | None:
    """As the host reads them: actions only for unnamed leaves (collect.needs_detail)."""
    return None if name else CELL_ACTIONS


def _side_pane() -> Tree:
    """Thunar's side pane: one column of seven renderers per row, the name in two of them
    (one with no size), the others empty."""
    t = Tree()
    w = t.add(-1, "frame", "files - Thunar")
    table = t.add(w, "table")
    for place in ("Places", "Computer", "Trash"):
        row = t.add(table, "table cell")
        for name in (place, "", "", place, "", "", ""):
            t.add(row, "table cell", name, actions=_actions(name))
    return t


def test_a_cell_of_renderers_is_one_cell_named_by_their_text() -> None:
    text = render(_side_pane().nodes).text
    assert text.splitlines() == [
        '- window "files - Thunar" [1]',
        "  - table [2]",
        '    - cell "Places" [3]',
        '    - cell "Computer" [4]',
        '    - cell "Trash" [5]',
    ]


def test_a_renderer_with_a_state_of_its_own_stays() -> None:
    """A toggle renderer's [checked] is not its row's: it is kept, under its cell."""
    t = Tree()
    w = t.add(-1, "frame", "List")
    table = t.add(w, "table")
    row = t.add(table, "table cell")
    t.add(row, "table cell", "", states=VISIBLE | bit(State.CHECKED), actions=CELL_ACTIONS)
    t.add(row, "table cell", "Enabled")
    assert render(t.nodes).text.splitlines()[2:] == [
        '    - cell "Enabled" [3]',
        "      - cell [checked] [actions: Edit, Activate] [4]",
    ]


def test_a_cell_that_can_expand_keeps_its_expand_action() -> None:
    t = Tree()
    w = t.add(-1, "frame", "Tree")
    table = t.add(w, "tree table")
    t.add(table, "table cell", "Docs", states=VISIBLE | bit(State.EXPANDABLE), actions=CELL_ACTIONS)
    t.add(table, "table cell", "notes.txt", actions=CELL_ACTIONS)
    lines = render(t.nodes).text.splitlines()
    assert (
        lines[2]
        == '    - cell "Docs" [collapsed] [actions: Expand or contract, Edit, Activate] [3]'
    )
    assert lines[3] == '    - cell "notes.txt" [actions: Edit, Activate] [4]'


def test_a_check_box_cell_says_unchecked_and_offers_only_toggle() -> None:
    """GTK's toggle cell has a text cell's states (CHECKED only when ticked) and lists its
    text cell's actions after Toggle, named by their descriptions (zenity's checklist)."""
    gtk_toggle = ("Toggle", "Expands or contracts the row in the tree view containing this cell")
    t = Tree()
    w = t.add(-1, "frame", "Toppings")
    table = t.add(w, "table")
    t.add(table, "table cell", "", actions=gtk_toggle)
    t.add(table, "table cell", "cheese")
    t.add(table, "table cell", "", states=VISIBLE | bit(State.CHECKED), actions=gtk_toggle)
    t.add(table, "table cell", "basil")
    lines = render(t.nodes).text.splitlines()[2:]
    assert lines[0].startswith("    - cell [unchecked]") and "Expands" not in lines[0]
    assert lines[2].startswith("    - cell [checked]") and "Expands" not in lines[2]
    assert '- cell "cheese"' in lines[1]
