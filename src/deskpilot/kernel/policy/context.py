"""The policy context producer: effect class, target kind and data classes from real signals.

Inputs are what the broker really has before an action runs: the action itself and the
session's current observation (its rendered tree, app identity, window, page URL and the
sensitive regions the host reported). Every effect class and target kind can come out of here
from a real screen (a producer that never yields high_impact, restricted or unknown would
leave those rules dead):

* restricted (L4): text written into a password/secure field, or into a point inside a
  sensitive region; text that looks like a secret anywhere; any non-read action in a
  credential app (keyring, password manager, polkit agent: the vault's exact-identity list).
* high_impact (L3): activating a destructive control (delete/remove/erase/format/…) inside a
  dialog or alert, or an irreversible one (erase/format/wipe/permanently/…) anywhere;
  shift+Delete.
* external_write (L2): activating a send/submit/post/publish/pay/purchase… control; Enter (or
  text ending in a newline) in a text field of a web page; Enter while such a control has focus.
* unknown target: an element id the current tree does not have, coordinates on a window whose
  tree has no elements at all (nothing known is there), keys or text with no window.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from deskpilot.kernel.policy import signals as sig
from deskpilot.protocol.privacy import blocked_identity
from deskpilot.protocol.session import DataClass, EffectClass, TargetKind
from deskpilot.protocol.tree import ElementTree, TreeElement, parse_tree
from deskpilot.protocol.wire import (
    Action,
    AppIdentity,
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

BROWSER_EXECUTABLES = frozenset(
    {
        "chromium",
        "chromium-browser",
        "chrome",
        "google-chrome",
        "google-chrome-stable",
        "firefox",
        "firefox-esr",
        "brave",
        "brave-browser",
        "microsoft-edge",
        "epiphany",
        "vivaldi",
        "opera",
        "falkon",
        "konqueror",
        "qutebrowser",
    }
)


@dataclass(frozen=True, slots=True)
class PolicyContext:
    kind: str
    effect: EffectClass
    target_kind: TargetKind
    data_classes: frozenset[DataClass]
    #: text goes into the UI (type_text, paste_text, set_value with a string)
    text_write: bool
    #: the target is a password/secure field or lies in a sensitive region
    sensitive_target: bool
    app: AppIdentity
    url: str | None
    host: str | None
    is_browser: bool
    #: named facts behind the rating, e.g. "destructive_control_in_dialog"
    signals: tuple[str, ...] = field(default_factory=tuple)
    #: role and name of the target element; never its value or any typed text
    target_label: str | None = None


def _is_browser(obs: Observation, tree: ElementTree) -> bool:
    if obs.url:
        return True
    app = obs.app
    names = {(app.executable or "").lower(), (app.name or "").lower()}
    names |= {p.lower() for p in (app.wm_class or "").split("\0") if p}
    if names & BROWSER_EXECUTABLES:
        return True
    return any(e.key in sig.DOCUMENT_ROLES and e.key != "document" for e in tree.elements.values())


def _host(url: str | None) -> str | None:
    if not url:
        return None
    try:
        return urlsplit(url).hostname
    except ValueError:
        return None


def _label(e: TreeElement) -> str:
    return f'{e.role} "{e.name}"' if e.name else e.role


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


def policy_context_for(action: Action, obs: Observation) -> PolicyContext:
    tree = parse_tree(obs.tree)
    browser = _is_browser(obs, tree)
    facts: list[str] = []
    data: set[str] = set()
    effect = EffectClass.REVERSIBLE_LOCAL
    target = TargetKind.ELEMENT
    text_write = False
    sensitive = False
    element: TreeElement | None = None
    has_window = bool(obs.window.window_id) and obs.window.bounds.width > 0

    def resolve(element_id: int | None) -> TreeElement | None:
        nonlocal target
        if element_id is None:
            return None
        found = tree.get(element_id)
        if found is None:
            target = TargetKind.UNKNOWN
            facts.append("element_not_in_tree")
        return found

    def at_point(p: Point | None) -> None:
        nonlocal target, sensitive
        if p is None:
            return
        target = TargetKind.COORDINATES
        if len(tree) == 0 or not has_window:
            target = TargetKind.UNKNOWN
            facts.append("coordinates_on_unknown_surface")
        if _point_in_sensitive(obs, p):
            sensitive = True
            facts.append("point_in_sensitive_region")

    match action:
        case ScrollAction():
            effect = EffectClass.READ_ONLY
            element = resolve(action.element_id)
            if action.element_id is None:
                target = TargetKind.WINDOW if action.point is None else target
                at_point(action.point)
        case FocusWindowAction():
            target = TargetKind.WINDOW if has_window else TargetKind.UNKNOWN
        case SelectTextAction():
            element = resolve(action.element_id)
        case ClickAction():
            element = resolve(action.element_id)
            if action.element_id is None:
                at_point(action.point)
                if action.point is None:
                    target = TargetKind.UNKNOWN
                    facts.append("click_without_target")
            elif element is not None and action.button == "left":
                effect = _control_effect(tree, element, facts)
        case InvokeElementAction():
            element = resolve(action.element_id)
            if element is not None:
                effect = _control_effect(tree, element, facts, action.action)
        case SecondaryAction():
            element = resolve(action.element_id)
        case DragAction():
            target = TargetKind.COORDINATES
            at_point(action.start)
            at_point(action.end)
        case TypeTextAction() | PasteTextAction() | SetValueAction():
            text_write = not (
                isinstance(action, SetValueAction) and not isinstance(action.value, str)
            )
            element = resolve(action.element_id)
            if action.element_id is None:
                element = tree.focused()
                if element is None:
                    target = TargetKind.WINDOW if has_window else TargetKind.UNKNOWN
            text = str(action.value) if isinstance(action, SetValueAction) else action.text
            if text_write:
                data |= sig.text_data_classes(text) or {"public"}
            if element is not None:
                if _is_secure_field(element):
                    sensitive = True
                    facts.append("credential_field")
                    data.add("credential")
                data |= sig.field_data_classes(element.name)
                if (
                    "\n" in text
                    and browser
                    and (element.key in sig.TEXT_ROLES)
                    and _in_web_content(tree, element)
                ):
                    effect = EffectClass.EXTERNAL_WRITE
                    facts.append("enter_submit_in_web_form")
            if "credential" in data and "credential_field" not in facts:
                facts.append("secret_like_text")
        case PressKeyAction():
            focused = tree.focused()
            element = focused
            if focused is None:
                target = TargetKind.WINDOW if has_window else TargetKind.UNKNOWN
            for chord in action.keys:
                mods, key = sig.chord_parts(chord)
                if key in sig.ENTER_KEYS and focused is not None:
                    if focused.key in sig.CONTROL_ROLES:
                        effect = _max_effect(effect, _control_effect(tree, focused, facts))
                    elif (
                        browser and focused.key in sig.TEXT_ROLES and _in_web_content(tree, focused)
                    ):
                        effect = _max_effect(effect, EffectClass.EXTERNAL_WRITE)
                        facts.append("enter_submit_in_web_form")
                if key == "delete" and "shift" in mods:
                    effect = _max_effect(effect, EffectClass.HIGH_IMPACT)
                    facts.append("permanent_delete_shortcut")
                if focused is not None and _is_secure_field(focused) and sig.writes_text(chord):
                    # keys typed (or pasted) into a password field are a credential write,
                    # exactly like type_text into it
                    text_write = True
                    sensitive = True
                    data.add("credential")
                    if "credential_field" not in facts:
                        facts.append("credential_field")
        case _:
            pass

    if text_write and sensitive and "credential" not in data:
        data.add("credential")
    if "credential" in data:
        data.discard("public")  # a secret is not public just because nothing else matched
    if text_write and "credential" in data:
        effect = _max_effect(effect, EffectClass.RESTRICTED)
    credential_app = blocked_identity(obs.app)
    if credential_app is not None and effect != EffectClass.READ_ONLY:
        effect = EffectClass.RESTRICTED
        data.add("credential")
        facts.append("credential_app")

    return PolicyContext(
        kind=action.kind,
        effect=effect,
        target_kind=target,
        data_classes=frozenset(DataClass(d) for d in data),
        text_write=text_write,
        sensitive_target=sensitive,
        app=obs.app,
        url=obs.url,
        host=_host(obs.url),
        is_browser=browser,
        signals=tuple(dict.fromkeys(facts)),
        target_label=None if element is None else _label(element),
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
