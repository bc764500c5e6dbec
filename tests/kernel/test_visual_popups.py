"""A menu open over a window with no accessibility tree (GIMP 2.10 without its GTK 2 bridge):
its OCR outline keeps the menu apart from the window under it (kernel/visual_tree.py).

The host says where the popups over the window are (``popup_regions``: mapped
override-redirect windows); the window is read with them painted out, and each is read in
its own box and appended as a ``- popup`` section, as the host appends an app's popups to its
tree. Before, a menu's items and the window text beside them on the same rows were read as
one line ("Create Templa Made Hormal"). A real image (Pillow, DejaVu) and Debian's tesseract;
the observation is what the host sends for such a window."""

from __future__ import annotations

import io
import re

import pytest
from PIL import Image, ImageDraw, ImageFont

from deskpilot.kernel.visual_tree import centre, outlined
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.tree import parse_tree
from deskpilot.protocol.wire import ImageDescriptor, Rect
from deskpilot.vision import ocr_ready
from deskpilot.vision.incremental import window_reader

from .backends import screen

DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"  # Debian's fonts-dejavu-core

WINDOW_WORDS = ("Spacing", "Opacity", "Brushes")
MENU_ITEMS = ("Duplicate", "Transform", "Flatten")
#: the menu's box in window coordinates (800 x 600 window, image at its own size)
MENU = Rect(x=60, y=40, width=150, height=150)


def _frame() -> bytes:
    """The window's text in a column that runs under and beside the menu, on the menu's rows
    (the window's labels to its right are within a few line heights of its items: read as one
    row, they were one line), and the menu drawn over it as a toolkit draws one."""
    font = ImageFont.truetype(DEJAVU, 20)
    img = Image.new("RGB", (800, 600), (235, 235, 235))
    draw = ImageDraw.Draw(img)
    ink = (20, 20, 20)
    for i, word in enumerate(WINDOW_WORDS):
        draw.text((MENU.x + MENU.width + 12, 52 + 48 * i), word, font=font, fill=ink)
    draw.text((70, 300), "Canvas below", font=font, fill=ink)
    right, bottom = MENU.x + MENU.width - 1, MENU.y + MENU.height - 1
    draw.rectangle((MENU.x, MENU.y, right, bottom), fill=(250, 250, 250), outline=(120,) * 3)
    for i, item in enumerate(MENU_ITEMS):
        draw.text((MENU.x + 14, MENU.y + 12 + 48 * i), item, font=font, fill=ink)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _state(popups: list[Rect]) -> ObservedState:
    obs = screen("", app="gimp-2.10", title="GIMP").model_copy(
        update={
            "frame_id": "f1",
            "tree_version": "t-none",
            "element_count": 0,
            "image": ImageDescriptor(width=800, height=600, byte_length=1),
            "popup_regions": popups,
        }
    )
    return ObservedState(obs, _frame())


def _section(tree: str) -> tuple[str, str]:
    """The window's part and the popup section of an outline."""
    at = tree.index("\n- popup [")
    return tree[:at], tree[at:]


@pytest.fixture(autouse=True)
def _fresh_reader() -> None:
    if not ocr_ready():
        pytest.skip("no OCR engine (tesserocr, tesseract-ocr-eng)")
    window_reader().forget()


async def test_an_open_menu_is_its_own_section_apart_from_the_window_under_it() -> None:
    state = await outlined(_state([MENU]))
    tree = state.observation.tree
    assert state.observation.tree_read.source == "visual"
    window, popup = _section(tree)
    assert re.match(r"^\n- popup \[\d+\]\n", popup), popup
    for item in MENU_ITEMS:
        assert f'text "{item}"' in popup, tree
        assert item not in window, tree
    for word in (*WINDOW_WORDS, "Canvas below"):
        assert f'"{word}"' in window, tree
        assert word not in popup, tree
    # each item is clicked where it is drawn: the menu's box, not the window's origin
    parsed = parse_tree(tree)
    (flatten,) = [e for e in parsed.elements.values() if e.name == "Flatten"]
    assert state.visual is not None
    point = centre(state.visual, flatten.id)
    assert MENU.x < point.x * 799 < MENU.x + MENU.width, point
    assert MENU.y + 96 < point.y * 599 < MENU.y + MENU.height, point


async def test_without_the_popup_said_the_menu_is_read_as_the_windows_text() -> None:
    """What the popup region changes: the same pixels without it mix the menu's items into
    the window's lines (the failure the issue met on GIMP)."""
    tree = (await outlined(_state([]))).observation.tree
    assert "- popup [" not in tree
    mixed = [ln for ln in tree.splitlines() if "Duplicate" in ln and "Spacing" in ln]
    assert mixed, tree
