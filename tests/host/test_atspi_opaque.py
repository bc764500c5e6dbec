"""A widget that draws what it does not expose is found (atspi/opaque.py): on a synthetic
tree shaped as Thunar 4.18 exports its icon view, an ``ExoIconView`` with no children
(tests/host/test_atspi_thunar.py reads the real one)."""

from __future__ import annotations

from test_atspi_render import VISIBLE, Tree

from deskpilot.host.atspi import opaque
from deskpilot.host.atspi.render import render
from deskpilot.host.atspi.vocab import State, bit

FOCUSABLE = bit(State.FOCUSABLE)


def _icon_view(*, focusable: bool = True, named: str = "") -> Tree:
    """Thunar's icon view: a named directory pane holding an ExoIconView, a panel with no
    children (its files are only pixels), and two scroll bars."""
    t = Tree()
    w = t.add(-1, "frame", "files - Thunar")
    pane = t.add(w, "directory pane", "Icon view")
    states = VISIBLE | (FOCUSABLE if focusable else 0)
    t.add(pane, "panel", named, states=states)
    t.add(pane, "scroll bar", states=bit(State.VISIBLE))
    return t


def test_a_focusable_childless_panel_is_a_widget_that_draws_its_content() -> None:
    t = _icon_view()
    out = render(t.nodes)
    assert out.text.splitlines() == ['- window "files - Thunar" [1]', '  - group "Icon view" [2]']
    found = opaque.candidates(t.nodes)
    assert found == [2]
    shown = {ni: eid for eid, (ni, _) in out.elements.items()}
    t.nodes[2].extents = (171, 102, 469, 352)
    (widget,) = opaque.placed(t.nodes, found, shown)
    assert (widget.node, widget.element_id) == (2, 2)  # shown under "Icon view"
    t.nodes[2].extents = (171, 102, 40, 20)  # too small to hold a list
    assert opaque.placed(t.nodes, found, shown) == []


def test_a_panel_that_takes_no_focus_or_has_a_name_is_not_one() -> None:
    assert opaque.candidates(_icon_view(focusable=False).nodes) == []
    assert opaque.candidates(_icon_view(named="Preview").nodes) == []


def test_a_drawing_surface_in_unnamed_boxes_is_left_alone() -> None:
    """GIMP's canvas has the icon view's shape, in unnamed boxes: a picture, not a list."""
    t = _icon_view()
    t.nodes[1].name = ""
    assert opaque.candidates(t.nodes) == []
