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
  tree has no elements at all (nothing known is there), an element or a point of a visual
  (OCR) tree, keys or text with no window.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from deskpilot.kernel.policy import signals as sig
from deskpilot.kernel.policy.action_rules import (
    ActionDraft,
    rate_action,
    settle_credentials,
    settle_visual,
)
from deskpilot.protocol.session import DataClass, EffectClass, TargetKind
from deskpilot.protocol.tree import ElementTree, TreeElement, parse_tree
from deskpilot.protocol.wire import Action, AppIdentity, Observation

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
    """A page URL, a browser app, or a web document in the tree makes this a browser page,
    whose text fields can submit a web form (docs/policy.md, "The context producer")."""
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


def policy_context_for(action: Action, obs: Observation) -> PolicyContext:
    """Rate ``action`` on the screen ``obs`` shows (docs/policy.md, "The context producer"):
    identify the app and page, run the action kind's rules, then the visual-tree and the
    credential rules."""
    tree = parse_tree(obs.tree)
    browser = _is_browser(obs, tree)
    d = ActionDraft(obs, tree, browser)
    rate_action(d, action)
    settle_visual(d)
    settle_credentials(d)
    return PolicyContext(
        kind=action.kind,
        effect=d.effect,
        target_kind=d.target,
        data_classes=frozenset(DataClass(x) for x in d.data),
        text_write=d.text_write,
        sensitive_target=d.sensitive,
        app=obs.app,
        url=obs.url,
        host=_host(obs.url),
        is_browser=browser,
        signals=tuple(dict.fromkeys(d.facts)),
        target_label=None if d.element is None else _label(d.element),
    )
