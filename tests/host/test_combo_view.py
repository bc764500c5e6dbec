"""How the outline shows a combo box, on synthetic trees shaped as each toolkit's are
(host/atspi/combo_view.py; the real apps: test_atspi_firefox.py, test_combo_boxes.py,
test_atspi_gtk.py, test_atspi_qt.py): a closed combo names its options and hides its list,
an open list read elsewhere (Firefox's) is shown under its combo, an open one is shown as
the toolkit says."""

from __future__ import annotations

from test_atspi_render import VISIBLE, Tree

from deskpilot.host.atspi.render import render
from deskpilot.host.atspi.vocab import State, bit

EXPANDABLE = bit(State.EXPANDABLE)
EXPANDED = bit(State.EXPANDED)
SELECTED = bit(State.SELECTED)
#: visible but not showing: Firefox's options of a closed <select> other than the chosen one
OFF_SCREEN = bit(State.VISIBLE) | bit(State.SENSITIVE) | bit(State.ENABLED)


def _options(t: Tree, popup: int, names: list[str], states: int, chosen: str) -> None:
    for name in names:
        t.add(popup, "menu item", name, states=states | (SELECTED if name == chosen else 0))


def test_a_closed_combo_names_its_options_and_an_open_one_shows_its_list() -> None:
    """Closed: Chromium (EXPANDABLE, a hidden list), GTK 3 (no EXPANDABLE, a hidden list).
    Open, as the toolkit says: Chromium (EXPANDED), Qt 5 (no EXPANDABLE, its list always
    showing: it cannot be told closed)."""
    t = Tree()
    w = t.add(-1, "frame", "Form")
    chromium = t.add(w, "combo box", "Color", states=VISIBLE | EXPANDABLE, value="Red")
    _options(t, t.add(chromium, "menu", states=0), ["Red", "Green", "Blue"], 0, "Red")
    gtk = t.add(w, "combo box", "Size", states=VISIBLE)
    _options(t, t.add(gtk, "menu", states=0), ["S", "M"], bit(State.VISIBLE), "S")
    opened = t.add(w, "combo box", "Open", states=VISIBLE | EXPANDABLE | EXPANDED)
    _options(t, t.add(opened, "menu"), ["Red", "Green"], VISIBLE, "Red")
    qt5 = t.add(w, "combo box", "Red", states=VISIBLE)
    _options(t, t.add(qt5, "list"), ["Red", "Green"], VISIBLE, "")
    lines = render(t.nodes).text.splitlines()
    assert lines == [
        '- window "Form" [1]',
        '  - comboBox "Color" = "Red" [collapsed] [options: "Red", "Green", "Blue"] [2]',
        '  - comboBox "Size" [collapsed] [options: "S", "M"] [3]',
        '  - comboBox "Open" [expanded] [4]',
        "    - menu [5]",
        '      - menuItem "Red" [selected] [6]',
        '      - menuItem "Green" [7]',
        '  - comboBox "Red" [8]',
        "    - list [9]",
        '      - menuItem "Red" [10]',
        '      - menuItem "Green" [11]',
    ]


def test_firefox_closed_select_shows_options_not_its_showing_list() -> None:
    """Firefox's closed list says showing, and so does its chosen option: still closed."""
    t = Tree()
    w = t.add(-1, "frame", "Form")
    doc = t.add(w, "document web", "Page")
    combo = t.add(doc, "combo box", "Color", states=VISIBLE | EXPANDABLE)
    popup = t.add(combo, "menu")
    t.add(popup, "menu item", "Red", states=VISIBLE | SELECTED)
    t.add(popup, "menu item", "Green", states=OFF_SCREEN)
    text = render(t.nodes).text
    assert 'comboBox "Color" [collapsed] [options: "Red", "Green"] [3]' in text, text
    assert "menuItem" not in text and "menu [" not in text, text


def _firefox_open(t: Tree, chosen_in_combos: list[str]) -> tuple[int, list[int]]:
    """A Firefox window whose page has a <select> per entry of ``chosen_in_combos`` (the
    same options each), and the open list of one of them as the frame's first child."""
    w = t.add(-1, "frame", "Form")
    dropdown = t.add(w, "combo box", states=VISIBLE | EXPANDABLE | EXPANDED)
    listed = t.add(dropdown, "menu", "Green")
    for name in ("Red", "Green", "Blue"):
        focus = bit(State.FOCUSED) | SELECTED if name == "Green" else 0
        t.add(listed, "menu item", name, states=VISIBLE | focus, actions=("click",))
    doc = t.add(w, "document web", "Page")
    combos = []
    for i, chosen in enumerate(chosen_in_combos):
        combo = t.add(doc, "combo box", f"Pick {i}", states=VISIBLE | EXPANDABLE)
        popup = t.add(combo, "menu")
        for name in ("Red", "Green", "Blue"):
            t.add(popup, "menu item", name, states=VISIBLE if name == chosen else OFF_SCREEN)
            if name == chosen:
                t.nodes[-1].states |= SELECTED
        combos.append(combo)
    t.add(doc, "push button", "Send", actions=("press",))
    return dropdown, combos


def test_firefox_open_list_is_shown_under_its_select() -> None:
    t = Tree()
    _firefox_open(t, ["Green"])
    lines = render(t.nodes).text.splitlines()
    assert lines == [
        '- window "Form" [1]',
        '  - document "Page" [2]',
        '    - comboBox "Pick 0" [expanded] [3]',
        '      - menu "Green" [4]',
        '        - menuItem "Red" [5]',
        '        - menuItem "Green" [focused] [selected] [6]',
        '        - menuItem "Blue" [7]',
        '    - button "Send" [8]',
    ]


def test_an_open_list_goes_to_the_select_showing_its_chosen_option() -> None:
    t = Tree()
    _firefox_open(t, ["Red", "Green"])
    text = render(t.nodes).text
    assert '    - comboBox "Pick 0" [collapsed] [options: "Red", "Green", "Blue"] [3]' in text
    assert '    - comboBox "Pick 1" [expanded] [4]\n      - menu "Green" [5]' in text, text


def test_an_open_list_two_selects_could_own_stays_where_it_is() -> None:
    """Same options, same chosen one: no guess; the list keeps its own place."""
    t = Tree()
    _firefox_open(t, ["Green", "Green"])
    lines = render(t.nodes).text.splitlines()
    assert lines[1] == "  - comboBox [expanded] [2]", lines
    assert sum('comboBox "Pick' in line and "[collapsed] [options:" in line for line in lines) == 2


def test_long_option_lists_are_counted_and_names_escaped() -> None:
    t = Tree()
    w = t.add(-1, "frame", "Form")
    combo = t.add(w, "combo box", "Country", states=VISIBLE | EXPANDABLE)
    popup = t.add(combo, "menu", states=0)
    names = ['Say "hi"', *(f"Country number {i}" for i in range(199))]
    _options(t, popup, names, 0, "")
    line = render(t.nodes).text.splitlines()[1]
    assert line.startswith('  - comboBox "Country" [collapsed] [options: "Say \\"hi\\"", ')
    shown = line.count('"Country number')
    assert 10 < shown < 40 and line.endswith(f", … {199 - shown:,} more] [2]"), line
    assert len(line) < 1000


def test_check_boxes_say_checked_or_unchecked() -> None:
    t = Tree()
    w = t.add(-1, "frame", "Form")
    t.add(w, "check box", "Terms")
    t.add(w, "check box", "News", states=VISIBLE | bit(State.CHECKED))
    t.add(w, "radio button", "Small")
    t.add(w, "check box", "Some", states=VISIBLE | bit(State.INDETERMINATE))
    assert render(t.nodes).text.splitlines()[1:] == [
        '  - checkBox "Terms" [unchecked] [2]',
        '  - checkBox "News" [checked] [3]',
        '  - radioButton "Small" [unchecked] [4]',
        '  - checkBox "Some" [mixed] [5]',
    ]
