"""Rate a desktop action against the current tree: target kind, effect class, data classes.

The steps behind ``policy_context_for`` (policy/context.py), one per decision, each filling in
an ``ActionDraft``. Which real signal yields which effect, target kind and signal name is the
table in docs/policy.md, "The context producer"; the signals are named in the order they are
found, so each step keeps the order of its checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from deskpilot.kernel.policy import signals as sig
from deskpilot.protocol.privacy import blocked_identity
from deskpilot.protocol.session import EffectClass, TargetKind
from deskpilot.protocol.tree import ElementTree, TreeElement
from deskpilot.protocol.wire import (
    Action,
    ClickAction,
    DragAction,
    FocusWindowAction,
    InvokeElementAction,
    Observation,
    PasteTextAction,
    Point,
    PressKeyAction,
    ScrollAction,
    SecondaryAction,
    SelectTextAction,
    SetValueAction,
    TypeTextAction,
)


@dataclass(slots=True)
class ActionDraft:
    """The context while it is being decided: what the steps below have found so far.

    Defaults are the baseline of docs/policy.md: a ``reversible_local`` action on an element,
    writing no text, with no data classes and no signals until a step finds one."""

    obs: Observation
    tree: ElementTree
    browser: bool
    has_window: bool = field(init=False)
    effect: EffectClass = EffectClass.REVERSIBLE_LOCAL
    target: TargetKind = TargetKind.ELEMENT
    text_write: bool = False
    sensitive: bool = False
    element: TreeElement | None = None
    facts: list[str] = field(default_factory=list)
    data: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.has_window = bool(self.obs.window.window_id) and self.obs.window.bounds.width > 0


def rate_action(d: ActionDraft, action: Action) -> None:
    """Run the step for the action's kind; an action kind not listed keeps the baseline."""
    match action:
        case ScrollAction():
            _rate_scroll(d, action)
        case FocusWindowAction():
            d.target = _window_or_unknown(d)
        case SelectTextAction():
            d.element = _resolve_element(d, action.element_id)
        case ClickAction():
            _rate_click(d, action)
        case InvokeElementAction():
            d.element = _resolve_element(d, action.element_id)
            if d.element is not None:
                d.effect = _control_effect(d.tree, d.element, d.facts, action.action)
        case SecondaryAction():
            d.element = _resolve_element(d, action.element_id)
        case DragAction():
            d.target = TargetKind.COORDINATES
            _locate_point(d, action.start)
            _locate_point(d, action.end)
        case TypeTextAction() | PasteTextAction() | SetValueAction():
            _rate_text_write(d, action)
        case PressKeyAction():
            _rate_keys(d, action)
        case _:
            pass


def settle_visual(d: ActionDraft) -> None:
    """On a visual tree (an OCR outline of a window with no accessibility tree,
    kernel/visual_tree.py) an element or a point is an ``unknown`` target (docs/policy.md:
    ``visual_tree``): OCR'd words are no controls (a "Send" or "Pay" button reads as text),
    so nothing known is there, exactly as on the tree-less window the outline stands in for
    (``coordinates_on_unknown_surface``). Keys and text sent to the window keep its rating."""
    if d.obs.tree_read.source != "visual":
        # an element of an accessibility tree read from its screenshot (the text a widget
        # draws but does not expose, kernel/opaque_text.py) is OCR'd text all the same
        if d.target is TargetKind.ELEMENT and d.element is not None and "ocr" in d.element.states:
            d.target = TargetKind.UNKNOWN
            d.facts.append("visual_tree")
        return
    if d.target in (TargetKind.ELEMENT, TargetKind.COORDINATES):
        d.target = TargetKind.UNKNOWN
        d.facts.append("visual_tree")


def settle_credentials(d: ActionDraft) -> None:
    """A credential write is ``restricted`` (L4), and so is any non-read action in a credential
    app (docs/policy.md, "The context producer"); a secret is never also ``public``."""
    if d.text_write and d.sensitive and "credential" not in d.data:
        d.data.add("credential")
    if "credential" in d.data:
        d.data.discard("public")  # a secret is not public just because nothing else matched
    if d.text_write and "credential" in d.data:
        d.effect = _max_effect(d.effect, EffectClass.RESTRICTED)
    credential_app = blocked_identity(d.obs.app)
    if credential_app is not None and d.effect != EffectClass.READ_ONLY:
        d.effect = EffectClass.RESTRICTED
        d.data.add("credential")
        d.facts.append("credential_app")


def _resolve_element(d: ActionDraft, element_id: int | None) -> TreeElement | None:
    """The element an id names; an id the current tree does not have is an ``unknown`` target
    (docs/policy.md: ``element_not_in_tree``)."""
    if element_id is None:
        return None
    found = d.tree.get(element_id)
    if found is None:
        d.target = TargetKind.UNKNOWN
        d.facts.append("element_not_in_tree")
    return found


def _locate_point(d: ActionDraft, p: Point | None) -> None:
    """A point is a ``coordinates`` target, ``unknown`` on a window whose tree has no elements
    (nothing known is there), and sensitive inside a sensitive region (docs/policy.md)."""
    if p is None:
        return
    d.target = TargetKind.COORDINATES
    if len(d.tree) == 0 or not d.has_window:
        d.target = TargetKind.UNKNOWN
        d.facts.append("coordinates_on_unknown_surface")
    if _point_in_sensitive(d.obs, p):
        d.sensitive = True
        d.facts.append("point_in_sensitive_region")


def _window_or_unknown(d: ActionDraft) -> TargetKind:
    """A window-level action (or keys/text with no focused element) targets the window; with no
    window it is an ``unknown`` target (docs/policy.md)."""
    return TargetKind.WINDOW if d.has_window else TargetKind.UNKNOWN


def _rate_scroll(d: ActionDraft, action: ScrollAction) -> None:
    """Scrolling is ``read_only``; its target is the element, the point, or else the window."""
    d.effect = EffectClass.READ_ONLY
    d.element = _resolve_element(d, action.element_id)
    if action.element_id is None:
        d.target = TargetKind.WINDOW if action.point is None else d.target
        _locate_point(d, action.point)


def _rate_click(d: ActionDraft, action: ClickAction) -> None:
    """A click targets an element or a point, and is ``unknown`` with neither; only a left click
    on an element activates it (docs/policy.md: "Activating means a left click …")."""
    d.element = _resolve_element(d, action.element_id)
    if action.element_id is None:
        _locate_point(d, action.point)
        if action.point is None:
            d.target = TargetKind.UNKNOWN
            d.facts.append("click_without_target")
    elif d.element is not None and action.button == "left":
        d.effect = _control_effect(d.tree, d.element, d.facts)


def _rate_text_write(
    d: ActionDraft, action: TypeTextAction | PasteTextAction | SetValueAction
) -> None:
    """Text goes into the named element or else the focused one; its data classes come from the
    text and the field, and a secret-looking text is ``secret_like_text`` (docs/policy.md)."""
    d.text_write = not (isinstance(action, SetValueAction) and not isinstance(action.value, str))
    d.element = _resolve_element(d, action.element_id)
    if action.element_id is None:
        d.element = d.tree.focused()
        if d.element is None:
            d.target = _window_or_unknown(d)
    text = str(action.value) if isinstance(action, SetValueAction) else action.text
    if d.text_write:
        d.data |= sig.text_data_classes(text) or {"public"}
    if d.element is not None:
        _rate_written_field(d, d.element, text)
    if "credential" in d.data and "credential_field" not in d.facts:
        d.facts.append("secret_like_text")


def _rate_written_field(d: ActionDraft, element: TreeElement, text: str) -> None:
    """What the field written into adds: a password field is a credential, a field's name gives
    data classes, and a newline in a web form's text field submits it (docs/policy.md)."""
    if _is_secure_field(element):
        d.sensitive = True
        d.facts.append("credential_field")
        d.data.add("credential")
    d.data |= sig.field_data_classes(element.name)
    if "\n" in text and _is_web_text_field(d, element):
        d.effect = EffectClass.EXTERNAL_WRITE
        d.facts.append("enter_submit_in_web_form")


def _rate_keys(d: ActionDraft, action: PressKeyAction) -> None:
    """Keys go to the focused element, or else to the window; each chord is rated in turn and
    the highest effect wins."""
    focused = d.tree.focused()
    d.element = focused
    if focused is None:
        d.target = _window_or_unknown(d)
    for chord in action.keys:
        _rate_chord(d, focused, chord)


def _rate_chord(d: ActionDraft, focused: TreeElement | None, chord: str) -> None:
    """Enter activates a focused control or submits a web form's text field; shift+Delete is
    ``high_impact``; a key that writes text into a password field is a credential write
    (docs/policy.md, "The context producer")."""
    mods, key = sig.chord_parts(chord)
    if key in sig.ENTER_KEYS and focused is not None:
        if focused.key in sig.CONTROL_ROLES:
            d.effect = _max_effect(d.effect, _control_effect(d.tree, focused, d.facts))
        elif _is_web_text_field(d, focused):
            d.effect = _max_effect(d.effect, EffectClass.EXTERNAL_WRITE)
            d.facts.append("enter_submit_in_web_form")
    if key == "delete" and "shift" in mods:
        d.effect = _max_effect(d.effect, EffectClass.HIGH_IMPACT)
        d.facts.append("permanent_delete_shortcut")
    if focused is not None and _is_secure_field(focused) and sig.writes_text(chord):
        # keys typed (or pasted) into a password field are a credential write,
        # exactly like type_text into it
        d.text_write = True
        d.sensitive = True
        d.data.add("credential")
        if "credential_field" not in d.facts:
            d.facts.append("credential_field")


def _control_effect(
    tree: ElementTree, e: TreeElement, facts: list[str], action_name: str | None = None
) -> EffectClass:
    """What activating control ``e`` does."""
    if action_name is not None and sig.role_key_like(action_name) in sig.NON_ACTIVATING_ACTIONS:
        return EffectClass.REVERSIBLE_LOCAL
    name = e.name
    if name and sig.DESTRUCTIVE_WORDS.search(name):
        if _in_dialog(tree, e):
            facts.append("destructive_control_in_dialog")
            return EffectClass.HIGH_IMPACT
        if sig.IRREVERSIBLE_WORDS.search(name):
            facts.append("irreversible_control")
            return EffectClass.HIGH_IMPACT
        facts.append("destructive_control")
    if name and sig.EXTERNAL_WORDS.search(name) and e.key in sig.CONTROL_ROLES:
        facts.append("external_write_control")
        return EffectClass.EXTERNAL_WRITE
    return EffectClass.REVERSIBLE_LOCAL


def _is_web_text_field(d: ActionDraft, e: TreeElement) -> bool:
    """A text field inside a web document or form of a browser page (docs/policy.md)."""
    return d.browser and e.key in sig.TEXT_ROLES and _in_web_content(d.tree, e)


def _in_dialog(tree: ElementTree, e: TreeElement) -> bool:
    return any(a.key in sig.DIALOG_ROLES for a in tree.ancestors(e))


def _in_web_content(tree: ElementTree, e: TreeElement) -> bool:
    return any(a.key in sig.DOCUMENT_ROLES | sig.FORM_ROLES for a in tree.ancestors(e))


def _is_secure_field(e: TreeElement) -> bool:
    return e.key in sig.PASSWORD_ROLES or bool(e.states & sig.SECURE_STATES)


def _point_in_sensitive(obs: Observation, p: Point) -> bool:
    """Sensitive regions are in screen coordinates, like the window bounds; the normalised
    window point is mapped onto the screen first."""
    b = obs.window.bounds
    x = b.x + p.x * b.width
    y = b.y + p.y * b.height
    return any(
        r.x <= x <= r.x + r.width and r.y <= y <= r.y + r.height for r in obs.sensitive_regions
    )


_ORDER = [
    EffectClass.READ_ONLY,
    EffectClass.REVERSIBLE_LOCAL,
    EffectClass.EXTERNAL_WRITE,
    EffectClass.HIGH_IMPACT,
    EffectClass.RESTRICTED,
]


def _max_effect(a: EffectClass, b: EffectClass) -> EffectClass:
    return a if _ORDER.index(a) >= _ORDER.index(b) else b
