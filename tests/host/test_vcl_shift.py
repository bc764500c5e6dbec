"""LibreOffice's VCL area may say it is where it was before its GTK menu bar took its place
(host/atspi/vcl_shift.py): a trial's clicks on Calc's cells landed 25 px high, on the column
header, and selected whole columns. The rules, on nodes built by hand."""

from __future__ import annotations

from deskpilot.host.atspi.collect import RawNode
from deskpilot.host.atspi.vcl_shift import shift_of, spread
from deskpilot.host.atspi.vocab import ROLE_NUMBER


def test_a_root_pane_above_its_parent_is_shifted_by_the_difference() -> None:
    # the trial's Calc: root pane (57, 50, 1165, 675), its parent panel at (57, 75)
    assert shift_of((57, 50, 1165, 675), (57, 75, 1165, 675)) == (0, 25)
    assert shift_of((40, 50, 100, 100), (57, 75, 100, 100)) == (17, 25)


def test_a_root_pane_where_its_parent_is_is_not_shifted() -> None:
    assert shift_of((57, 75, 1165, 675), (57, 75, 1165, 675)) is None
    # below or right of its parent's top-left is inside it: no shift either way
    assert shift_of((57, 90, 100, 100), (57, 75, 1165, 675)) is None
    # a parent with no area says nothing
    assert shift_of((57, 50, 100, 100), (57, 75, 0, 0)) is None


def _node(role: str, parent: int) -> RawNode:
    n = RawNode(":1.1", f"/n{parent}", role=ROLE_NUMBER[role], name="", desc="", states=0)
    n.parent = parent
    return n


def test_every_node_under_a_shifted_root_pane_takes_its_shift() -> None:
    nodes = [
        _node("frame", -1),  # 0
        _node("menu bar", 0),  # 1: GTK's own, placed right
        _node("panel", 0),  # 2
        _node("root pane", 2),  # 3
        _node("tool bar", 3),  # 4
        _node("push button", 4),  # 5
        _node("table", 3),  # 6
    ]
    out = spread(nodes, {3: (0, 25)})
    assert out == {3: (0, 25), 4: (0, 25), 5: (0, 25), 6: (0, 25)}
