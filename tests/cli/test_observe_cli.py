"""``deskpilot observe`` on a window with no accessibility tree: an xterm is printed as the
visual tree an agent sees (kernel/visual_tree.py), not as an empty, tree-less window.

Real parts: the private desktop's Xvfb, the host process the command starts, xterm with a
known output, Debian's tesseract.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from deskpilot.cli.main import app as cli_app
from deskpilot.desktop.apps import App
from deskpilot.vision import ocr_ready
from xterm_kit import MARKER, WORDS, launch_xterm

pytestmark = pytest.mark.desktop


@pytest.fixture
def xterm(desktop: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[App]:
    if not ocr_ready():
        pytest.skip("no OCR engine (tesserocr, tesseract-ocr-eng)")
    monkeypatch.setenv("DESKPILOT_HOST_LOCAL_TRUST", "1")
    app = launch_xterm()
    try:
        yield app
    finally:
        app.stop()


def _compact(text: str) -> str:
    return "".join(text.split()).casefold()


def test_observe_prints_an_xterms_visual_tree(xterm: App) -> None:
    deadline = time.monotonic() + 20.0
    while True:  # xterm draws its output a moment after it maps
        result = CliRunner().invoke(cli_app, ["observe", "--pid", str(xterm.pid), "--json"])
        assert result.exit_code == 0, result.output
        obs = json.loads(result.stdout)
        if _compact(WORDS) in _compact(str(obs["tree"])) or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert obs["treeRead"]["source"] == "visual", obs["treeRead"]
    assert str(obs["treeVersion"]).startswith("visual-")
    assert _compact(MARKER) in _compact(str(obs["tree"]))
    assert obs["elementCount"] > 1
    # the plain text form shows the same tree
    text = CliRunner().invoke(cli_app, ["observe", "--app", "xterm"])
    assert text.exit_code == 0, text.output
    assert "treeVersion=visual-" in text.stdout
    assert 'text "alpha bravo charlie"' in text.stdout or WORDS in text.stdout
    # with the same header lines an agent reads of how the tree was read
    assert "\ntree=visual (no accessibility tree" in text.stdout, text.stdout
