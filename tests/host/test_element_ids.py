"""The id book's rules (host/atspi/element_ids.py), on rendered trees built by hand: the
rendering numbers lines, the book gives each element the id it had before."""

from __future__ import annotations

import dataclasses

from deskpilot.host.atspi import element_ids
from deskpilot.host.atspi.element_ids import ElementIds, IdBook
from deskpilot.host.atspi.model import ElementRef, NodeRef, OpaqueRegion, TreeSnapshot
from deskpilot.host.atspi.snapshot import tree_version
from deskpilot.protocol.wire import Rect, Truncation

BUS = ":1.42"
PUSH_BUTTON, LABEL, FRAME = 43, 29, 23


def _el(line_id: int, path: str, role: int, parent: int | None, **kw: object) -> ElementRef:
    return ElementRef(
        id=line_id,
        ref=NodeRef(BUS, f"/org/a11y/atspi/accessible/{path}"),
        pid=1,
        role="button" if role == PUSH_BUTTON else "label",
        atspi_role=role,
        name=path,
        states=frozenset(),
        interfaces=frozenset(),
        actions=(),
        extents=None,
        parent_id=parent,
        **kw,  # type: ignore[arg-type]
    )


def _snap(*rows: tuple[str, int, dict[str, object]]) -> TreeSnapshot:
    """A window and one element per row (path, role, extra fields), one line each."""
    lines = ['- window "W" [1]']
    elements = {1: _el(1, "root", FRAME, None)}
    for i, (path, role, kw) in enumerate(rows, start=2):
        lines.append(f'  - x "{path}" [{i}]')
        elements[i] = _el(i, path, role, 1, **kw)
    text = "\n".join(lines)
    return TreeSnapshot(
        text=text,
        tree_version=tree_version(text, len(elements)),
        element_count=len(elements),
        elements=elements,
        truncation=Truncation(),
        sensitive_regions=[],
        url=None,
        focused_id=len(elements),
    )


def _ids(snap: TreeSnapshot) -> dict[str, int]:
    return {e.name: i for i, e in snap.elements.items()}


def _b(path: str, **kw: object) -> tuple[str, int, dict[str, object]]:
    return (path, PUSH_BUTTON, kw)


def test_a_first_read_keeps_its_line_numbers() -> None:
    snap = _snap(_b("open"), _b("save"))
    out = IdBook().assign(snap)
    assert out is snap


def test_an_element_keeps_its_id_when_lines_appear_above_it() -> None:
    book = IdBook()
    book.assign(_snap(_b("open"), _b("save")))
    out = book.assign(_snap(_b("message"), _b("open"), _b("save")))
    assert _ids(out) == {"root": 1, "message": 4, "open": 2, "save": 3}
    # the text, the parents, the focus and the version follow the ids
    assert out.text.splitlines()[1:] == [
        '  - x "message" [4]',
        '  - x "open" [2]',
        '  - x "save" [3]',
    ]
    assert {e.parent_id for i, e in out.elements.items() if i != 1} == {1}
    assert all(e.id == i for i, e in out.elements.items())
    assert out.focused_id == 3
    assert out.tree_version == tree_version(out.text, out.element_count)


def test_an_opaque_region_names_its_element_by_its_kept_id() -> None:
    """Thunar's icon view draws its files without exposing them (atspi/opaque.py): the
    region says which element its text is shown under, by the id the agent sees."""
    book = IdBook()
    book.assign(_snap(_b("open"), _b("view")))
    where = Rect(x=0, y=0, width=10, height=10)
    moved = dataclasses.replace(
        _snap(_b("message"), _b("open"), _b("view")), opaque=(OpaqueRegion(4, 3, where),)
    )
    out = book.assign(moved)
    assert _ids(out)["view"] == 3
    assert out.opaque == (OpaqueRegion(3, 3, where),)


def test_an_id_of_a_gone_element_is_never_given_again() -> None:
    book = IdBook()
    book.assign(_snap(_b("open"), _b("save")))
    gone = book.assign(_snap(_b("save")))
    assert _ids(gone) == {"root": 1, "save": 3}
    back = book.assign(_snap(_b("new"), _b("save")))
    assert _ids(back)["new"] == 4  # not 2: that named "open"


def test_a_path_reused_for_an_object_of_another_role_is_another_element() -> None:
    book = IdBook()
    book.assign(_snap(_b("open")))
    out = book.assign(_snap(("open", LABEL, {})))
    assert _ids(out)["open"] == 3


def test_an_identity_names_an_element_whose_object_changed() -> None:
    """A sheet's cell is a new object at each read: its table and address name it."""
    book = IdBook()
    cell = ("table", "B3")
    book.assign(_snap(_b("cell-1", identity=cell), _b("other")))
    out = book.assign(_snap(_b("top"), _b("cell-2", identity=cell)))
    assert _ids(out)["cell-2"] == 2


def test_two_elements_with_one_identity_get_two_ids() -> None:
    book = IdBook()
    out = book.assign(_snap(_b("a", identity=("x",)), _b("b", identity=("x",))))
    assert sorted(_ids(out).values()) == [1, 2, 3]
    again = book.assign(_snap(_b("a", identity=("x",)), _b("b", identity=("x",))))
    assert _ids(again)["a"] == 2  # the first keeps its id


def test_a_tree_served_again_is_translated_once_and_keeps_its_identities_alive() -> None:
    book = IdBook()
    book.assign(_snap(_b("open"), _b("save")))
    moved = _snap(_b("message"), _b("open"), _b("save"))
    first = book.assign(moved)
    for _ in range(element_ids.FORGET_AFTER + 8):
        served = book.assign(moved)  # the tree cache's hit: the same text and elements
        assert served.elements is first.elements and served.text is first.text
    # the identities were seen on every hit: a fresh read gives the same ids
    fresh = book.assign(_snap(_b("message"), _b("open"), _b("save")))
    assert _ids(fresh) == _ids(first)


def test_identities_not_seen_for_long_are_forgotten_never_reused() -> None:
    book = IdBook()
    book.assign(_snap(*[_b(f"old{i}") for i in range(10)]))
    for i in range(element_ids.FORGET_AFTER + 16):
        book.assign(_snap(_b(f"tick{i % 2}")))
    out = book.assign(_snap(_b("old0")))
    assert _ids(out)["old0"] > 11  # a new number: its old id is never given again


def test_each_window_has_its_own_book() -> None:
    ids = ElementIds()
    a, b = NodeRef(BUS, "/a"), NodeRef(BUS, "/b")
    ids.assign(a, _snap(_b("open"), _b("save")))
    assert _ids(ids.assign(b, _snap(_b("x"), _b("y")))) == {"root": 1, "x": 2, "y": 3}
    assert _ids(ids.assign(a, _snap(_b("m"), _b("save"))))["save"] == 3
