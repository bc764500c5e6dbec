"""The text a widget draws but does not expose, listed under its element (kernel/opaque_text.py):
Thunar's icon view, whose accessible has no children, on a real image (Pillow, DejaVu) read by
Debian's tesseract.

* the widget's names are read, a selected one's white name on its highlight too (marked
  ``[highlighted]``: vision/highlights.py), in reading order;
* they are listed under the element the host named, with ids after the host's and ``[ocr]``,
  the other elements untouched;
* an action on one of them goes to the host as a click at its text's centre with the host's
  version, an action on a host element as it is; the policy rates an ``[ocr]`` element as an
  unknown target, as any OCR'd text.
"""

from __future__ import annotations

import io

import pytest
from PIL import Image, ImageDraw, ImageFont

from deskpilot.kernel import opaque_text
from deskpilot.kernel.policy.context import policy_context_for
from deskpilot.kernel.visual_tree import for_host, outlined
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.session import TargetKind
from deskpilot.protocol.tree import parse_tree
from deskpilot.protocol.wire import (
    ClickAction,
    ExecuteAction,
    ImageDescriptor,
    InvokeElementAction,
    OpaqueArea,
    Point,
    Rect,
)
from deskpilot.vision import ocr_ready
from deskpilot.vision.evidence import OcrWord
from deskpilot.vision.incremental import window_reader

from .backends import screen

DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"  # Debian's fonts-dejavu-core
TREE = """- window "files - Thunar" [1]
  - button "Open Parent" [2]
  - group "Icon view" [3]
  - statusBar "3 files" [4]"""
#: the icon view, in window coordinates (800 x 600 window, image at its own size)
VIEW = Rect(x=200, y=100, width=560, height=300)
BLUE = (53, 132, 228)


def _frame() -> bytes:
    """Three labels in a row, as an icon view draws them; the first selected: white on a
    blue highlight with rounded corners."""
    font = ImageFont.truetype(DEJAVU, 15)
    img = Image.new("RGB", (800, 600), (246, 245, 244))
    draw = ImageDraw.Draw(img)
    draw.rectangle((VIEW.x, VIEW.y, VIEW.x + VIEW.width, VIEW.y + VIEW.height), fill="white")
    for i, name in enumerate(("alpha.txt", "beta.txt", "gamma.txt")):
        x = VIEW.x + 20 + 130 * i
        if i == 0:
            draw.rounded_rectangle((x - 8, VIEW.y + 12, x + 100, VIEW.y + 112), 6, fill=BLUE)
        draw.rectangle((x + 30, VIEW.y + 24, x + 62, VIEW.y + 72), outline=(120, 120, 120))
        ink = "white" if i == 0 else (40, 40, 40)
        draw.text((x, VIEW.y + 84), name, font=font, fill=ink)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _state() -> ObservedState:
    obs = screen(TREE, app="thunar", title="files - Thunar").model_copy(
        update={
            "frame_id": "f1",
            "tree_version": "0123456789abcdef0123",
            "image": ImageDescriptor(width=800, height=600, byte_length=1),
            "opaque_regions": [OpaqueArea(element_id=3, rect=VIEW)],
        }
    )
    return ObservedState(obs, _frame())


@pytest.fixture(autouse=True)
def _fresh_reader() -> None:
    if not ocr_ready():
        pytest.skip("no OCR engine (tesserocr, tesseract-ocr-eng)")
    window_reader().forget()
    opaque_text.forget()  # the items kept, and their ids: each test lists afresh


def _request(action: object, state: ObservedState) -> ExecuteAction:
    return ExecuteAction.model_validate(
        {
            "id": 0,
            "frame_id": state.observation.frame_id,
            "tree_version": state.observation.tree_version,
            "action": action,
        }
    )


async def test_a_widgets_names_are_listed_under_its_element() -> None:
    state = await outlined(_state())
    lines = state.observation.tree.splitlines()
    assert lines == [
        '- window "files - Thunar" [1]',
        '  - button "Open Parent" [2]',
        '  - group "Icon view" [3]',
        '    - text "alpha.txt" [highlighted] [ocr] [1000000]',
        '    - text "beta.txt" [ocr] [1000001]',
        '    - text "gamma.txt" [ocr] [1000002]',
        '  - statusBar "3 files" [4]',
    ]
    assert state.observation.element_count == 7
    assert state.observation.tree_version.startswith("visual-")
    assert state.observation.tree_read.source == "accessibility"
    assert state.visual is not None and state.visual.mixed
    assert state.visual.host_tree_version == "0123456789abcdef0123"
    # ids from SCREEN_TEXT_IDS on: never a host element's, now or later
    assert sorted(state.visual.bounds) == [1000000, 1000001, 1000002]


async def test_a_part_under_another_window_is_said_not_taken_for_empty() -> None:
    """A window over the right half of the icon view: the names it hides are not read, and
    the part is listed as covered (a trial took an icon view under another window for an
    empty folder)."""
    over = Rect(x=VIEW.x + 250, y=VIEW.y, width=400, height=VIEW.height)
    base = _state()
    obs = base.observation.model_copy(update={"covered_regions": [over]})
    state = await outlined(ObservedState(obs, base.png))
    lines = state.observation.tree.splitlines()
    assert '    - text "alpha.txt" [highlighted] [ocr] [1000000]' in lines, lines
    assert not any("gamma.txt" in line for line in lines), lines
    covered = [line for line in lines if "[covered]" in line]
    assert covered == ["    - text [covered] [ocr] [1000002]"], lines
    assert state.visual is not None
    x, y, w, h = state.visual.bounds[1000002]
    assert (x, y, h) == (over.x, over.y, VIEW.height) and w == VIEW.x + VIEW.width - over.x


async def test_an_ocr_item_is_clicked_where_it_is_and_a_host_element_as_it_is() -> None:
    state = await outlined(_state())
    beta = for_host(state, _request(ClickAction(element_id=1000001), state))
    assert beta.tree_version == "0123456789abcdef0123"
    assert isinstance(beta.action, ClickAction) and beta.action.element_id is None
    point = beta.action.point
    assert isinstance(point, Point)
    assert (
        VIEW.x + 130 < point.x * 799 < VIEW.x + 260 and VIEW.y + 80 < point.y * 599 < VIEW.y + 110
    )
    ctrl = for_host(state, _request(ClickAction(element_id=1000002, modifiers=["ctrl"]), state))
    assert isinstance(ctrl.action, ClickAction) and ctrl.action.modifiers == ["ctrl"]
    host = for_host(state, _request(InvokeElementAction(element_id=2), state))
    assert host.action == InvokeElementAction(element_id=2)
    assert host.tree_version == "0123456789abcdef0123"


async def test_the_policy_rates_an_ocr_item_as_an_unknown_target() -> None:
    state = await outlined(_state())
    obs = state.observation
    assert parse_tree(obs.tree).elements[1000001].states >= {"ocr"}
    item = policy_context_for(ClickAction(element_id=1000001), obs)
    assert item.target_kind is TargetKind.UNKNOWN and "visual_tree" in item.signals
    button = policy_context_for(ClickAction(element_id=2), obs)
    assert button.target_kind is TargetKind.ELEMENT


def test_an_item_read_with_low_confidence_is_marked_uncertain() -> None:
    """An icon view's name with a word under the uncertain floor says so (a trial's
    "budget-2026.0ds"); its highlight and its [ocr] mark stay."""
    state = _state()
    sure, shaky = (
        OcrWord("alpha.txt", 220, 184, 70, 14, 93.0),
        OcrWord("budget-2026.0ds", 350, 184, 110, 14, 58.0),
    )
    items = [
        opaque_text._item([sure], 0, 0, True),
        opaque_text._item([shaky], 0, 0, False),
        opaque_text.Item("", (500, 100, 40, 40), covered=True),
    ]
    lines = opaque_text.listed(state, [(3, items)]).observation.tree.splitlines()
    assert lines[3:6] == [
        '    - text "alpha.txt" [highlighted] [ocr] [1000000]',
        '    - text "budget-2026.0ds" [uncertain] [ocr] [1000001]',
        "    - text [covered] [ocr] [1000002]",
    ], lines


def test_an_item_keeps_its_id_and_a_new_text_never_gets_an_old_one() -> None:
    """trial-6: a Thunar file listed at 1000006 was "f" one state later (ids were places in
    reading order), and an id carried over clicked another file."""
    state = _state()

    def ids(*texts: str) -> dict[str, int]:
        items = [opaque_text.Item(t, (10 * k, 0, 8, 8)) for k, t in enumerate(texts)]
        lines = opaque_text.listed(state, [(3, items)], "9:0x1").observation.tree.splitlines()
        ocr = [ln for ln in lines if "[ocr]" in ln]
        return {ln.split('"')[1]: int(ln.rsplit("[", 1)[1].rstrip("]")) for ln in ocr}

    first = ids("alpha.txt", "beta.txt", "notes.txt")
    assert first == {"alpha.txt": 1000000, "beta.txt": 1000001, "notes.txt": 1000002}
    # beta.txt read as two pieces, a new file before the others: the rest keep their ids
    second = ids("new.txt", "alpha.txt", "beta.tx", "t", "notes.txt")
    assert second["alpha.txt"] == 1000000 and second["notes.txt"] == 1000002
    assert {second["new.txt"], second["beta.tx"], second["t"]} == {1000003, 1000004, 1000005}
    # beta.txt read whole again: its old id is not given back to anything else meanwhile
    third = ids("alpha.txt", "beta.txt")
    assert third == {"alpha.txt": 1000000, "beta.txt": 1000006}
    # another window's book is its own
    other = opaque_text.listed(state, [(3, [opaque_text.Item("zeta", (0, 0, 8, 8))])], "9:0x2")
    assert [ln for ln in other.observation.tree.splitlines() if "[ocr]" in ln] == [
        '    - text "zeta" [ocr] [1000000]'
    ]
