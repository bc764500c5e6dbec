"""Which element takes typed text, decided on the rendered tree (no desktop needed).

The trees are the host's renderings of real windows (Chromium, GTK 3, GTK 4), cut down."""

from __future__ import annotations

import pytest

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.tree import parse_tree
from deskpilot.protocol.wire import ActionResult
from deskpilot.runtime.item_clicks import ItemClick
from deskpilot.runtime.text_targets import (
    check_text_target,
    check_value_target,
    nearest_text_target,
    takes_text,
)

CHROMIUM = """\
- window "Edit - Chromium" [1]
  - toolbar [2]
    - button "Back" [disabled] [3]
    - textField "Address and search bar" = "/tmp/edit.html" [4]
  - document "Edit" [focused] [5]
    - text "Rich text here" [editable] [6]
    - section "Named editor" [editable] [7]
      - text "Para one" [editable] [8]
    - textField "Area" = "x" [9]
    - textField "RO" = "fixed" [disabled] [readonly] [10]
    - spinButton "Num" = "3" [editable] [11]
    - comboBox "Pick" = "" [editable] [12]
    - comboBox "Color" = "red" [collapsed] [13]
    - text "Static [editable] words" [14]
    - text "Static" [15]
  - tabList [16]
    - tab "Edit" [selected] [17]"""

GTK3_COMBO = """\
- dialog "Add" [1]
  - label "Pick one" [2]
  - comboBox "a" [3]
    - textField = "a" [4]
  - button "OK" [5]"""

CALCULATOR = """\
- window "Calculator" [1]
  - textField = "" [readonly] [2]
  - textField = "" [focused] [3]
  - button "7 7" [4]"""


def test_the_rendered_states_decide() -> None:
    nodes = parse_tree(CHROMIUM).elements
    takes = {n.id for n in nodes.values() if takes_text(n, nodes)}
    # editable text, sections, fields, spin buttons and entry combo boxes; not the read-only
    # field, a <select>, static text (a name that *contains* "[editable]" does not count)
    assert takes == {4, 6, 7, 8, 9, 11, 12}
    gtk = parse_tree(GTK3_COMBO).elements
    assert takes_text(gtk[3], gtk) and takes_text(gtk[4], gtk)  # combo box with an entry
    assert not takes_text(gtk[2], gtk) and not takes_text(gtk[5], gtk)


def test_typing_into_static_text_is_refused_and_names_the_nearest_field() -> None:
    with pytest.raises(DeskpilotError) as err:
        check_text_target(CHROMIUM, 15, "type_text")
    exc = err.value
    assert exc.code is ErrorCode.UNSUPPORTED_ACTION
    assert exc.details["reason"] == "not_editable"
    assert exc.details["elementId"] == 15 and exc.details["role"] == "text"
    # a field of the page, not the browser's address bar (which comes first in the tree)
    assert exc.details["suggestedElementId"] == 12
    assert "Element 15 (text) cannot take typed text" in exc.message
    assert "is 12 (comboBox): type_text with element_id=12" in exc.message
    assert "press_key" in exc.message
    # ids and roles only: a diagnostic carries no UI text
    assert "Static" not in exc.message and "Pick" not in exc.message


def test_read_only_fields_and_selects_are_refused_editable_ones_pass() -> None:
    for refused in (10, 13, 5, 3):
        with pytest.raises(DeskpilotError):
            check_text_target(CHROMIUM, refused, "paste")
    for fine in (4, 6, 7, 9, 11, 12):
        check_text_target(CHROMIUM, fine, "type_text")
    with pytest.raises(DeskpilotError) as err:
        check_text_target(CHROMIUM, 10, "paste")
    assert "read only" in err.value.message and "paste with element_id=" in err.value.message


def test_set_value_on_a_read_only_field_is_refused_other_targets_are_left_alone() -> None:
    """Qt's EditableText overwrote a read-only QLineEdit: the plan refuses it first."""
    with pytest.raises(DeskpilotError) as err:
        check_value_target(CHROMIUM, 10)
    exc = err.value
    assert exc.code is ErrorCode.UNSUPPORTED_ACTION
    assert (exc.details["reason"], exc.details["elementId"]) == ("read_only", 10)
    assert "read only" in exc.message and "fixed" not in exc.message  # no UI text
    with pytest.raises(DeskpilotError):
        check_value_target(CALCULATOR, 2)
    # editable fields, spin buttons, combo boxes and unknown ids are the host's to decide
    for fine in (4, 9, 11, 12, 13, 99):
        check_value_target(CHROMIUM, fine)
    check_value_target(CALCULATOR, 3)


def test_without_an_element_the_focused_one_must_take_text() -> None:
    with pytest.raises(DeskpilotError) as err:
        check_text_target(CHROMIUM, None, "type_text")  # the focused document is not editable
    assert err.value.details["elementId"] == 5
    assert err.value.message.startswith("The focused element 5 (document) ")
    check_text_target(CALCULATOR, None, "type_text")  # GTK 4's focused entry takes it
    check_text_target(GTK3_COMBO, None, "type_text")  # nothing focused: not refused


def test_the_focused_field_is_suggested_first_and_none_is_said() -> None:
    nodes = parse_tree(CALCULATOR).elements
    suggestion = nearest_text_target(nodes, nodes[4])
    assert suggestion is not None and suggestion.id == 3  # focused, not the read-only one
    with pytest.raises(DeskpilotError) as err:
        check_text_target('- window "W" [1]\n  - button "OK" [focused] [2]', 2, "type_text")
    assert err.value.details["suggestedElementId"] is None
    assert "No element in this state takes text." in err.value.message


def test_no_name_is_echoed_and_an_unknown_id_is_left_to_the_plan() -> None:
    tree = '- window "W" [1]\n  - label "' + "x" * 300 + '" [2]\n  - textField [3]'
    with pytest.raises(DeskpilotError) as err:
        check_text_target(tree, 2, "type_text")
    assert "xx" not in err.value.message and "Element 2 (label)" in err.value.message
    check_text_target(tree, 99, "type_text")  # not an element: the plan refuses it


def _result(item_click: str | None, method: str) -> ActionResult:
    return ActionResult.model_validate(
        {"id": 1, "dispatched": True, "method": method, "kind": "click", "itemClick": item_click}
    )


def _notes(what: str, element_id: int, before: str, after: str) -> tuple[str, str, str]:
    """A semantic item click's note when the new state changed, did not, and is missing."""
    click = ItemClick.of(_result(what, "semantic"), element_id)
    assert click is not None
    return click.note(before, after), click.note(before, before), click.note(before, None)


def test_the_item_click_note_checks_the_new_state() -> None:
    before = '- dialog "D" [1]\n  - table [2]\n    - cell "a" [3]\n    - cell "b" [4]'
    changed, same, missing = _notes(
        "select", 4, before, before.replace('cell "b" [4]', 'cell "b" [selected] [4]')
    )
    assert "selected the item through accessibility" in changed
    assert changed.endswith("The new state shows it [selected].")
    assert "does not show it [selected]" in same and "could not be checked" in missing
    pointer = ItemClick.of(_result("select", "synthetic"), 4)
    assert pointer is not None and "real single click" in pointer.note(before, before)
    # the row of a cell counts (Chromium grids select rows)
    grid = '- table "G" [1]\n  - row "Ada 36" [selected] [2]\n    - cell "Ada" [3]'
    assert ItemClick("select", True, 3).note(grid, grid).endswith("shows it [selected].")
    activated = ItemClick.of(_result("activate", "semantic"), 4)
    assert activated is not None and "activated the item" in activated.note(before, None)
    assert ItemClick.of(_result(None, "semantic"), 4) is None
    # a check box cell: the note says what the box shows now
    boxes = '- dialog "D" [1]\n  - table [2]\n    - cell [unchecked] [3]\n    - cell "a" [4]'
    changed, same, missing = _notes("toggle", 3, boxes, boxes.replace("[unchecked]", "[checked]"))
    assert "flipped the check box" in changed
    assert changed.endswith("The new state shows it [checked].")
    assert "still shows it [unchecked]: the app did not take the toggle" in same
    assert "could not be checked" in missing


def test_a_disabled_field_is_never_the_field_suggested() -> None:
    """Qt: a refusal on a read-only field pointed at a disabled one, itself refused next."""
    tree = """\
- window "Ledger" [1]
  - textField "Payee" = "" [2]
  - textField "Memo" = "locked" [disabled] [3]
  - textField "Account" = "ACC-1" [readonly] [4]"""
    with pytest.raises(DeskpilotError) as err:
        check_text_target(tree, 4, "type_text")
    assert err.value.details["suggestedElementId"] == 2  # not 3, the nearest
    nodes = parse_tree(tree).elements
    assert not takes_text(nodes[3], nodes)
