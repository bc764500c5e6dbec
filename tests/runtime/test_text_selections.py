"""What a ``select_text`` result tells the agent of the selection (runtime/text_selections.py)."""

from __future__ import annotations

from deskpilot.protocol.wire import ActionResult, SelectedText
from deskpilot.runtime.text_selections import selection_note


def _result(selected: SelectedText | None) -> ActionResult:
    return ActionResult(
        id="r1", dispatched=True, method="semantic", kind="select_text", selected=selected
    )


def test_the_selected_characters_are_quoted_and_a_different_range_said() -> None:
    said = selection_note(_result(SelectedText(start=4, end=9, text="quick")), 7, 4, 9)
    assert said == 'Selected characters 4-9 of element 7: "quick".'
    other = selection_note(_result(SelectedText(start=4, end=10, text="quick ")), 7, 4, 9)
    assert "asked for 4-9: the app selected this instead" in other


def test_no_selection_after_a_range_is_a_warning() -> None:
    said = selection_note(_result(None), 7, 4, 9)
    assert "reports no selected text" in said and "Check the state" in said


def test_an_empty_range_places_the_caret_and_is_no_warning() -> None:
    """trial-6 put the caret with start = end and was told the app "may not have taken the
    selection", though no selection was what it asked for."""
    said = selection_note(_result(None), 7, 24, 24)
    assert "may not have" not in said
    assert "as asked" in said and "caret at 24" in said
