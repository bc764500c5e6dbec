"""The pure parts of showing popups with their window: which app children are popups over
the window (host/popups.py) and how their trees are appended (atspi/popup_sections.py). The
real menus are tested through the TypeScript SDK in tests/mcp/test_mcp_popups.py."""

from __future__ import annotations

import dataclasses

from deskpilot.host.atspi.model import ElementRef, FrameInfo, NodeRef, TreeSnapshot
from deskpilot.host.atspi.popup_sections import with_popups
from deskpilot.host.atspi.snapshot import tree_version
from deskpilot.host.popups import popup_frames
from deskpilot.protocol.wire import Rect, Truncation

WINDOW = Rect(x=0, y=0, width=400, height=300)
MENU_AT = Rect(x=300, y=250, width=150, height=200)


def frame(path: str, rect: Rect | None, *, showing: bool = True) -> FrameInfo:
    return FrameInfo(
        ref=NodeRef(":1.5", path),
        pid=7,
        app_name="app",
        title="",
        role="window",
        atspi_role="window",
        extents=rect,
        states=frozenset({"showing", "visible"} if showing else {"visible"}),
    )


def test_a_popup_is_an_app_child_on_a_mapped_override_redirect_window_over_the_window() -> None:
    main = frame("/main", WINDOW)
    menu = frame("/menu", Rect(x=300, y=250, width=150, height=200))  # hangs past the edge
    helper = frame("/helper", Rect(x=99, y=25, width=1117, height=88))  # says showing: no X
    closed = frame("/closed", Rect(x=10, y=10, width=50, height=50), showing=False)
    far = frame("/far", Rect(x=900, y=700, width=50, height=50))  # over no part of the window
    x_popups = [
        Rect(x=301, y=251, width=150, height=199),  # within the slack of the menu
        Rect(x=10, y=10, width=50, height=50),
        Rect(x=900, y=700, width=50, height=50),
    ]
    got = popup_frames([main, menu, helper, closed, far], main, WINDOW, x_popups)
    assert [f.ref.path for f in got] == ["/menu"]
    assert popup_frames([main, menu], main, WINDOW, []) == []
    # the window's own frame is never its popup, even where an X popup matches it
    assert popup_frames([main], main, WINDOW, [WINDOW]) == []


def test_popups_are_ordered_as_stacked_topmost_last() -> None:
    main = frame("/main", WINDOW)
    menu = frame("/menu", Rect(x=50, y=50, width=100, height=100))
    sub = frame("/sub", Rect(x=150, y=60, width=100, height=80))
    x_popups = [sub.extents, menu.extents]  # topmost first, as x11/popups.py lists them
    got = popup_frames([main, sub, menu], main, WINDOW, [r for r in x_popups if r])
    assert [f.ref.path for f in got] == ["/menu", "/sub"]


def snapshot(lines: list[str], *, focused: int | None = None) -> TreeSnapshot:
    elements = {
        i: ElementRef(
            id=i,
            ref=NodeRef(":1.5", f"/n{i}-{len(lines)}"),
            pid=7,
            role="x",
            atspi_role=0,
            name="",
            states=frozenset(),
            interfaces=frozenset(),
            actions=(),
            extents=None,
            parent_id=i - 1 if i > 1 else None,
        )
        for i in range(1, len(lines) + 1)
    }
    text = "\n".join(lines)
    return TreeSnapshot(
        text=text,
        tree_version=tree_version(text, len(lines)),
        element_count=len(lines),
        elements=elements,
        truncation=Truncation(noise_dropped=1),
        sensitive_regions=[],
        url=None,
        focused_id=focused,
        node_count=len(lines) + 2,
    )


def test_a_popup_is_appended_with_its_ids_and_parents_moved_by_the_lines_before_it() -> None:
    main = snapshot(['- window "Notes" [1]', '  - label "Said [2]" [2]'], focused=2)
    menu = snapshot(["- window [1]", "  - menu [2]", '    - menuItem "Shout" [3]'], focused=3)
    merged = with_popups(main, [(menu, MENU_AT)])
    assert merged.text.splitlines() == [
        '- window "Notes" [1]',
        '  - label "Said [2]" [2]',  # a name that looks like an id is left alone
        "- popup [3]",
        "  - menu [4]",
        '    - menuItem "Shout" [5]',
    ]
    assert merged.element_count == 5 and sorted(merged.elements) == [1, 2, 3, 4, 5]
    shout = merged.elements[5]
    assert shout.id == 5 and shout.parent_id == 4 and shout.ref == menu.elements[3].ref
    assert merged.elements[3].parent_id is None  # the popup's root has no parent
    assert merged.elements[2] == main.elements[2] and merged.elements[2].popup_at is None
    # popup elements are acted on only while their popup is still open there
    # (host/action_checks.py check_popup_open, host/atspi/apps.py still_valid)
    assert all(merged.elements[i].popup_at == MENU_AT for i in (3, 4, 5))
    assert merged.focused_id == 5  # the keyboard is in the open menu
    assert merged.tree_version == tree_version(merged.text, 5) != main.tree_version
    assert merged.truncation.noise_dropped == 2 and merged.node_count == 9
    assert with_popups(main, []) is main


def test_a_popup_the_tree_shows_already_is_left_out() -> None:
    """A GTK 3 combo box's open list is both a popup window and the combo's child."""
    main = snapshot(['- dialog "Form" [1]', '  - comboBox "Color" [2]', "    - menu [3]"])
    combo_list = dataclasses.replace(
        snapshot(["- window [1]", "  - menu [2]"]),
        elements={
            1: snapshot(["- window [1]"]).elements[1],
            2: dataclasses.replace(main.elements[3], id=2, parent_id=1),
        },
    )
    assert with_popups(main, [(combo_list, MENU_AT)]) is main


def test_a_popup_that_shows_nothing_below_its_root_is_left_out() -> None:
    """A Qt combo box's or a Chromium <select>'s list window: the combo shows its options."""
    main = snapshot(['- window "Form" [1]', '  - comboBox "Fruit" [2]'])
    assert with_popups(main, [(snapshot(["- window [1]"]), MENU_AT)]) is main
