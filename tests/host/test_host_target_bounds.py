"""An action's result says where it aimed (``targetBounds``, screen pixels): the element's
extents, a 1×1 rectangle at a positional action's point, nothing for keys. The kernel's ledger
keeps it, and the dashboard's live view outlines it (docs/host.md, "Actions")."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from host_harness import HostProcess, act, element_id, launch_accessible, observe

from deskpilot.desktop import apps

pytestmark = pytest.mark.desktop


@pytest.fixture(scope="module")
def calculator(desktop: object) -> Iterator[apps.App]:
    app = launch_accessible(["gnome-calculator"])
    try:
        yield app
    finally:
        app.stop()


def test_an_element_action_reports_the_elements_extents(
    host: HostProcess, calculator: apps.App
) -> None:
    obs, _ = observe(host, {"pid": calculator.pid}, include_screenshot=False)
    seven = element_id(obs["tree"], "button", "7 7")
    eight = element_id(obs["tree"], "button", "8 8")
    result = act(host, obs, {"kind": "click", "elementId": seven})
    assert result["type"] == "action_result", result
    aimed = result["targetBounds"]
    window = obs["window"]["bounds"]
    assert (
        window["x"] <= aimed["x"] and aimed["x"] + aimed["width"] <= window["x"] + window["width"]
    )
    assert (
        window["y"] <= aimed["y"] and aimed["y"] + aimed["height"] <= window["y"] + window["height"]
    )
    assert 10 <= aimed["width"] <= 200 and 10 <= aimed["height"] <= 200
    # another button is somewhere else
    obs, _ = observe(host, {"pid": calculator.pid}, include_screenshot=False)
    other = act(host, obs, {"kind": "click", "elementId": eight})["targetBounds"]
    assert other["x"] > aimed["x"] and other["y"] == aimed["y"]


def test_a_positional_action_reports_its_point_and_keys_report_nothing(
    host: HostProcess, calculator: apps.App
) -> None:
    obs, _ = observe(host, {"pid": calculator.pid}, include_screenshot=False)
    window = obs["window"]["bounds"]
    result = act(host, obs, {"kind": "scroll", "point": {"x": 0.5, "y": 0.5}, "direction": "down"})
    assert result["type"] == "action_result", result
    x = window["x"] + round(0.5 * (window["width"] - 1))
    y = window["y"] + round(0.5 * (window["height"] - 1))
    assert result["targetBounds"] == {"x": x, "y": y, "width": 1, "height": 1}
    obs, _ = observe(host, {"pid": calculator.pid}, include_screenshot=False)
    keys = act(host, obs, {"kind": "press_key", "keys": ["Escape"]})
    assert keys["type"] == "action_result" and "targetBounds" not in keys
