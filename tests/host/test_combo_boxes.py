"""Choosing an option of a combo box through the real host: a click on an option of an open
``<select>`` popup chooses it and closes the popup (a click on the chosen option keeps it),
and ``set_value`` with an option's name chooses it without opening the popup (Chromium
``<select>``, GTK 3 ``GtkComboBox``).

Each test checks the app's own view: the page writes ``select.value``, whether the popup is
open (``:open``) and how many ``change`` events fired into its title; zenity prints what is
chosen when OK is pressed."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from host_harness import HostProcess, click, launch_accessible, line_id, observe_until

from deskpilot.desktop import apps

pytestmark = pytest.mark.desktop

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>init</title></head><body>
<select id="color" aria-label="Color" onchange="changes++">
<option>Red</option><option>Green</option><option>Blue</option></select>
<p>Static words here</p>
<script>
let changes = 0;
const s = document.getElementById('color');
function report() {
  document.title = 'v=' + s.value + ' open=' + s.matches(':open') + ' n=' + changes;
}
report();
setInterval(report, 20);
</script>
</body></html>
"""


@pytest.fixture(scope="module")
def chromium(desktop: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[apps.App]:
    page = tmp_path_factory.mktemp("combo") / "combo.html"
    page.write_text(PAGE)
    app = apps.launch_chromium(page.as_uri())
    try:
        apps.wait_accessible(pid=app.pid, timeout=60)
        yield app
    finally:
        app.stop()


def page(host: HostProcess, chromium: apps.App, session: str, state: str) -> dict[str, Any]:
    """The page once its title (value, popup state, change count) reads ``state``."""
    return observe_until(
        host, {"pid": chromium.pid}, rf'document "{re.escape(state)}"', session, timeout=45
    )


def set_value(host: HostProcess, obs: dict[str, Any], element: int, value: str) -> Any:
    response, _ = host.request(
        {
            "type": "execute_action",
            "sessionId": obs["sessionId"],
            "frameId": obs["frameId"],
            "treeVersion": obs["treeVersion"],
            "action": {"kind": "set_value", "elementId": element, "value": value},
            "observeAfter": True,
        }
    )
    return response


def open_popup(host: HostProcess, obs: dict[str, Any], session: str) -> dict[str, Any]:
    opened = click(host, obs, line_id(obs["tree"], r'comboBox "Color"'), session)
    assert opened["detail"] == "action 'open'", opened
    popup: dict[str, Any] = opened["observation"]
    assert re.search(r'comboBox "Color"[^\n]*\[expanded\]', popup["tree"]), popup["tree"]
    # Chromium's list is a popup window too; the tree shows its options once, in the combo
    assert popup["tree"].count('menuItem "Blue"') == 1, popup["tree"]
    return popup


@pytest.mark.chromium
def test_chromium_option_click_chooses_and_closes_and_repeat_keeps_it(
    host: HostProcess, chromium: apps.App
) -> None:
    obs = page(host, chromium, "k1", "v=Red open=false n=0")
    popup = open_popup(host, obs, "k1")
    result = click(host, popup, line_id(popup["tree"], r'menuItem "Blue"'), "k1")
    assert result["method"] == "semantic", result
    assert result["detail"] == (
        "chose option 3 of 3: action 'select', then closed the popup: action 'open'"
    )
    tree = result["observation"]["tree"]
    assert re.search(r'comboBox "Color" = "Blue"', tree), tree
    assert "[expanded]" not in tree and "menuItem" not in tree
    after = page(host, chromium, "k1", "v=Blue open=false n=1")
    # the same option again: it stays chosen (Chromium's "select" would unchoose it)
    popup = open_popup(host, after, "k1")
    again = click(host, popup, line_id(popup["tree"], r'menuItem "Blue"'), "k1")
    assert again["detail"] == (
        "chose option 3 of 3: the option is already chosen (its 'select' action would "
        "unchoose it), then closed the popup: action 'open'"
    ), again
    assert "[expanded]" not in again["observation"]["tree"]
    final = page(host, chromium, "k1", "v=Blue open=false n=1")
    assert re.search(r'comboBox "Color" = "Blue"', final["tree"])


@pytest.mark.chromium
def test_chromium_set_value_chooses_by_name_and_refuses_other_names(
    host: HostProcess, chromium: apps.App
) -> None:
    obs = page(host, chromium, "k2", "v=Blue open=false n=1")
    obs["sessionId"] = "k2"
    combo = line_id(obs["tree"], r'comboBox "Color"')
    refused = set_value(host, obs, combo, "Purple")
    assert refused["type"] == "error" and refused["code"] == "unsupported_action", refused
    assert refused["details"] == {"elementId": combo, "reason": "not_an_option", "optionCount": 3}
    assert "Purple" not in refused["message"]
    obs = page(host, chromium, "k2", "v=Blue open=false n=1")  # nothing happened
    obs["sessionId"] = "k2"
    result = set_value(host, obs, line_id(obs["tree"], r'comboBox "Color"'), "Green")
    assert result["type"] == "action_result" and result["method"] == "semantic", result
    assert result["detail"] == "chose option 2 of 3: action 'select'"
    tree = result["observation"]["tree"]
    assert re.search(r'comboBox "Color" = "Green"', tree) and "menuItem" not in tree, tree
    page(host, chromium, "k2", "v=Green open=false n=2")


def test_gtk3_combo_set_value_and_option_click(host: HostProcess) -> None:
    """GTK 3: the combo box's Selection chooses an option with the popup closed; a click on
    an option keeps its own "click" action, which chooses and closes the popup."""
    argv = ["zenity", "--forms", "--title=Form", "--add-combo=Color"]
    zen = launch_accessible([*argv, "--combo-values=Red|Green|Blue"], capture_stdout=True)
    try:
        obs = observe_until(host, {"pid": zen.pid}, r"comboBox", "kg")
        obs["sessionId"] = "kg"
        combo = line_id(obs["tree"], r"comboBox")
        refused = set_value(host, obs, combo, "Purple")
        assert refused["details"]["reason"] == "not_an_option", refused
        obs = observe_until(host, {"pid": zen.pid}, r"comboBox", "kg")
        obs["sessionId"] = "kg"
        result = set_value(host, obs, combo, "Blue")
        assert result["detail"] == "chose option 3 of 3: Selection.SelectChild on the combo box"
        tree = result["observation"]["tree"]
        # still named by its label, the chosen option its value (GTK 3 names the combo box
        # after its item: trial-6 saw "Size" become "Large")
        assert re.search(r'comboBox "Color" = "Blue"', tree) and "menuItem" not in tree, tree
        opened = click(host, result["observation"], combo, "kg")
        popup = opened["observation"]
        # the open list is a popup window too, but the tree shows it once: under the combo
        assert popup["tree"].count('menuItem "Green"') == 1, popup["tree"]
        assert "- popup [" not in popup["tree"], popup["tree"]
        chosen = click(host, popup, line_id(popup["tree"], r'menuItem "Green"'), "kg")
        assert chosen["detail"] == "action 'Click'", chosen
        tree = chosen["observation"]["tree"]
        assert re.search(r'comboBox "Color" = "Green"', tree) and "menuItem" not in tree, tree
        done = click(host, chosen["observation"], line_id(tree, r'button "OK"'), "kg")
        assert done["type"] == "action_result"
        out, _ = zen.proc.communicate(timeout=10)
        assert out.decode() == "Green\n"
    finally:
        zen.stop()
