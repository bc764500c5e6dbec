"""``accessibility`` specs: an assertion about the elements an AND selector picks in the tree.

Match policy (``match``, default ``any`` for every assertion):

* ``any`` — passes when at least one matching element satisfies the assertion;
* ``all`` — passes when there is at least one match and every match satisfies it;
* ``only`` — passes when exactly one element matches and it satisfies it (``exists`` with
  ``only`` = exactly one match); a duplicate fails it.

Each element answers True, False or None (e.g. ``value_equals`` on a value the host cut at 200
characters). A tree that is incomplete (truncated, elided, unreadable) can prove a presence but
not an absence, nor that every or only one element matched: those answers become undecidable.
What the states mean comes from the host's renderer: hidden subtrees are not rendered (so a
rendered element is visible unless it or the window is minimized), ``disabled`` marks an
interactive element neither sensitive nor enabled, ``focused`` the focus.
"""

from __future__ import annotations

from deskpilot.protocol.tree import TreeElement, role_key
from deskpilot.protocol.verification import (
    AccessibilityAssertion,
    AccessibilitySpec,
    ElementSelector,
    MatchPolicy,
)
from deskpilot.protocol.wire import ObservationBody

from .evidence import LISTED, Outcome, passed, undecidable
from .text import TreeView, contains, element_line, element_texts, tree_view, was_cut


def selects(view: TreeView, element: TreeElement, sel: ElementSelector) -> bool:
    """Every condition of the selector holds for the element (an AND)."""
    if sel.role is not None and element.key != role_key(sel.role):
        return False
    if sel.name is not None and not _name_equals(element.name, sel.name):
        return False
    if sel.name_contains is not None and not contains(element.name, sel.name_contains):
        return False
    if any(role_key(s) not in element.states for s in sel.states):
        return False
    if any(role_key(s) in element.states for s in sel.not_states):
        return False
    if sel.inside is not None:
        inside = sel.inside
        return any(selects(view, a, inside) for a in view.tree.ancestors(element))
    return True


def _name_equals(shown: str, wanted: str) -> bool:
    shown, wanted = shown.strip(), wanted.strip()
    if shown == wanted:
        return True
    # a name the host cut: the shown 200 characters are all that can be compared
    return was_cut(shown) and wanted.startswith(shown[:-1])


def _value_equals(element: TreeElement, expected: str) -> bool | None:
    if "secure" in element.states:
        return None  # a password field's value is never read, let alone rendered
    value = element.value
    if value is None:
        return False
    if value == expected:
        return True
    if was_cut(value) and expected.startswith(value[:-1]):
        return None  # equal as far as shown; the rest was cut by the host
    try:  # a slider's "50.0" is the expected "50"
        return float(value) == float(expected)
    except ValueError:
        return False


def _text_contains(view: TreeView, element: TreeElement, expected: str) -> bool | None:
    texts = element_texts(element)
    for d in view.descendants(element):
        texts.extend(element_texts(d))
    if any(contains(t, expected) for t in texts):
        return True
    if not view.complete or any(was_cut(t) for t in texts):
        return None  # the text may be in what the host did not show
    return False


def _holds(
    view: TreeView, obs: ObservationBody, element: TreeElement, spec: AccessibilitySpec
) -> bool | None:
    a = spec.assertion
    if a == AccessibilityAssertion.EXISTS:
        return True
    if a == AccessibilityAssertion.VISIBLE:
        if obs.window.minimized or not obs.window.visible:
            return False
        chain = [element, *view.tree.ancestors(element)]
        return not any("minimized" in e.states for e in chain)
    if a == AccessibilityAssertion.ENABLED:
        return "disabled" not in element.states
    if a == AccessibilityAssertion.FOCUSED:
        return "focused" in element.states
    if a == AccessibilityAssertion.VALUE_EQUALS:
        return _value_equals(element, spec.expected or "")
    return _text_contains(view, element, spec.expected or "")


def _combine(
    policy: MatchPolicy, answers: list[bool | None], complete: bool
) -> tuple[bool | None, str]:
    """The policy over the per-element answers; the string says how it was decided."""
    n = len(answers)
    if policy == MatchPolicy.ANY:
        if any(x is True for x in answers):
            return True, "a matching element satisfies the assertion"
        if any(x is None for x in answers) or not complete:
            return None, "no match satisfies it as far as the tree shows"
        return False, "no matching element" if n == 0 else "no match satisfies the assertion"
    if policy == MatchPolicy.ALL:
        if any(x is False for x in answers):
            return False, "a matching element does not satisfy the assertion"
        if n == 0:
            return (False, "no matching element") if complete else (None, "no match shown")
        if any(x is None for x in answers) or not complete:
            return None, "every shown match satisfies it; the tree is not complete"
        return True, "every matching element satisfies the assertion"
    # ONLY
    if n > 1:
        return False, f"{n} elements match, not exactly one"
    if n == 0:
        return (False, "no matching element") if complete else (None, "no match shown")
    if answers[0] is False:
        return False, "the only match does not satisfy the assertion"
    if answers[0] is None or not complete:
        return None, "one match shown; the tree is not complete"
    return True, "exactly one element matches and satisfies the assertion"


def check_accessibility(spec: AccessibilitySpec, obs: ObservationBody | None) -> Outcome:
    if obs is None:
        return undecidable("no observation of the target window")
    view = tree_view(obs)
    if view.empty:
        return undecidable(
            "the window has no accessibility tree", elementCount=0, **view.completeness()
        )
    matches = [e for e in view.elements if selects(view, e, spec.selector)]
    answers = [_holds(view, obs, e, spec) for e in matches]
    verdict, how = _combine(spec.match, answers, view.complete)
    evidence = {
        "match": spec.match.value,
        "matched": len(matches),
        "satisfied": sum(1 for x in answers if x is True),
        "elements": [element_line(e) for e in matches[:LISTED]],
        "decidedBy": how,
        **view.completeness(),
    }
    if verdict is None:
        return undecidable(how, **evidence)
    return passed(verdict, **evidence)
