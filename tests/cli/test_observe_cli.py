"""``deskpilot observe`` on a window with no accessibility tree: an xterm is printed as the
visual tree an agent sees (kernel/visual_tree.py), not as an empty, tree-less window.

Real parts: the private desktop's Xvfb, the host process the command starts, xterm with a
known output, Debian's tesseract.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from deskpilot.cli.main import app as cli_app
from deskpilot.desktop.apps import App, launch
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


def test_an_app_name_two_processes_share_is_refused_with_both_pids(xterm: App) -> None:
    """As for an agent's ``app`` (runtime/apps.py): the command does not pick one of two."""
    second = launch_xterm("second xterm")
    try:
        deadline = time.monotonic() + 20.0
        while True:  # the second one's window maps a moment after it starts
            result = CliRunner().invoke(cli_app, ["observe", "--app", "xterm"])
            if result.exit_code != 0 or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert result.exit_code == 1, result.output
        assert "error: target_ambiguous:" in result.stderr
        for pid in (xterm.pid, second.pid):
            assert f"pid {pid}: " in result.stderr, result.stderr
        # asked for JSON, the refusal is JSON (on stdout), with the same candidates
        as_json = CliRunner().invoke(cli_app, ["observe", "--app", "xterm", "--json"])
        assert as_json.exit_code == 1, as_json.output
        error = json.loads(as_json.stdout)["error"]
        assert error["code"] == "target_ambiguous"
        assert {c["pid"] for c in error["candidates"]} >= {xterm.pid, second.pid}
        # the pid it lists is what --pid takes
        chosen = CliRunner().invoke(cli_app, ["observe", "--pid", str(second.pid)])
        assert chosen.exit_code == 0, chosen.output
        assert f"(pid {second.pid})" in chosen.stdout
    finally:
        second.stop()


def test_an_app_is_found_by_its_executable_without_a_version_suffix(
    desktop: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Debian's GIMP runs as gimp-2.10: ``--app gimp`` goes by the agent's rule
    (runtime/apps.py, protocol/app_names.py). An xterm copied to ``xterm-3.7`` stands in."""
    xterm = shutil.which("xterm")
    if xterm is None:
        pytest.skip("xterm is not installed")
    monkeypatch.setenv("DESKPILOT_HOST_LOCAL_TRUST", "1")
    versioned = tmp_path / "xterm-3.7"
    shutil.copy(xterm, versioned)
    app = launch([str(versioned), "-geometry", "40x5+0+0", "-e", "sleep", "600"])
    try:
        deadline = time.monotonic() + 20.0
        while True:  # its window maps a moment after it starts
            result = CliRunner().invoke(cli_app, ["observe", "--app", "xterm"])
            if result.exit_code == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert result.exit_code == 0, result.output
        assert f"(pid {app.pid})" in result.stdout, result.stdout
    finally:
        app.stop()
