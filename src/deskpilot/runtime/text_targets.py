"""Where typed text can go: ``type_text`` and ``paste`` into something that cannot take text, and
``set_value`` on a read-only text field, are refused before anything is dispatched.

Typing "into" a page's static text used to focus the label (GrabFocus, else a click on it)
and send the keys to whatever had the focus: the browser's tab strip reacted. A careful
person types only into something that takes text, so the runtime checks the target in the
state's tree — the one the agent acted on — before the state_id is spent, the kernel asked or
the host told anything: a refusal costs nothing and changes nothing on the desktop.

The tree is the host's rendering (docs/host-tree.md), read back by the policy's parser
(``protocol/tree.py``): ``[editable]`` marks an editable
element of any role, ``[readonly]`` a text field that is read only or not editable. An
element takes text when it is not ``[disabled]`` and it is

* a text or password field that is not ``[readonly]``;
* shown ``[editable]`` (contenteditable text and sections, documents in edit mode, editable
  spin buttons and combo boxes);
* a terminal;
* a combo box with a text field inside (GTK 3's combo box with an entry).

``type_text`` without ``element_id`` types into the focused element, so that one must take
text; when nothing in a complete tree is focused the keys go wherever the app sends them in
the window deskpilot focuses, and the call is not refused. With ``x`` and ``y`` the point is
clicked first, and the agent has said where the text goes.

**Keys with nowhere known to go** (``check_keys_target``, reason ``focus_unknown``). A state
whose tree is not a whole accessibility tree — cut at the read's deadline, none at all, or
an OCR outline of the screenshot — and shows no focused element
cannot say where keys would go: into whatever the app has focused (a LibreOffice sheet with
no tree took an agent's text into some cell, and the result said nothing changed). So
``type_text``, ``paste`` and ``press_key`` without ``element_id`` or a point are refused
there, before anything is sent; with one, that element is focused (else clicked) or that
point clicked first, as a person clicks where they mean to type. A terminal (the app is a
terminal emulator: runtime's ``is_terminal``) takes every key in its one grid of text: its
keys always have a place. A stopped app's last tree (``stale=``) is a whole tree: what it
shows focused, or that nothing was, is what is known, as with a tree read now.

The refusal points at the element that would take the text — a focused one that does, else
the one nearest the target in the tree (fewest steps through common ancestors, then the
closest line), else it says there is none — by element id and role only: a diagnostic carries
no UI text (runtime/diagnostics.py), and the agent has the names in the tree it acted on.
"""

from __future__ import annotations

from deskpilot.protocol.errors import ErrorCode
from deskpilot.protocol.tree import TreeElement, parse_tree
from deskpilot.runtime.refusals import REASON_ADVICE, refusal
from deskpilot.runtime.state_ids import StateRecord
from deskpilot.vision.outline import is_terminal

#: rendered roles that take text unless they are [readonly]
TEXT_FIELD_ROLES = frozenset({"textField", "passwordField"})
#: rendered roles that take typed keys whatever their states say
TERMINAL_ROLES = frozenset({"terminal"})
#: rendered roles that take text when a text field sits inside them (an entry combo box)
ENTRY_CONTAINER_ROLES = frozenset({"comboBox"})
REASON = "not_editable"
READ_ONLY = "read_only"
FOCUS_UNKNOWN = "focus_unknown"


def takes_text(node: TreeElement, nodes: dict[int, TreeElement]) -> bool:
    """Whether typing into ``node`` puts text into it (the rules in the module docstring)."""
    if "disabled" in node.states:
        return False  # runtime/enabled_targets.py: nothing is sent to it
    if node.role in TEXT_FIELD_ROLES:
        return "readonly" not in node.states
    if "editable" in node.states or node.role in TERMINAL_ROLES:
        return True
    if node.role in ENTRY_CONTAINER_ROLES:
        return any(
            n.parent == node.id and n.role in TEXT_FIELD_ROLES and "readonly" not in n.states
            for n in nodes.values()
        )
    return False


def check_text_target(tree: str, element_id: int | None, tool: str) -> None:
    """Refuse (``unsupported_action``, ``details.reason = "not_editable"``) a ``type_text`` or
    ``paste`` whose text would not go into an element that takes it."""
    nodes = parse_tree(tree).elements
    if element_id is not None:
        target = nodes.get(element_id)
        if target is None or takes_text(target, nodes):
            return
        subject = f"Element {element_id} ({target.role})"
    else:
        focused = [n for n in nodes.values() if "focused" in n.states]
        if not focused or any(takes_text(n, nodes) for n in focused):
            return
        target = focused[0]
        subject = f"The focused element {target.id} ({target.role})"
    why = "it is read only" if target.role in TEXT_FIELD_ROLES else "it is not an editable field"
    suggestion = nearest_text_target(nodes, target)
    if suggestion is None:
        where = "No element in this state takes text."
    else:
        where = (
            f"The element that would take it is {suggestion.id} ({suggestion.role}): "
            f"{tool} with element_id={suggestion.id}."
        )
    raise refusal(
        ErrorCode.UNSUPPORTED_ACTION,
        f"{subject} cannot take typed text ({why}); nothing was typed "
        f"and the state_id is still valid. {where} {REASON_ADVICE[REASON]}",
        reason=REASON,
        elementId=target.id,
        role=target.role,
        suggestedElementId=suggestion.id if suggestion is not None else None,
    )


def check_keys_target(record: StateRecord, tool: str) -> None:
    """Refuse (``unsupported_action``, ``details.reason = "focus_unknown"``) keys without an
    element or a point on a state that cannot show where they would go (see the module
    docstring)."""
    if record.tree_complete or is_terminal(record.app_identity):
        return
    if any("focused" in n.states for n in parse_tree(record.tree).elements.values()):
        return
    raise refusal(
        ErrorCode.UNSUPPORTED_ACTION,
        f"This state's tree is not a whole accessibility tree (its header says why: "
        f"partial, unavailable or visual) and shows no focused element, so it cannot "
        f"say where {tool}'s keys would go: into whatever the app has focused. Nothing was "
        f"sent and the state_id is still valid. {REASON_ADVICE[FOCUS_UNKNOWN]}",
        reason=FOCUS_UNKNOWN,
    )


def check_value_target(tree: str, element_id: int) -> None:
    """Refuse (``unsupported_action``, ``details.reason = "read_only"``) a ``set_value`` on a
    text field shown ``[readonly]``: a person cannot change it, and some toolkits (Qt) let
    ``EditableText`` overwrite it anyway."""
    target = parse_tree(tree).elements.get(element_id)
    if target is None or target.role not in TEXT_FIELD_ROLES or "readonly" not in target.states:
        return
    raise refusal(
        ErrorCode.UNSUPPORTED_ACTION,
        f"Element {element_id} ({target.role}) is read only: its value cannot be set; nothing "
        f"was changed and the state_id is still valid. {REASON_ADVICE[READ_ONLY]}",
        reason=READ_ONLY,
        elementId=element_id,
        role=target.role,
    )


def nearest_text_target(nodes: dict[int, TreeElement], anchor: TreeElement) -> TreeElement | None:
    """The element that takes text nearest ``anchor``: a focused one first, else the fewest
    steps through their common ancestor (a field beside a label beats the browser's address
    bar), then the closest line; None when nothing takes text."""
    candidates = [n for n in nodes.values() if n.id != anchor.id and takes_text(n, nodes)]
    if not candidates:
        return None
    focused = [n for n in candidates if "focused" in n.states]
    if focused:
        return focused[0]
    mine = _ancestors(nodes, anchor)
    return min(candidates, key=lambda n: (_steps(nodes, mine, n), abs(n.id - anchor.id), n.id))


def _ancestors(nodes: dict[int, TreeElement], node: TreeElement) -> list[int]:
    """The node's id and its ancestors' ids, itself first."""
    chain = [node.id]
    parent = node.parent
    while parent is not None and parent in nodes:
        chain.append(parent)
        parent = nodes[parent].parent
    return chain


def _steps(nodes: dict[int, TreeElement], anchor_chain: list[int], other: TreeElement) -> int:
    """Edges between the anchor and ``other`` through their lowest common ancestor."""
    theirs = _ancestors(nodes, other)
    common = set(theirs)
    for up, ancestor in enumerate(anchor_chain):
        if ancestor in common:
            return up + theirs.index(ancestor)
    return len(anchor_chain) + len(theirs)
