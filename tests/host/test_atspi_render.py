"""The outline renderer on synthetic trees: ids, noise, flattening, budgets, elision."""

from __future__ import annotations

import re

from deskpilot.host.atspi.collect import RawNode
from deskpilot.host.atspi.render import RenderOptions, render, utf16_len
from deskpilot.host.atspi.vocab import ROLE_NUMBER, State, bit

VISIBLE = bit(State.VISIBLE) | bit(State.SHOWING) | bit(State.SENSITIVE) | bit(State.ENABLED)


class Tree:
    """Builds a preorder RawNode list the way the collectors do."""

    def __init__(self) -> None:
        self.nodes: list[RawNode] = []

    def add(
        self,
        parent: int,
        role: str,
        name: str = "",
        *,
        states: int = VISIBLE,
        actions: tuple[str, ...] | None = None,
        value: str | None = None,
        desc: str = "",
    ) -> int:
        depth = self.nodes[parent].depth + 1 if parent >= 0 else 0
        n = RawNode(
            ":1.9",
            f"/n/{len(self.nodes)}",
            parent=parent,
            depth=depth,
            role=ROLE_NUMBER[role],
            name=name,
            desc=desc,
            states=states,
        )
        n.actions = actions
        n.value = value
        i = len(self.nodes)
        self.nodes.append(n)
        if parent >= 0:
            self.nodes[parent].children.append(i)
        return i


def _ids(text: str) -> list[int]:
    return [int(m.group(1)) for m in re.finditer(r"\[(\d+)\]$", text, re.M)]


def test_line_format_ids_are_line_numbers_and_indent_by_depth() -> None:
    t = Tree()
    w = t.add(-1, "frame", "Settings")
    side = t.add(w, "panel", "Sidebar")
    t.add(
        side,
        "entry",
        "Search",
        value="vpn",
        states=VISIBLE | bit(State.FOCUSED) | bit(State.EDITABLE),
    )
    out = render(t.nodes)
    assert out.text.splitlines() == [
        '- window "Settings" [1]',
        '  - group "Sidebar" [2]',
        '    - textField "Search" = "vpn" [focused] [3]',
    ]
    assert out.element_count == 3
    assert out.focused_id == 3
    assert {i: ni for i, (ni, _p) in out.elements.items()} == {1: 0, 2: 1, 3: 2}
    assert out.elements[3][1] == 2  # parent id


def test_noise_leaves_dropped_and_unnamed_containers_flattened() -> None:
    t = Tree()
    w = t.add(-1, "frame", "App")
    box = t.add(w, "panel")  # unnamed generic container: flattened
    t.add(box, "push button", "OK", actions=("click",))
    t.add(box, "image")  # unnamed, no action: noise
    t.add(box, "label", "OK")  # repeats a named ancestor's name? no: its parent is unnamed
    empty = t.add(w, "panel")  # container with only noise below: noise
    t.add(empty, "filler")
    click = t.add(w, "section", actions=("click",))  # unnamed but clickable: kept
    out = render(t.nodes)
    lines = out.text.splitlines()
    assert lines[0] == '- window "App" [1]'
    assert '  - button "OK" [2]' in lines
    assert not any("image" in line or "filler" in line for line in lines)
    assert any(line.startswith("  - section [") for line in lines)
    assert out.noise >= 3
    assert t.nodes[click].actions == ("click",)


def test_text_repeating_the_parent_name_and_bullets_are_dropped() -> None:
    t = Tree()
    w = t.add(-1, "frame", "Page")
    link = t.add(w, "link", "Item 1", actions=("jump",))
    t.add(link, "static", "Item 1")
    item = t.add(w, "list item")
    t.add(item, "static", "• ")
    t.add(item, "static", "detail")
    out = render(t.nodes)
    assert out.text.count("Item 1") == 1
    assert "•" not in out.text
    assert '- text "detail"' in out.text


def test_hidden_subtrees_are_not_shown() -> None:
    t = Tree()
    w = t.add(-1, "frame", "W")
    hidden = t.add(w, "panel", "Hidden panel", states=0)
    t.add(hidden, "push button", "Ghost", actions=("click",))
    t.add(w, "push button", "Real", actions=("click",))
    out = render(t.nodes)
    assert "Ghost" not in out.text and "Hidden" not in out.text
    assert "Real" in out.text


def test_secure_values_are_never_rendered() -> None:
    t = Tree()
    w = t.add(-1, "dialog", "Login")
    t.add(w, "password text", "Password", value="hunter2")
    out = render(t.nodes)
    assert "hunter2" not in out.text
    assert '- passwordField "Password"' in out.text and "[secure]" in out.text
    assert out.secure_ids == [2]


def test_states_disabled_checked_expanded_readonly() -> None:
    t = Tree()
    w = t.add(-1, "frame", "W")
    t.add(w, "push button", "Apply", states=bit(State.VISIBLE))  # not sensitive
    t.add(w, "check box", "Wifi", states=VISIBLE | bit(State.CHECKED))
    t.add(w, "tree item", "Docs", states=VISIBLE | bit(State.EXPANDABLE))
    t.add(w, "entry", "Log", value="x", states=VISIBLE | bit(State.READ_ONLY))
    lines = render(t.nodes).text.splitlines()
    assert lines[1] == '  - button "Apply" [disabled] [2]'
    assert lines[2] == '  - checkBox "Wifi" [checked] [3]'
    assert lines[3] == '  - treeItem "Docs" [collapsed] [4]'
    assert lines[4] == '  - textField "Log" = "x" [readonly] [5]'


def test_action_names_shown_only_beyond_a_plain_click() -> None:
    t = Tree()
    w = t.add(-1, "frame", "W")
    t.add(w, "push button", "Plain", actions=("click",))
    t.add(w, "tree item", "Node", actions=("activate", "expand or contract"))
    t.add(w, "label", "Copyable", actions=("clipboard.copy", "menu.popup"))
    text = render(t.nodes).text
    assert '- button "Plain" [2]' in text
    assert '- treeItem "Node" [actions: activate, expand or contract] [3]' in text
    assert "clipboard" not in text


def test_quotes_and_newlines_in_names_are_escaped() -> None:
    t = Tree()
    t.add(-1, "frame", 'Say "hi"\nthere')
    assert render(t.nodes).text == '- window "Say \\"hi\\" there" [1]'


def test_multiline_values_stay_on_their_element_line() -> None:
    """A document's text with newlines (and text that looks like a tree line) must not end
    the element's line: the id is the last [n] on the line, and the line count is the id."""
    t = Tree()
    root = t.add(-1, "frame", "Editor")
    t.add(root, "text", "Doc", value='first\n  - button "Fake" [9]\r\tend\x07')
    text = render(t.nodes).text
    lines = text.splitlines()
    assert len(lines) == 2 and _ids(text) == [1, 2]
    assert lines[1].endswith("[2]")
    assert '"first\\n  - button \\"Fake\\" [9]\\r\\tend\\u0007"' in lines[1]
    from deskpilot.protocol.tree import parse_tree

    parsed = parse_tree(text)
    assert len(parsed) == 2 and parsed.get(2) is not None


def test_element_cap_marks_truncation() -> None:
    t = Tree()
    w = t.add(-1, "frame", "W")
    for i in range(50):
        t.add(w, "push button", f"B{i}", actions=("click",))
    out = render(t.nodes, RenderOptions(max_elements=10))
    lines = out.text.splitlines()
    assert out.element_count == 10
    assert out.cap_hit and out.omitted == 41
    assert lines[-1] == "[truncated: 41 elements omitted]"
    assert _ids(out.text) == list(range(1, 11))


def test_text_budget_in_utf16_units_with_marker() -> None:
    t = Tree()
    w = t.add(-1, "frame", "W")
    for i in range(400):
        t.add(w, "push button", f"😀 button {i}", actions=("click",))  # astral: 2 units each
    budget = 2000
    out = render(t.nodes, RenderOptions(text_budget=budget))
    assert out.budget_hit and out.omitted > 0
    assert utf16_len(out.text) <= budget
    assert out.text.splitlines()[-1] == f"[truncated: {out.omitted:,} elements omitted]"
    assert out.element_count + out.omitted == 401


def test_huge_containers_are_elided_with_a_count() -> None:
    t = Tree()
    w = t.add(-1, "frame", "W")
    lst = t.add(w, "list", "Files")
    for i in range(1234 + 10):
        t.add(lst, "list item", f"file{i}")
    out = render(t.nodes, RenderOptions(max_children=10))
    lines = out.text.splitlines()
    assert lines[-1] == "    - … 1,234 more items"
    assert out.elided == 1234
    assert out.element_count == 12
    # the elision line takes a line number but no id
    assert _ids(out.text) == list(range(1, 13))


def test_same_tree_same_text_and_every_element_present_once() -> None:
    t = Tree()
    w = t.add(-1, "frame", "W")
    for i in range(30):
        g = t.add(w, "panel", f"Group {i}")
        t.add(g, "push button", f"Go {i}", actions=("press",))
    a, b = render(t.nodes), render(t.nodes)
    assert a.text == b.text
    assert len(set(_ids(a.text))) == a.element_count == 61


def test_hundred_thousand_elements_render() -> None:
    t = Tree()
    w = t.add(-1, "frame", "Big")
    for g in range(1000):
        grp = t.add(w, "panel", f"Group {g}")
        for i in range(99):
            t.add(grp, "push button", f"Button {g}.{i}", actions=("click",))
    assert len(t.nodes) == 100_001
    out = render(
        t.nodes, RenderOptions(max_elements=100_000, text_budget=10_000_000, max_children=5000)
    )
    assert out.element_count == 100_000 and out.omitted == 1
    capped = render(t.nodes)  # defaults: 2,000 elements, 48,000 units, 500 children shown
    assert capped.element_count <= 2000 and capped.elided == 500
    assert capped.element_count + capped.omitted == 100_001 - 500 * 100


def test_the_pages_of_tabs_not_selected_are_hidden() -> None:
    """GTK's notebook keeps every page VISIBLE; only the current one is SHOWING (GIMP's
    dock listed the Channels, Paths and Undo pages behind Layers). A background tab's own
    parts that are on screen (Firefox's close button) say SHOWING and stay."""
    t = Tree()
    w = t.add(-1, "frame", "Dock")
    tabs = t.add(w, "page tab list")
    current = t.add(tabs, "page tab", "Layers", states=VISIBLE | bit(State.SELECTED))
    t.add(current, "push button", "New layer", actions=("click",))
    behind = t.add(tabs, "page tab", "Channels")
    page = t.add(behind, "panel", "", states=bit(State.VISIBLE) | bit(State.SENSITIVE))
    t.add(page, "push button", "New channel", actions=("click",))
    browser_tab = t.add(tabs, "page tab", "Page B")
    t.add(browser_tab, "push button", "Close tab", actions=("click",))  # SHOWING
    text = render(t.nodes).text
    assert '- tab "Channels"' in text and "New channel" not in text, text
    assert '- button "New layer"' in text and '- button "Close tab"' in text, text


def test_items_of_a_closed_menu_are_hidden() -> None:
    t = Tree()
    w = t.add(-1, "frame", "Editor")
    bar = t.add(w, "menu bar")
    closed = t.add(bar, "menu", "File", actions=("click",))
    t.add(closed, "menu item", "Quit", states=bit(State.VISIBLE) | bit(State.SENSITIVE))
    opened = t.add(bar, "menu", "Edit", actions=("click",))
    t.add(opened, "menu item", "Undo", actions=("click",))  # showing: the menu is open
    text = render(t.nodes).text
    assert '- menu "File"' in text and "Quit" not in text
    assert '- menuItem "Undo"' in text


def test_a_closed_menu_under_a_button_and_a_collapsed_section_are_hidden() -> None:
    """LibreOffice's sidebar keeps its "Menu" button's closed menu items as the button's
    children, and GIMP lists what a collapsed expander holds: both VISIBLE, not SHOWING,
    under a SHOWING parent (a trial found both listed). A combo box's options stay its own."""
    not_showing = bit(State.VISIBLE) | bit(State.SENSITIVE) | bit(State.ENABLED)
    t = Tree()
    w = t.add(-1, "frame", "Sidebar")
    menu = t.add(w, "toggle button", "Menu", actions=("press",))
    t.add(menu, "menu item", "Undock", states=not_showing, actions=("click",))
    section = t.add(w, "toggle button", "Dynamics Options", states=VISIBLE | bit(State.EXPANDABLE))
    t.add(section, "check box", "Reverse", states=not_showing, actions=("click",))
    opened = t.add(
        w,
        "toggle button",
        "Paint Options",
        states=VISIBLE | bit(State.EXPANDABLE) | bit(State.EXPANDED),
    )
    t.add(opened, "check box", "Jitter", actions=("click",))
    text = render(t.nodes).text
    assert '- toggleButton "Menu"' in text and "Undock" not in text, text
    assert "Dynamics Options" in text and "Reverse" not in text, text
    assert '- checkBox "Jitter"' in text, text
