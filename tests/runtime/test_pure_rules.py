"""App resolution, coordinates, element remapping and the reuse conditions."""

from __future__ import annotations

import pytest

from deskpilot.protocol.app_names import executable_names
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.wire import (
    AppIdentity,
    ImageDescriptor,
    ObservationBody,
    Rect,
    Truncation,
    WindowInfo,
)
from deskpilot.runtime.apps import resolve_app
from deskpilot.runtime.coords import to_window_point
from deskpilot.runtime.state_reuse import reuse_refusals
from deskpilot.runtime.targets import resolve_in
from deskpilot.runtime.tree import element_ids, in_popup, remap


def _win(wid: str, pid: int, title: str = "t", **app: str) -> WindowInfo:
    return WindowInfo(
        window_id=wid,
        title=title,
        bounds=Rect(x=0, y=0, width=100, height=50),
        app=AppIdentity(pid=pid, **app),
    )


WINDOWS = [
    _win(
        "0x1",
        10,
        name="Calculator",
        executable="gnome-calculator",
        wm_class="gnome-calculator.Gnome-calculator",
        desktop_id="org.gnome.Calculator.desktop",
    ),
    _win("0x2", 20, name="Mousepad", executable="mousepad", desktop_id="org.xfce.mousepad"),
    _win("0x3", 30, name="Mousepad", executable="mousepad"),
    _win("0x4", 10, name="Calculator", executable="gnome-calculator"),
]


@pytest.mark.parametrize(
    "query",
    [
        "calculator",
        "GNOME-CALCULATOR",
        "org.gnome.calculator",
        "org.gnome.Calculator.desktop",
        "gnome-calculator.gnome-calculator",
        10,
        "10",
        "pid:10",
    ],
)
def test_resolve_by_any_identity(query: str | int) -> None:
    entry = resolve_app(query, WINDOWS)
    assert entry.pid == 10 and len(entry.windows) == 2


def test_ambiguous_and_missing_list_candidates() -> None:
    with pytest.raises(DeskpilotError) as exc:
        resolve_app("mousepad", WINDOWS)
    assert exc.value.code is ErrorCode.TARGET_AMBIGUOUS
    assert sorted(c["pid"] for c in exc.value.details["candidates"]) == [20, 30]
    with pytest.raises(DeskpilotError) as exc:
        resolve_app("gimp", WINDOWS)
    assert exc.value.code is ErrorCode.TARGET_NOT_FOUND
    assert {c["pid"] for c in exc.value.details["candidates"]} == {10, 20, 30}


VERSIONED = [
    _win("0x5", 50, executable="gimp-2.10", wm_class="gimp.Gimp"),
    _win("0x6", 60, name="soffice", executable="soffice.bin"),
    _win("0x7", 70, executable="python3.11"),
    _win("0x8", 80, executable="python3.13"),
    _win("0x9", 90, executable="firefox-esr"),
]


@pytest.mark.parametrize(
    ("query", "pid"),
    [
        ("gimp", 50),
        ("GIMP-2.10", 50),
        ("gimp-2", 50),
        ("soffice", 60),
        ("soffice.bin", 60),
        ("firefox", 90),
        ("python3.11", 70),
    ],
)
def test_an_app_is_found_by_its_executable_without_a_version_suffix(query: str, pid: int) -> None:
    """Debian's GIMP runs as gimp-2.10, LibreOffice as soffice.bin, Firefox as firefox-esr:
    the name a person uses finds them (protocol/app_names.py)."""
    assert resolve_app(query, VERSIONED).pid == pid


def test_a_name_without_its_suffix_that_two_processes_share_is_refused() -> None:
    with pytest.raises(DeskpilotError) as exc:
        resolve_app("python3", VERSIONED)
    assert exc.value.code is ErrorCode.TARGET_AMBIGUOUS
    assert sorted(c["pid"] for c in exc.value.details["candidates"]) == [70, 80]
    with pytest.raises(DeskpilotError) as exc:
        resolve_app("python", VERSIONED)
    assert exc.value.code is ErrorCode.TARGET_AMBIGUOUS


@pytest.mark.parametrize(
    ("executable", "names"),
    [
        ("gimp-2.10", {"gimp-2.10", "gimp-2", "gimp"}),
        ("python3.11", {"python3.11", "python3", "python"}),
        ("soffice.bin", {"soffice.bin", "soffice"}),
        ("google-chrome-stable", {"google-chrome-stable", "google-chrome"}),
        # digits glued on without a dot are part of the name; x86_64 is no version
        ("x264", {"x264"}),
        ("python3", {"python3"}),
        ("qemu-system-x86_64", {"qemu-system-x86_64"}),
        ("", set()),
    ],
)
def test_the_names_an_executable_answers_to(executable: str, names: set[str]) -> None:
    assert executable_names(executable) == names


def test_coordinates_use_the_image_the_model_saw_and_clamp() -> None:
    p = to_window_point(400, 150, (800, 600))  # a 1600x1200 capture shown at 800x600
    assert (p.x, p.y) == (0.5, 0.25)
    q = to_window_point(900, 700, (800, 600))
    assert (q.x, q.y) == (1.0, 1.0)
    with pytest.raises(DeskpilotError):
        to_window_point(1, 1, None)


OLD = """- window "Calc" [1]
  - button "1" [2]
  - button "2" [3]
  - text "display" = "12" [4]"""
NEW = """- window "Calc" [1]
  - label "Memory" [2]
  - button "1" [3]
  - button "2" [4]
  - text "display" = "123" [5]"""


#: NEW as the host shows it: every element keeps its id, the new label gets a new one
KEPT = """- window "Calc" [1]
  - label "Memory" [5]
  - button "1" [2]
  - button "2" [3]
  - text "display" = "123" [4]"""


def test_an_id_names_the_same_element_in_a_newer_state_or_none() -> None:
    """The host keeps ids (host/atspi/element_ids.py): an id is followed as it is, never to
    another element with the same role and name."""
    assert element_ids(KEPT) == [1, 5, 2, 3, 4]
    assert remap(OLD, KEPT, 2) == 2
    assert remap(OLD, KEPT, 4) == 4  # value changes do not matter
    gone = KEPT.replace('  - button "1" [2]\n', "")
    assert remap(OLD, gone, 2) is None
    # an element of the same role and name under another id is another element
    moved = gone + '\n  - button "1" [6]'
    assert remap(OLD, moved, 2) is None
    # the id now on an element of another role: not the element the agent meant
    assert remap(OLD, KEPT.replace('button "1" [2]', 'label "1" [2]'), 2) is None


def test_an_ocr_outline_is_followed_by_signature() -> None:
    """OCR outlines have no objects to keep ids by: ids are line numbers there."""
    assert remap(OLD, NEW, 2, line_ids=True) == 3
    assert remap(OLD, NEW, 4, line_ids=True) == 5  # value changes do not matter
    assert remap(OLD, OLD, 3, line_ids=True) == 3
    dup = NEW + '\n  - button "1" [6]'
    assert remap(OLD, dup, 2, line_ids=True) is None  # no longer unique: refuse, don't guess


def test_an_item_of_a_popup_is_never_remapped() -> None:
    """One row's context menu closed and the next row's opened: its "Delete" has the same
    signature, but deletes the other file."""
    menu = '\n- popup [5]\n  - menu [6]\n    - menuItem "Delete" [7]'
    old = OLD + menu
    new = KEPT + '\n- popup [8]\n  - menu [9]\n    - menuItem "Delete" [7]'
    assert in_popup(old, 7) and in_popup(old, 5) and not in_popup(old, 4)
    assert remap(old, old, 7) is None and remap(old, new, 7) is None
    assert remap(old, new, 2) == 2  # the window's own elements still follow
    assert remap(old, old, 7, line_ids=True) is None


def _obs(**over: object) -> ObservationBody:
    base: dict[str, object] = dict(
        frame_id="f",
        tree_version="v",
        app=AppIdentity(pid=10, name="Calc"),
        window=_win("0x1", 10, title="Calc"),
        tree=OLD,
        element_count=4,
        image=ImageDescriptor(width=100, height=50, byte_length=10),
    )
    base.update(over)
    return ObservationBody.model_validate(base)


def test_reuse_conditions() -> None:
    prev = AppIdentity(pid=10, name="Calc")
    assert reuse_refusals(prev, _obs(), b"png") == []
    assert reuse_refusals(prev, _obs(), None) == ["no_screenshot"]
    assert "app_identity_changed" in reuse_refusals(AppIdentity(pid=11), _obs(), b"png")
    assert "element_ids_invalid" in reuse_refusals(prev, _obs(element_count=9), b"png")
    dup = OLD.replace("[3]", "[2]")
    assert "element_ids_invalid" in reuse_refusals(prev, _obs(tree=dup), b"png")
    assert "truncated" in reuse_refusals(
        prev, _obs(truncation=Truncation(omitted_elements=3)), b"png"
    )
    assert "partial_elided" in reuse_refusals(
        prev, _obs(truncation=Truncation(elided_children=3)), b"png"
    )
    assert "no_window_root" in reuse_refusals(
        prev, _obs(tree='- menu "File" [1]', element_count=1), b"png"
    )
    assert "incomplete_window_header" in reuse_refusals(prev, _obs(window=_win("", 10)), b"png")
    assert reuse_refusals(prev, None, None) == ["no_observation"]


def test_only_a_modal_dialog_over_the_window_stops_reuse() -> None:
    """Another window of the app having the focus was called ``popup_or_menu_open``, where no
    popup existed; what stops a state of a window from being acted on again is a modal dialog
    of it (listed with the state), which takes its input."""
    prev = AppIdentity(pid=10, name="Calc")
    other = _win("0x9", 10)
    assert reuse_refusals(prev, _obs(foreground_window=other), b"png", [other]) == []
    finder = _win("0x9", 10).model_copy(update={"transient_for": "0x1"})
    assert reuse_refusals(prev, _obs(), b"png", [finder, _win("0x1", 10)]) == []
    modal = finder.model_copy(update={"modal": True})
    assert reuse_refusals(prev, _obs(), b"png", [modal, _win("0x1", 10)]) == ["modal_dialog_open"]
    hidden = modal.model_copy(update={"visible": False})
    assert reuse_refusals(prev, _obs(), b"png", [hidden, _win("0x1", 10)]) == []
    of_another = modal.model_copy(update={"transient_for": "0x7"})
    assert reuse_refusals(prev, _obs(), b"png", [of_another, _win("0x1", 10)]) == []


def test_reuse_needs_a_loaded_page_in_a_browser() -> None:
    prev = AppIdentity(pid=10, name="Calc")
    retitled = _obs(tree=OLD.replace('window "Calc"', 'window "Other page"'))
    assert reuse_refusals(prev, retitled, b"png") == []  # AT-SPI's title may lag X's
    browser = AppIdentity(pid=10, name="Chromium", executable="chromium")
    bare = '- window "Calc" [1]\n  - button "New Tab" [2]'
    tab = _obs(app=browser, tree=bare, element_count=2)
    assert "page_not_loaded" in reuse_refusals(browser, tab, b"png")
    page = bare + '\n  - document "Calc" [3]'
    assert reuse_refusals(browser, _obs(app=browser, tree=page, element_count=3), b"png") == []


def test_a_tree_that_could_not_be_read_is_not_reusable() -> None:
    prev = AppIdentity(pid=10, name="Calc")
    missing = _obs(truncation=Truncation(tree_unavailable=True))
    assert "tree_unavailable" in reuse_refusals(prev, missing, b"png")


def test_an_app_with_another_process_dialog_over_it_is_that_dialog() -> None:
    """GIMP's export plug-in is a process of its own: its "Export Image as PNG" dialog,
    transient for GIMP's Export dialog, is what a person looking at GIMP answers next (a trial
    agent asked for "gimp" got the covered dialog, every element disabled)."""
    image = _win("0x10", 30, "photo.png - GIMP", executable="gimp-2.10")
    export = _win("0x11", 30, "Export Image", executable="gimp-2.10")
    export = export.model_copy(update={"transient_for": "0x10"})
    png = _win("0x20", 31, "Export Image as PNG", executable="file-png")
    png = png.model_copy(update={"transient_for": "0x11"})
    listing = [png, export, image]
    entry, window = resolve_in(listing, "gimp")
    assert window.window_id == "0x20" and entry.pid == 31
    # named by its own window id, a window is that window
    assert resolve_in(listing, "0x11")[1].window_id == "0x11"
    # without the plug-in's dialog, GIMP's own dialog
    assert resolve_in([export, image], "gimp")[1].window_id == "0x11"


def test_in_a_tree_with_screen_text_host_ids_stay_and_items_go_by_their_text() -> None:
    """Thunar's icon view: the kernel lists the file names it read off the screenshot as
    ``[ocr]`` items (ids from SCREEN_TEXT_IDS on, kept per text while the kernel lists the
    window: kernel/opaque_text.py); an id quoted from an older state goes by its text, here
    to another id, and the host's ids are kept."""
    old = (
        '- window "files" [1]\n'
        '  - group "Icon view" [3]\n'
        '    - text "alpha.txt" [ocr] [1000000]\n'
        '    - text "beta.txt" [ocr] [1000001]\n'
        '  - statusBar "2 files" [4]'
    )
    new = (
        '- window "files" [1]\n'
        '  - label "Moved" [7]\n'
        '  - group "Icon view" [3]\n'
        '    - text "beta.txt" [ocr] [1000000]\n'
        '  - statusBar "Beta" [4]'
    )
    # an item goes by its text (alpha.txt is gone; beta.txt moved up a place)
    assert remap(old, new, 1000001, line_ids=True) == 1000000
    assert remap(old, new, 1000000, line_ids=True) is None
    # a host element keeps its id, whatever its name says now
    assert remap(old, new, 4, line_ids=True) == 4
