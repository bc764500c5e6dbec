"""A left click on a list, table or tree item through the real host: one click selects it, two
activate it (GTK 3 tree view, GTK 4 list box, Chromium list boxes, ARIA listbox and grid,
a ``<select>`` dropdown).

Each test checks the app's own view of what happened — zenity's output, the GTK 4 app's
signal log, the page's title — not only the tree."""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from host_harness import (
    HostProcess,
    act,
    click,
    launch_accessible,
    line_id,
    observe_until,
    wait_for,
)

from deskpilot.desktop import apps

pytestmark = pytest.mark.desktop


# ------------------------------------------------------------------------------ GTK 3

ROWS = ["a", "1", "b", "2", "c", "3"]


def test_zenity_list_one_click_selects_the_row_and_two_activate_it(host: HostProcess) -> None:
    """The GTK 3 tree view cell's own action is "Activate" (row-activated: zenity returns at
    once); a single click must only select the row."""
    zen = launch_accessible(
        ["zenity", "--list", "--title=Pick a row", "--column=Name", "--column=Size", *ROWS],
        capture_stdout=True,
    )
    try:
        target = {"pid": zen.pid}
        obs = observe_until(host, target, r'cell "b"', "zl")
        assert "[selected]" not in obs["tree"]
        result = click(host, obs, line_id(obs["tree"], r'cell "b"'), "zl")
        assert (result["itemClick"], result["method"]) == ("select", "semantic"), result
        assert result["detail"] == "selected, not activated: Table.AddRowSelection"
        after = result["observation"]
        assert after is not None and re.search(r'cell "b" \[selected\]', after["tree"])
        assert re.search(r'cell "2" \[selected\]', after["tree"])  # the whole row
        assert not re.search(r'cell "[ac]" \[selected\]', after["tree"])
        time.sleep(0.5)
        assert zen.proc.poll() is None, "a single click must not end the dialog"
        # count 2 on *another* row activates that row: zenity prints it and exits (a GTK row
        # activation acts on the selection, so the double click selects it first)
        result = click(host, after, line_id(after["tree"], r'cell "c"'), "zl", count=2)
        assert (result["itemClick"], result["method"]) == ("activate", "semantic"), result
        assert result["detail"] == (
            "selected (Table.AddRowSelection (and removed 1 other selected rows)), "
            "then activated: action 'Activate'"
        )
        out, _ = zen.proc.communicate(timeout=10)
        assert out.decode() == "c\n"  # and nothing before: the single click printed nothing
    finally:
        zen.stop()


def test_zenity_multiple_list_click_selects_only_that_row(host: HostProcess) -> None:
    """A GTK tree view in multiple-selection mode: Table.AddRowSelection adds a row, a plain
    click replaces the selection; zenity prints what is selected when OK is pressed."""
    argv = ["zenity", "--list", "--multiple", "--title=Pick rows", "--column=Name"]
    zen = launch_accessible([*argv, "--column=Size", *ROWS], capture_stdout=True)
    try:
        target = {"pid": zen.pid}
        obs = observe_until(host, target, r'cell "b"', "zm")
        first = click(host, obs, line_id(obs["tree"], r'cell "a"'), "zm")
        assert first["detail"] == "selected, not activated: Table.AddRowSelection", first
        second = click(host, first["observation"], line_id(obs["tree"], r'cell "c"'), "zm")
        assert second["detail"] == (
            "selected, not activated: Table.AddRowSelection (and removed 1 other selected rows)"
        ), second
        tree = second["observation"]["tree"]
        assert re.search(r'cell "c" \[selected\]', tree) and 'cell "a" [selected]' not in tree
        ok = line_id(tree, r'button "OK"')
        done = click(host, second["observation"], ok, "zm")
        assert done["type"] == "action_result"
        out, _ = zen.proc.communicate(timeout=10)
        assert out.decode() == "c\n"
    finally:
        zen.stop()


def test_zenity_checklist_one_click_on_the_box_ticks_it(host: HostProcess) -> None:
    """A person's click on a check box cell flips the box (GTK's toggle renderer); it must not
    merely select the row, and never activate it (the dialog would return)."""
    zen = launch_accessible(
        [
            "zenity",
            "--list",
            "--checklist",
            "--title=Toppings",
            "--column=Pick",
            "--column=Topping",
            "FALSE",
            "cheese",
            "FALSE",
            "basil",
            "FALSE",
            "olives",
        ],
        capture_stdout=True,
    )
    try:
        target = {"pid": zen.pid}
        obs = observe_until(host, target, r'cell "basil"', "zc")
        box = line_id(obs["tree"], r'cell "basil"') - 1  # the row's box comes before its name
        assert re.search(rf"- cell \[unchecked\].* \[{box}\]$", obs["tree"], re.M), obs["tree"]
        result = click(host, obs, box, "zc")
        assert (result["itemClick"], result["method"]) == ("toggle", "semantic"), result
        assert result["detail"].startswith("toggled the check box: action 'Toggle'"), result
        after = result["observation"]
        assert after is not None and re.search(
            rf"- cell \[checked\].* \[{box}\]$", after["tree"], re.M
        )
        assert zen.proc.poll() is None, "a single click must not end the dialog"
        ok = line_id(after["tree"], r'button "(_)?OK"')
        act(host, after, {"kind": "click", "elementId": ok}, "zc")
        out, _ = zen.proc.communicate(timeout=10)
        assert out.decode() == "basil\n"  # zenity's own word: only the ticked row
    finally:
        zen.stop()


# ------------------------------------------------------------------------------ GTK 4

# No GTK 4 app with a list ships on the test machine, but libgtk-4 does: a GtkListBox through
# ctypes. GtkListBox activates a row on a single *pointer* click (activate-on-single-click),
# so only the semantic selection keeps a click from activating it; the app logs its signals.
GTK4_LIST = r"""
import ctypes, sys
out = sys.argv[1]
gtk = ctypes.CDLL("libgtk-4.so.1")
glib = ctypes.CDLL("libglib-2.0.so.0")
gobj = ctypes.CDLL("libgobject-2.0.so.0")
P = ctypes.c_void_p
for name, res, args in [
    ("gtk_window_new", P, []), ("gtk_list_box_new", P, []), ("gtk_label_new", P, [ctypes.c_char_p]),
    ("gtk_list_box_append", None, [P, P]), ("gtk_list_box_row_get_index", ctypes.c_int, [P]),
    ("gtk_list_box_get_selected_row", P, [P]), ("gtk_window_set_child", None, [P, P]),
    ("gtk_window_set_title", None, [P, ctypes.c_char_p]),
    ("gtk_window_set_default_size", None, [P, ctypes.c_int, ctypes.c_int]),
    ("gtk_window_present", None, [P]),
]:
    f = getattr(gtk, name); f.restype = res; f.argtypes = args
glib.g_main_context_iteration.argtypes = [P, ctypes.c_bool]
gobj.g_signal_connect_data.argtypes = [P, ctypes.c_char_p, P, P, P, ctypes.c_int]
gtk.gtk_init()
win = gtk.gtk_window_new()
gtk.gtk_window_set_title(win, b"GTK4 list")
gtk.gtk_window_set_default_size(win, 320, 240)
box = gtk.gtk_list_box_new()
for word in (b"alpha", b"beta", b"gamma"):
    gtk.gtk_list_box_append(box, gtk.gtk_label_new(word))
gtk.gtk_window_set_child(win, box)

def log(line):
    with open(out, "a", encoding="utf-8") as f:
        f.write(line + "\n")

@ctypes.CFUNCTYPE(None, P, P, P)
def activated(_box, row, _d):
    log(f"activated {gtk.gtk_list_box_row_get_index(row)}")

@ctypes.CFUNCTYPE(None, P, P)
def selected(_box, _d):
    row = gtk.gtk_list_box_get_selected_row(box)
    log(f"selected {gtk.gtk_list_box_row_get_index(row) if row else -1}")

gobj.g_signal_connect_data(box, b"row-activated", ctypes.cast(activated, P), None, None, 0)
gobj.g_signal_connect_data(box, b"selected-rows-changed", ctypes.cast(selected, P), None, None, 0)
gtk.gtk_window_present(win)
while True:
    glib.g_main_context_iteration(None, True)
"""


def test_gtk4_list_box_click_selects_and_double_click_activates(
    host: HostProcess, tmp_path: Path
) -> None:
    script = tmp_path / "gtk4_list.py"
    script.write_text(GTK4_LIST)
    log = tmp_path / "signals.log"
    env = dict(os.environ, GDK_BACKEND="x11", GSK_RENDERER="cairo")
    app = apps.launch([sys.executable, str(script), str(log)], env)
    try:
        apps.wait_accessible(pid=app.pid, timeout=30)
        target = {"pid": app.pid}
        obs = observe_until(host, target, r'label "gamma"', "g4")

        def events() -> list[str]:
            return log.read_text().split("\n")[:-1] if log.exists() else []

        before = len(events())
        # the row is unnamed; its label is what an agent clicks, and it stands for the row
        result = click(host, obs, line_id(obs["tree"], r'label "beta"'), "g4")
        assert (result["itemClick"], result["method"]) == ("select", "semantic"), result
        assert result["detail"] == "selected, not activated: Selection.SelectChild"
        wait_for(lambda: "selected 1" in events()[before:], timeout=5)
        after = result["observation"]
        assert after is not None
        beta = line_id(after["tree"], r'label "beta"')
        assert "[selected]" in after["tree"].splitlines()[beta - 2]  # the row above the label
        time.sleep(0.3)
        assert not any(e.startswith("activated") for e in events()), events()
        # GTK 4.8 list rows have no accessible action: count 2 is a real double click
        result = click(host, after, line_id(after["tree"], r'label "gamma"'), "g4", count=2)
        assert (result["itemClick"], result["method"]) == ("activate", "synthetic"), result
        wait_for(lambda: "activated 2" in events(), timeout=5)
    finally:
        app.stop()


# ------------------------------------------------------------------------------ Chromium

LISTS_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Lists</title></head>
<body>
<p id="status">nothing yet</p>
<label>Note <input id="note" type="text" value="keep"></label>
<select id="fruit" size="4" aria-label="Fruit"
  onchange="report('fruit:' + this.value)"
  ondblclick="report('opened fruit')">
<option>apple</option><option>banana</option><option>cherry</option><option>date</option>
</select>
<select id="tools" multiple size="3" aria-label="Tools"
  onchange="report('tools:' + [...this.selectedOptions].map(o => o.value).join('+'))">
<option>hammer</option><option>saw</option><option>drill</option></select>
<select id="color" aria-label="Color" onchange="report('color:' + this.value)">
<option>red</option><option>green</option><option>blue</option></select>
<div role="listbox" aria-label="Pets" tabindex="0">
<div role="option" aria-selected="false">cat</div>
<div role="option" aria-selected="false">dog</div>
<div role="option" aria-selected="false">fish</div>
</div>
<table role="grid" aria-label="People">
<tr role="row"><th role="columnheader">Name</th><th role="columnheader">Age</th></tr>
<tr role="row" aria-selected="false"><td role="gridcell">Ada</td><td role="gridcell">36</td></tr>
<tr role="row" aria-selected="false"><td role="gridcell">Bob</td><td role="gridcell">41</td></tr>
</table>
<p>Static words here</p>
<script>
function report(what) {
  document.title = what;
  document.getElementById('status').textContent = what;
}
function selectable(items, label) {
  for (const item of items) {
    item.addEventListener('click', () => {
      for (const o of items) o.setAttribute('aria-selected', o === item ? 'true' : 'false');
      report(label + ':' + (item.cells ? item.cells[0] : item).textContent.trim());
    });
    item.addEventListener('dblclick', () =>
      report('opened ' + (item.cells ? item.cells[0] : item).textContent.trim()));
  }
}
selectable([...document.querySelectorAll('[role=option]')], 'pet');
selectable([...document.querySelectorAll('[role=grid] tr')].slice(1), 'row');
</script>
</body></html>
"""


@pytest.fixture(scope="module")
def lists_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    page = tmp_path_factory.mktemp("lists") / "lists.html"
    page.write_text(LISTS_PAGE)
    return page.as_uri()


@pytest.fixture(scope="module")
def chromium(desktop: object, lists_url: str) -> Iterator[apps.App]:
    app = apps.launch_chromium(lists_url)
    try:
        apps.wait_accessible(pid=app.pid, timeout=60)
        yield app
    finally:
        app.stop()


def page(host: HostProcess, chromium: apps.App, session: str, pattern: str = "") -> dict[str, Any]:
    return observe_until(
        host, {"pid": chromium.pid}, pattern or r'text "Static words here"', session, timeout=45
    )


@pytest.mark.chromium
def test_chromium_select_size_option_click_selects_it(
    host: HostProcess, chromium: apps.App
) -> None:
    obs = page(host, chromium, "c1")
    result = click(host, obs, line_id(obs["tree"], r'listItem "banana"'), "c1")
    assert (result["itemClick"], result["method"]) == ("select", "semantic"), result
    assert result["detail"] == "selected, not activated: Selection.SelectChild"
    after = page(host, chromium, "c1", r'document "fruit:banana"')
    assert re.search(r'listItem "banana" (\[focused\] )?\[selected\]', after["tree"])
    assert "opened" not in after["tree"]


@pytest.mark.chromium
def test_chromium_multiple_select_click_replaces_the_selection(
    host: HostProcess, chromium: apps.App
) -> None:
    """Selection.SelectChild adds to a multi-selectable list; a person's plain click selects
    the clicked option alone."""
    obs = page(host, chromium, "c5")
    first = click(host, obs, line_id(obs["tree"], r'listItem "hammer"'), "c5")
    assert first["detail"] == "selected, not activated: Selection.SelectChild", first
    after = page(host, chromium, "c5", r'document "tools:hammer"')
    second = click(host, after, line_id(after["tree"], r'listItem "drill"'), "c5")
    assert (second["itemClick"], second["method"]) == ("select", "semantic"), second
    assert second["detail"] == "selected, not activated: Selection.ClearSelection, SelectChild"
    final = page(host, chromium, "c5", r'document "tools:drill"')
    assert re.search(r'listItem "drill" (\[focused\] )?\[selected\]', final["tree"])
    assert not re.search(r'listItem "hammer"[^\n]*\[selected\]', final["tree"])


@pytest.mark.chromium
def test_chromium_aria_listbox_click_selects_and_double_click_opens(
    host: HostProcess, chromium: apps.App
) -> None:
    obs = page(host, chromium, "c2")
    result = click(host, obs, line_id(obs["tree"], r'listItem "dog"'), "c2")
    assert (result["itemClick"], result["method"]) == ("select", "semantic"), result
    after = page(host, chromium, "c2", r'document "pet:dog"')
    assert re.search(r'listItem "dog" \[selected\]', after["tree"])
    # the options' only action is "select": activating one is a real double click
    result = click(host, after, line_id(after["tree"], r'listItem "fish"'), "c2", count=2)
    assert (result["itemClick"], result["method"]) == ("activate", "synthetic"), result
    page(host, chromium, "c2", r'document "opened fish"')


@pytest.mark.chromium
def test_chromium_aria_grid_cell_click_selects_its_row(
    host: HostProcess, chromium: apps.App
) -> None:
    """Chromium's grid refuses Selection.SelectChild for rows and a cell has no select
    action: the fallback is a real single click at the cell, and it says so."""
    obs = page(host, chromium, "c3")
    result = click(host, obs, line_id(obs["tree"], r'cell "Bob"'), "c3")
    assert (result["itemClick"], result["method"]) == ("select", "synthetic"), result
    assert "no accessible selection" in result["detail"]
    after = page(host, chromium, "c3", r'document "row:Bob"')
    assert re.search(r'row "Bob 41" \[selected\]', after["tree"])
    assert "opened" not in after["tree"]


@pytest.mark.chromium
def test_chromium_select_dropdown_option_click_chooses_it(
    host: HostProcess, chromium: apps.App
) -> None:
    obs = page(host, chromium, "c4")
    combo = line_id(obs["tree"], r'comboBox "Color"')
    opened = act(host, obs, {"kind": "click", "elementId": combo}, "c4")
    assert opened["type"] == "action_result" and opened.get("itemClick") is None, opened
    popup = page(host, chromium, "c4", r'menuItem "green"')
    # a <select>'s options are menu items: a click chooses one (their action is "select")
    result = act(
        host,
        popup,
        {"kind": "click", "elementId": line_id(popup["tree"], r'menuItem "green"')},
        "c4",
    )
    assert result["type"] == "action_result" and result["method"] == "semantic", result
    after = page(host, chromium, "c4", r'document "color:green"')
    assert re.search(r'comboBox "Color" = "green"', after["tree"])
