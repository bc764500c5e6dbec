"""Requests checked against a visual frame, as the host gets them (kernel/visual_tree.py):
the host's version, element actions as points at the centres of the elements' boxes, and
what needs an accessibility element refused. Observations as the host sends them
(tests/kernel/backends.py), with a visual tree as the kernel attaches it."""

from __future__ import annotations

import pytest

from deskpilot.kernel.visual_tree import for_host, wanted
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.observed import ObservedState, VisualTree
from deskpilot.protocol.wire import (
    ClickAction,
    ExecuteAction,
    InvokeElementAction,
    MouseButton,
    Point,
    PressKeyAction,
    ScrollAction,
    ScrollDirection,
    SecondaryAction,
    SelectTextAction,
    TreeRead,
    Truncation,
    TypeTextAction,
)

from .backends import screen

OUTLINE = '- window "sh" [1]\n  - block [2]\n    - text "bravo" [3]\n'
#: 801 x 601 pixels: a centre at (400, 300) is the point (0.5, 0.5) (host: x × (width − 1))
BOUNDS = {1: (0, 0, 801, 601), 2: (100, 200, 600, 20), 3: (390, 290, 20, 20)}


def visual_state() -> ObservedState:
    obs = screen(OUTLINE).model_copy(
        update={
            "frame_id": "f1",
            "tree_version": "visual-0123456789abcdef0123",
            "tree_read": TreeRead(source="visual"),
        }
    )
    return ObservedState(obs, b"png", None, VisualTree("t-none", BOUNDS, (801, 601)))


def request(action: object, *, frame: str = "f1", version: str | None = None) -> ExecuteAction:
    tree_version = version or visual_state().observation.tree_version
    return ExecuteAction.model_validate(
        {"id": 0, "frame_id": frame, "tree_version": tree_version, "action": action}
    )


def test_an_element_click_becomes_a_click_at_its_centre_with_the_hosts_version() -> None:
    out = for_host(visual_state(), request(ClickAction(element_id=3, count=2)))
    assert out.tree_version == "t-none"
    assert out.action == ClickAction(point=Point(x=0.5, y=0.5), count=2)
    right = for_host(visual_state(), request(ClickAction(element_id=2, button=MouseButton.RIGHT)))
    assert isinstance(right.action, ClickAction) and right.action.button is MouseButton.RIGHT
    assert right.action.point == Point(x=400 / 800, y=210 / 600)


def test_scroll_and_an_activating_invoke_aim_at_the_centre_too() -> None:
    scroll = for_host(
        visual_state(), request(ScrollAction(element_id=3, direction=ScrollDirection.DOWN))
    )
    assert scroll.action == ScrollAction(point=Point(x=0.5, y=0.5), direction=ScrollDirection.DOWN)
    for name in (None, "activate", "Click"):
        out = for_host(visual_state(), request(InvokeElementAction(element_id=3, action=name)))
        assert out.action == ClickAction(point=Point(x=0.5, y=0.5))


@pytest.mark.parametrize("name", ["focus", "Grab Focus", "select", "expand", "showMenu"])
def test_an_invoke_that_does_not_activate_is_refused_not_sent_as_a_click(name: str) -> None:
    """The policy rates these as not activating (NON_ACTIVATING_ACTIONS); the click that would
    stand in for them activates, so they are refused rather than rated low and clicked."""
    with pytest.raises(DeskpilotError) as info:
        for_host(visual_state(), request(InvokeElementAction(element_id=3, action=name)))
    assert info.value.code is ErrorCode.UNSUPPORTED_ACTION
    assert info.value.details == {"kind": "invoke_element", "treeSource": "visual"}


def test_text_goes_to_the_focused_window_and_keys_are_unchanged() -> None:
    typed = for_host(visual_state(), request(TypeTextAction(text="ls", element_id=3)))
    assert typed.action == TypeTextAction(text="ls")
    keys = for_host(visual_state(), request(PressKeyAction(keys=["Return"])))
    assert keys.action == PressKeyAction(keys=["Return"]) and keys.tree_version == "t-none"


@pytest.mark.parametrize(
    "action",
    [
        SecondaryAction(element_id=3),
        SelectTextAction(element_id=3, start=0, end=2),
        InvokeElementAction(element_id=3, action="expand or contract"),
    ],
)
def test_what_needs_an_accessibility_element_is_refused(action: object) -> None:
    with pytest.raises(DeskpilotError) as info:
        for_host(visual_state(), request(action))
    assert info.value.code is ErrorCode.UNSUPPORTED_ACTION


def test_an_unknown_element_is_stale() -> None:
    with pytest.raises(DeskpilotError) as info:
        for_host(visual_state(), request(ClickAction(element_id=9)))
    assert info.value.code is ErrorCode.STALE_TREE


def test_other_frames_and_accessibility_states_are_left_alone() -> None:
    click = ClickAction(element_id=3)
    other_frame = request(click, frame="f2")
    assert for_host(visual_state(), other_frame) is other_frame
    other_version = request(click, version="abc")
    assert for_host(visual_state(), other_version) is other_version
    plain = ObservedState(visual_state().observation, b"png")
    assert for_host(plain, request(click)) == request(click)
    assert for_host(None, request(click)) == request(click)


def test_only_a_complete_tree_less_read_with_a_screenshot_is_wanted() -> None:
    def state(tree: str = "", png: bytes | None = b"png", **update: object) -> ObservedState:
        obs = screen(tree).model_copy(update={"frame_id": "f1", "tree_version": "t", **update})
        return ObservedState(obs, png)

    assert wanted(state())
    assert wanted(state('- window "sh" [1]\n'))  # only its root
    assert not wanted(state(OUTLINE))  # a tree
    assert not wanted(state(png=None))  # nothing to read
    assert not wanted(state(truncation=Truncation(tree_unavailable=True)))
    assert not wanted(state(tree_read=TreeRead(partial="deadline")))
    assert not wanted(state(tree_read=TreeRead(stale_age_ms=900.0)))
    assert not wanted(visual_state())
