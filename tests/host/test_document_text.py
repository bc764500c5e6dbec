"""The outline's rules for documents, text, checked states and what is not on screen, on
synthetic trees (the live apps: test_documents_gtk4.py, tests/mcp/test_app_writer.py)."""

from __future__ import annotations

from typing import Any

from test_atspi_render import VISIBLE, Tree

from deskpilot.host.atspi import areas, closed_menus, doc_text
from deskpilot.host.atspi.doc_text import DOCUMENT_TEXT_MAX, VIEW_MAX, TextState
from deskpilot.host.atspi.render import render
from deskpilot.host.atspi.vocab import State, bit

FOCUSED = bit(State.FOCUSED)
EDITABLE = bit(State.EDITABLE)
CHECKED = bit(State.CHECKED)
PRESSED = bit(State.PRESSED)
SHOWING = bit(State.SHOWING)
SELECTED = bit(State.SELECTED)


def _lines(t: Tree) -> list[str]:
    return render(t.nodes).text.splitlines()


# ---------------------------------------------------------------------------- checked states


def test_every_checkable_node_says_checked_or_unchecked() -> None:
    t = Tree()
    w = t.add(-1, "frame", "Prefs")
    t.add(w, "check box", "Wrap", states=VISIBLE | CHECKED)
    t.add(w, "check box", "Match case")
    t.add(w, "radio button", "Down")
    t.add(w, "toggle button", "Bold", states=VISIBLE | PRESSED)
    t.add(w, "toggle button", "Italic")
    t.add(w, "check menu item", "Status Bar")
    t.add(w, "push button", "Underline", states=VISIBLE | bit(State.CHECKABLE))
    t.add(w, "push button", "OK", actions=("click",))
    lines = _lines(t)
    assert '  - checkBox "Wrap" [checked] [2]' in lines
    assert '  - checkBox "Match case" [unchecked] [3]' in lines
    assert '  - radioButton "Down" [unchecked] [4]' in lines
    assert '  - toggleButton "Bold" [pressed] [5]' in lines
    assert '  - toggleButton "Italic" [unchecked] [6]' in lines
    assert '  - checkMenuItem "Status Bar" [unchecked] [7]' in lines
    assert '  - button "Underline" [unchecked] [8]' in lines  # CHECKABLE says it is one
    assert '  - button "OK" [9]' in lines  # not checkable: nothing to say


# ---------------------------------------------------------------------------- not on screen


def test_nodes_with_no_area_are_left_out_with_everything_in_them() -> None:
    """GTK 4.8 keeps hidden infobars and pages in the tree, VISIBLE and never SHOWING: only
    their extents (zero height, 0×0) say they are not on screen (areas.py)."""
    t = Tree()
    w = t.add(-1, "frame", "todo.txt - Text Editor")
    bar = t.add(w, "filler", "GtkInfoBar")
    t.add(bar, "label", "Could Not Open File")
    t.add(bar, "push button", "Discard…", actions=("click",))
    page = t.add(w, "panel", "Start or Open a Document")
    t.add(page, "label", "Press Ctrl+N")
    view = t.add(w, "text", "", states=VISIBLE | EDITABLE, value="hello")
    t.nodes[bar].empty = True
    t.nodes[page].empty = True
    t.nodes[view].empty = False
    text = render(t.nodes).text
    for gone in ("Could Not Open File", "Discard", "Start or Open", "Ctrl+N"):
        assert gone not in text
    assert '- textField = "hello"' in text


def test_box_nodes_are_containers_of_gtk4_and_menu_bars_of_any_app() -> None:
    t = Tree()
    w = t.add(-1, "frame", "W")
    box = t.add(w, "panel")
    t.add(box, "push button", "A")
    menubar = t.add(w, "menu bar")
    t.add(menubar, "menu", "File")
    hidden = t.add(w, "panel", states=0)
    t.add(hidden, "push button", "B")
    assert areas.box_nodes(t.nodes, containers=False) == [menubar]
    assert areas.box_nodes(t.nodes, containers=True) == [box, menubar]
    # known ones are not asked again (a patch asks only for the nodes it read anew)
    t.nodes[box].empty = False
    assert areas.box_nodes(t.nodes, containers=True) == [menubar]


def test_menu_and_tool_bars_with_no_area_are_not_shown() -> None:
    """LibreOffice's GTK 3 plugin exports its menu bar twice: GTK's, and VCL's at height 0."""
    t = Tree()
    w = t.add(-1, "frame", "report.odt - LibreOffice Writer")
    real = t.add(w, "menu bar", states=VISIBLE | SHOWING)
    t.add(real, "menu", "File", states=VISIBLE | SHOWING)
    phantom = t.add(w, "menu bar", states=VISIBLE | SHOWING)
    t.add(phantom, "menu", "File", states=VISIBLE | SHOWING)
    # Firefox's hidden menu bar: in a SHOWING tool bar whose extents are -1×-1
    holder = t.add(w, "tool bar", "Menu Bar", states=VISIBLE | SHOWING)
    hidden = t.add(holder, "menu bar", "Application", states=VISIBLE)
    t.add(hidden, "menu", "History", states=VISIBLE)
    which = areas.box_nodes(t.nodes, containers=False)
    assert which == [real, phantom, holder, hidden]
    replies = [[(57, 50, 1141, 25)], [(57, 50, 1165, 0)], [(-1, -1, -1, -1)], [(0, 0, 358, 24)]]
    areas.apply_boxes(t.nodes, which, replies)
    text = render(t.nodes).text
    assert text.count('menu "File"') == 1
    assert "Menu Bar" not in text and "History" not in text


def test_gtk4_is_known_by_showing_on_nothing() -> None:
    t = Tree()
    w = t.add(-1, "frame", "W", states=VISIBLE | SHOWING)
    t.add(w, "push button", "A", states=bit(State.VISIBLE))
    assert areas.no_showing(t.nodes)
    t.add(w, "push button", "B", states=VISIBLE | SHOWING)
    assert not areas.no_showing(t.nodes)


def test_a_bullet_is_noise_only_in_a_list() -> None:
    """gnome-text-editor puts "•" before the title of a file with unsaved changes."""
    t = Tree()
    w = t.add(-1, "frame", "todo.txt - Text Editor")
    title = t.add(w, "panel")
    t.add(title, "label", "•")
    t.add(title, "label", "todo.txt")
    items = t.add(w, "list")
    item = t.add(items, "list item")
    t.add(item, "static", "• ")
    t.add(item, "static", "first")
    lines = _lines(t)
    assert '  - label "•" [2]' in lines
    assert sum("•" in line for line in lines) == 1


# ---------------------------------------------------------------------------- documents


def _writer(paragraphs: list[str], **text: Any) -> tuple[Tree, int]:
    t = Tree()
    w = t.add(-1, "frame", "report.odt - LibreOffice Writer")
    doc = t.add(w, "document text", "report", states=VISIBLE | EDITABLE)
    for p in paragraphs:
        t.add(doc, "paragraph", states=VISIBLE | EDITABLE, value=p)
    if text:
        t.nodes[doc].text = TextState(**text)
    return t, doc


def test_paragraphs_show_their_text_the_caret_and_the_selection() -> None:
    t, doc = _writer(["Quarterly report", "The quick brown fox.", ""])
    first, second, empty = t.nodes[doc].children
    t.nodes[second].states |= FOCUSED | SELECTED
    t.nodes[second].text = TextState(caret=9, selection=(4, 9), selected="quick")
    lines = _lines(t)
    assert lines[2] == '    - paragraph = "Quarterly report" [editable] [3]'
    assert lines[3] == (
        '    - paragraph = "The quick brown fox." [focused] [selected] [editable] [caret 9] '
        '[selection 4-9: "quick"] [4]'
    )
    # an empty paragraph of an editable document is a blank line a person sees (trial-6)
    assert lines[4:] == ['    - paragraph = "" [editable] [5]'], lines
    t.nodes[empty].states &= ~EDITABLE  # read only: said only with the caret in it
    assert len(_lines(t)) == 4, _lines(t)
    t.nodes[empty].states |= EDITABLE
    t.nodes[empty].states |= FOCUSED
    t.nodes[empty].text = TextState(caret=0)
    assert _lines(t)[-1] == '    - paragraph = "" [focused] [editable] [caret 0] [5]'
    assert t.nodes[first].value == "Quarterly report"


def test_a_document_shows_its_bound_of_text_and_says_what_it_left_out() -> None:
    long = "x" * 1500
    t, doc = _writer([long, long, long, "the end", "after"])
    t.nodes[t.nodes[doc].children[-1]].states |= FOCUSED  # the caret's paragraph stays
    out = render(t.nodes)
    lines = out.text.splitlines()
    values = [line.split('"')[1] for line in lines if "- paragraph" in line]
    shown = sum(len(v.rstrip("…")) for v in values)
    assert shown == DOCUMENT_TEXT_MAX
    assert lines[4].endswith('…" [editable] [5]')  # the third is cut at the bound
    assert '- paragraph = "…" [focused] [editable]' in lines[5]
    assert lines[6] == (
        "    - … 3 paragraphs not shown in full (the outline shows 4,000 characters of a document)"
    )
    assert "the end" not in out.text


def test_a_scrolled_document_says_there_is_more_above_and_below() -> None:
    t, _doc = _writer(["middle"], before=-1, after=-1)
    assert _lines(t)[2:] == [
        "    - … more of the document above (scroll up to show it)",
        '    - paragraph = "middle" [editable] [4]',
        "    - … more of the document below (scroll down to show it)",
    ]


def test_scroll_marks_come_from_the_first_and_last_paragraph_on_screen() -> None:
    """Writer's document has one child per paragraph on screen, clipped to it: the first
    reaching its top edge means more above, the last reaching its bottom more below."""
    t = Tree()
    w = t.add(-1, "frame", "W")
    manages = VISIBLE | bit(State.MANAGES_DESCENDANTS)
    doc = t.add(w, "document text", "long", states=manages)
    t.add(doc, "paragraph", value="a")
    t.add(doc, "paragraph", value="b")
    which = areas.box_nodes(t.nodes, containers=False)
    first, last = t.nodes[doc].children
    assert which == [doc, first, last]
    at_top = [[(57, 153, 1092, 550)], [(206, 248, 794, 15)], [(206, 702, 794, 1)]]
    areas.apply_boxes(t.nodes, which, at_top)
    assert t.nodes[doc].text == TextState(before=0, after=-1)
    t.nodes[doc].empty = None
    scrolled = [[(57, 153, 1092, 550)], [(206, 153, 794, 10)], [(206, 300, 794, 15)]]
    areas.apply_boxes(t.nodes, which, scrolled)
    assert t.nodes[doc].text == TextState(before=-1, after=0)


def test_a_text_view_says_how_much_it_leaves_out() -> None:
    t = Tree()
    w = t.add(-1, "frame", "W")
    view = t.add(w, "text", states=VISIBLE | EDITABLE | FOCUSED, value="line\nline")
    t.nodes[view].text = TextState(caret=12, before=1204, after=3210)
    assert _lines(t)[1] == (
        '  - textField = "line\\nline" [focused] [caret 12] '
        "[more above: 1,204 characters] [more below: 3,210 characters] [2]"
    )


def test_an_unnamed_label_is_named_by_its_text() -> None:
    """LibreOffice's status bar labels hold their words in the Text interface only."""
    t = Tree()
    w = t.add(-1, "frame", "W")
    bar = t.add(w, "status bar")
    t.add(bar, "label", value="Page 1 of 1")
    t.add(bar, "label", value="")
    assert _lines(t)[1:] == ["  - statusBar [2]", '    - label "Page 1 of 1" [3]']


def test_a_text_view_longer_than_its_bound_is_read_around_the_caret() -> None:
    assert doc_text._window("view", 100, 50) == (0, 100)
    count = VIEW_MAX * 3
    start, end = doc_text._window("view", count, count // 2)
    assert end - start == VIEW_MAX and start < count // 2 < end
    assert doc_text._window("view", count, None) == (0, VIEW_MAX)
    assert doc_text._window("view", count, count) == (count - VIEW_MAX, count)
    assert doc_text._window("field", 1000, 5) == (0, doc_text.VALUE_MAX_CHARS + 1)


def test_text_is_read_where_no_child_shows_it() -> None:
    """Chromium's paragraphs hold static text children (nothing to read); Writer's and
    Firefox's hold their text themselves."""
    t = Tree()
    w = t.add(-1, "frame", "W")
    own = t.add(w, "paragraph")
    kids = t.add(w, "paragraph")
    t.add(kids, "static", "detail")
    named = t.add(w, "label", "OK")
    secret = t.add(w, "password text")
    view = t.add(w, "text", states=VISIBLE | bit(State.MULTI_LINE))
    for n in t.nodes:
        n.ifaces = int(doc_text.Iface.TEXT)
    assert doc_text.text_kind(t.nodes[own]) == "value"
    assert doc_text.text_kind(t.nodes[kids]) is None
    assert doc_text.text_kind(t.nodes[named]) is None
    assert doc_text.text_kind(t.nodes[secret]) is None
    assert doc_text.text_kind(t.nodes[view]) == "view"


# ---------------------------------------------------------------------------- closed menus


def test_only_closed_menus_of_a_menu_bar_keep_their_items_unread() -> None:
    """A pruned Collection read leaves menu items out; a node missing children is read again
    unless it is a closed menu of a menu bar (or in one): an open one (SELECTED), a popup
    menu, a combo box's menu and a toolbar missing its separators are."""
    t = Tree()
    w = t.add(-1, "frame", "W")
    bar = t.add(w, "menu bar")
    closed = t.add(bar, "menu", "Edit")
    sub = t.add(closed, "menu", "Paste Special")
    opened = t.add(bar, "menu", "File", states=VISIBLE | SELECTED)
    combo = t.add(w, "combo box")
    options = t.add(combo, "menu")
    tools = t.add(w, "tool bar", "Standard")
    for i, count in ((closed, 29), (sub, 5), (opened, 31), (options, 3), (tools, 66)):
        t.nodes[i].child_count = count
    t.nodes[bar].child_count = 2
    t.nodes[combo].child_count = 1
    t.nodes[w].child_count = 3
    assert closed_menus.incomplete(t.nodes) == [opened, options, tools]


def test_the_pruned_rule_asks_for_every_role_but_menus_and_their_items() -> None:
    words = closed_menus.RULE[4]
    asked = {k for k in range(len(words) * 32) if words[k // 32] & (1 << (k % 32))}
    assert closed_menus.LEFT_OUT.isdisjoint(asked)
    assert len(asked) + len(closed_menus.LEFT_OUT) == len(doc_text_roles())
    assert closed_menus.RULE[5] == 2  # MATCH_ANY: atk-bridge compares it in AT-SPI numbers


def doc_text_roles() -> tuple[str, ...]:
    from deskpilot.host.atspi.vocab import ATSPI_ROLE_NAMES

    return ATSPI_ROLE_NAMES


# ---------------------------------------------------------------------------- field places


def test_an_unnamed_field_takes_the_name_of_the_placeholder_it_sits_on() -> None:
    """LibreOffice's Formatting toolbar keeps a named, empty item where its GTK combo box
    sits (the combo box is a child of the window, with no name or label)."""
    from deskpilot.host.atspi import field_places

    t = Tree()
    w = t.add(-1, "frame", "W")
    bar = t.add(w, "tool bar", "Formatting")
    font = t.add(bar, "panel", "Font Name")
    hole = t.add(font, "filler")
    t.nodes[hole].child_count = 1  # the combo box the tree does not reach: it is elsewhere
    deck = t.add(w, "panel", "Properties")  # a whole deck: the field lies in it, no more
    t.nodes[t.add(deck, "filler")].child_count = 1
    t.add(w, "panel", "Empty")  # named, but no widget missing in it: no place of anything
    field = t.add(w, "text", value="Liberation Serif")
    side = t.add(w, "text", value="12 pt")
    assert field_places.placeholders(t.nodes) == [font, deck]
    t.nodes[font].extents = (267, 67, 206, 34)
    t.nodes[deck].extents = (800, 100, 400, 600)
    t.nodes[field].extents = (271, 69, 168, 30)
    t.nodes[side].extents = (900, 300, 100, 30)
    field_places.name_by_place(t.nodes, [field, side], [font, deck])
    assert t.nodes[field].name == "Font Name"
    assert t.nodes[side].name == ""


def test_a_walked_toolbar_item_places_the_field_below_it_and_no_other_container_does() -> None:
    """A walk reaches LibreOffice's GTK combo box through the toolbar item listing it as its
    child: the item is its place all the same. GTK's file chooser keeps its unnamed location
    entry in a group named "Location Layer": that group names nothing."""
    from deskpilot.host.atspi import field_places

    t = Tree()
    w = t.add(-1, "frame", "W")
    bar = t.add(w, "tool bar", "Formatting")
    font = t.add(bar, "panel", "Font Name")
    combo = t.add(t.add(font, "filler"), "combo box")
    t.add(combo, "text", value="Liberation Serif")
    layer = t.add(t.add(w, "panel", "Browse Header Stack"), "panel", "Location Layer")
    t.add(layer, "text", value="")
    assert field_places.placeholders(t.nodes) == [font]


# ---------------------------------------------------------------------------- the title


def test_the_header_titles_the_window_as_the_tree_read_with_it_does() -> None:
    """The X title is what the window manager was last told; the tree's root is read now."""
    from deskpilot.host.accessibility import TreeResult
    from deskpilot.host.atspi.model import FrameInfo, NodeRef, TreeSnapshot
    from deskpilot.host.observer import titled
    from deskpilot.protocol.wire import AppIdentity, Rect, Truncation, WindowInfo

    rect = Rect(x=0, y=0, width=10, height=10)
    info = WindowInfo(
        window_id="0x1", title="todo.txt - Text Editor", bounds=rect, visible=True,
        minimized=False, focused=True, app=AppIdentity(pid=1),
    )  # fmt: skip
    frame = FrameInfo(NodeRef(":1.1", "/f"), 1, "gte", "x", "window", "frame", rect, frozenset())

    def tree(title: str, stale: float | None = None) -> TreeResult:
        snap = TreeSnapshot("", "v", 0, {}, Truncation(), [], None, None, title=title)
        return TreeResult(snap, frame, 1.0, stale_age_ms=stale)

    assert titled(info, tree("• todo.txt - Text Editor")).title == "• todo.txt - Text Editor"
    assert titled(info, tree("")).title == "todo.txt - Text Editor"  # a root with no name
    assert titled(info, tree("old", stale=900.0)).title == "todo.txt - Text Editor"
    assert titled(info, None).title == "todo.txt - Text Editor"
