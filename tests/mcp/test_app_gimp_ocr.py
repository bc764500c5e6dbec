"""GIMP 2.10 without its GTK 2 accessibility bridge, through the official TypeScript SDK: no
tree, so the kernel reads the window by OCR (kernel/visual_tree.py), and an open menu is a
``- popup`` section of its own, not mixed into the lines of the dock beside it
(``popupRegions``: the mapped override-redirect windows over the window).

GIMP has no accessible name then: ``app: "gimp"`` finds it by its executable, ``gimp-2.10``
(protocol/app_names.py). Act: Image → Transform → Flip Horizontally on the OCR'd words, by
element ids; the title (read from X, not by OCR) gets GIMP's "*" for a modified image. GIMP
starts once for the module.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from real_clients import TS_CALLS, run_ts_script, stdio_config

from deskpilot.desktop.apps import App
from deskpilot.vision import ocr_ready
from gimp_kit import launch_gimp, picture

pytestmark = pytest.mark.desktop


@pytest.fixture(scope="module")
def gimp(dp_desktop: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    if not ocr_ready():
        pytest.skip("no OCR engine (tesserocr, tesseract-ocr-eng)")
    app = launch_gimp(picture(tmp_path_factory.mktemp("gimp-ocr")), bridge=False)
    try:
        yield app
    finally:
        app.stop()


def _ok(result: dict[str, Any]) -> str:
    assert not result["isError"], (result.get("text"), result.get("diagnostic"))
    text: str = result["text"]
    return text


def _click(label: str) -> dict[str, Any]:
    return {
        "name": "click",
        "arguments": {"state_id": "$state", "element_id": f"$element:{label}"},
    }


def _parts(text: str) -> tuple[str, list[str]]:
    """A state's window outline and its popup sections, bottom to top."""
    tree = text[text.index("\n- window ") :]
    window, *popups = re.split(r"\n(?=- popup \[\d+\]\n)", tree)
    return window, popups


async def test_an_open_gimp_menu_is_read_apart_from_the_window_and_chosen_by_id(
    gimp: App,
) -> None:
    calls = [
        {"name": "get_app_state", "arguments": {"app": "gimp"}},
        _click('word "Image"'),
        _click('text "Transform"'),
        _click('word "Horizontally"'),
    ]
    report = await run_ts_script(TS_CALLS, stdio_config(), json.dumps(calls))
    first, image, transform, flipped = report["results"]
    text = _ok(first)
    assert f"pid={gimp.pid})" in text, text  # found by its executable, gimp-2.10
    assert re.search(r"^tree=visual \(", text, re.M), text
    assert _parts(text)[1] == [], text  # no menu open
    # the Image menu: a section of its own, its items in it and not in the window's lines
    window, popups = _parts(_ok(image))
    assert len(popups) == 1, image["text"]
    for item in ("Duplicate", "Transform", "Canvas Size", "Flatten Image"):
        assert item in popups[0], popups[0]
        assert item not in window, window
    # its Transform submenu: a second section, over the first
    window, popups = _parts(_ok(transform))
    assert len(popups) == 2, transform["text"]
    assert "Horizontally" in popups[1] and "Horizontally" not in popups[0] + window
    # chosen: the menus closed and the image is modified
    after = _ok(flipped)
    assert _parts(after)[1] == [], after
    assert re.search(r'^Window=\(title="\*\[pic\]', after, re.M), after
