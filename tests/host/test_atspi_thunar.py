"""Thunar 4.18 through the real host: what the host says of its views (its tree's rules on
synthetic trees: tests/host/test_atspi_cells.py; the agent's view through the TypeScript SDK:
tests/mcp/test_app_thunar.py).

* the icon view (an ``ExoIconView``) is a focusable panel with no children: the observation
  names it in ``opaqueRegions`` — the element it is shown under and where it is, in window
  coordinates — for the kernel to read its files from the screenshot;
* the detailed list is a GTK tree view: its rows are in the tree, nothing is opaque;
* a ctrl-click on a file's cell (a real pointer click with Control held) adds its row to the
  selection, where a plain click on a cell replaces it.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from host_harness import HostProcess, act, launch_accessible, line_id, observe_until, wait_for

from deskpilot.desktop import apps

pytestmark = pytest.mark.desktop

FILES = ("alpha.txt", "beta.txt", "gamma.txt")


@pytest.fixture(scope="module")
def thunar(desktop: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[apps.App]:
    if shutil.which("thunar") is None:
        pytest.skip("thunar is not installed")
    folder = tmp_path_factory.mktemp("thunar-host") / "files"
    folder.mkdir()
    for name in FILES:
        (folder / name).write_text(name)
    app = launch_accessible(["thunar", str(folder)])
    try:
        yield app
    finally:
        app.stop()


def _target(host: HostProcess, pid: int) -> dict[str, Any]:
    def window() -> str | None:
        listed = host.call({"type": "list_windows"})["windows"]
        return next((w["windowId"] for w in listed if w["app"].get("pid") == pid), None)

    return {"windowId": wait_for(window, timeout=30)}


def _keys(host: HostProcess, obs: dict[str, Any], *keys: str) -> None:
    done = act(host, obs, {"kind": "press_key", "keys": list(keys)}, "thunar")
    assert done["type"] == "action_result", done


def test_the_icon_view_is_named_as_a_widget_that_draws_its_files(
    host: HostProcess, thunar: apps.App
) -> None:
    target = _target(host, thunar.pid)
    # View → Icon View: Thunar keeps its last view in xfconf, shared by this user's desktops
    _keys(host, observe_until(host, target, r"statusBar", "thunar"), "ctrl+1")
    obs = observe_until(host, target, r'group "Icon view"', "thunar")
    (area,) = obs["opaqueRegions"]
    anchor = [ln for ln in obs["tree"].splitlines() if ln.endswith(f" [{area['elementId']}]")]
    assert anchor and ('group "Icon view"' in anchor[0] or "[focused]" in anchor[0]), anchor
    bounds = obs["window"]["bounds"]
    rect = area["rect"]
    assert rect["width"] > 200 and rect["height"] > 150, rect
    assert rect["x"] + rect["width"] <= bounds["width"] and rect["y"] > 0, rect
    for name in FILES:  # the host reads no pixels: the names are not in its tree
        assert name not in obs["tree"]


def test_the_detailed_list_has_its_rows_and_a_ctrl_click_adds_one(
    host: HostProcess, thunar: apps.App
) -> None:
    target = _target(host, thunar.pid)
    obs = observe_until(host, target, r'group "Icon view"', "thunar")
    _keys(host, obs, "ctrl+2")
    try:
        obs = observe_until(host, target, r'- cell "gamma\.txt"', "thunar")
        assert obs["opaqueRegions"] == []
        done = act(
            host,
            obs,
            {"kind": "click", "elementId": line_id(obs["tree"], r'cell "alpha\.txt"')},
            "thunar",
        )
        assert done["type"] == "action_result", done
        obs = observe_until(host, target, r'statusBar "\\"alpha\.txt\\"', "thunar")
        cell = line_id(obs["tree"], r'cell "gamma\.txt"')
        held = {"kind": "click", "elementId": cell, "modifiers": ["ctrl"]}
        done = act(host, obs, held, "thunar")
        assert done["type"] == "action_result" and done["method"] == "synthetic", done
        assert done["detail"] == "xtest ctrl+left x1", done
        observe_until(host, target, r'statusBar "Selection: 2 files', "thunar")
    finally:
        obs = observe_until(host, target, r"statusBar", "thunar")
        _keys(host, obs, "ctrl+1")
