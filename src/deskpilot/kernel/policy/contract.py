"""Enforce the task contract: every field of the contract is read, and each can deny here.

Each check returns a reason code or None. Matching rules:

* allowedApps: exact, case-insensitive match against any identity of the observed app
  (executable basename, desktop id with or without ``.desktop``, each WM_CLASS part, the
  accessibility name): the same identity rule the vault uses, never a substring.
* allowedDomains: for a browser, the page URL's host must equal an entry or, for an entry
  ``*.example.com``, end with ``.example.com`` (the apex needs its own entry). A browser page
  whose URL the tree does not expose is denied (``domain_unknown``): fail closed. Non-web
  schemes other than ``about:blank`` are denied.
* allowedDataClasses: every data class the action carries must be allowed.
* forbiddenActions: an action kind (``click``), an effect class (``external_write``), a target
  kind prefixed ``target:`` (``target:unknown``), or a key chord prefixed ``key:``
  (``key:ctrl+q``).
"""

from __future__ import annotations

from collections.abc import Iterable

from deskpilot.kernel.policy import signals as sig
from deskpilot.kernel.policy.context import PolicyContext
from deskpilot.protocol.privacy import identity_candidates
from deskpilot.protocol.session import TaskContract
from deskpilot.protocol.wire import Action, PressKeyAction


def app_allowed(ctx: PolicyContext, allowed: list[str]) -> bool:
    if not allowed:
        return True
    wanted = {a.strip().lower() for a in allowed if a.strip()}
    have = identity_candidates(ctx.app)
    if ctx.app.desktop_id:
        have.add(ctx.app.desktop_id.lower().removesuffix(".desktop"))
    return bool(wanted & have)


def domain_reason(ctx: PolicyContext, allowed: list[str]) -> str | None:
    if not allowed or not ctx.is_browser:
        return None
    if ctx.url is None:
        return "domain_unknown"
    if ctx.url.strip().lower() == "about:blank":
        return None
    if ctx.host is None:
        return "domain_not_allowed"
    host = ctx.host.lower().rstrip(".")
    for entry in allowed:
        e = entry.strip().lower().rstrip(".")
        if e.startswith("*."):
            if host.endswith(e[1:]):
                return None
        elif host == e:
            return None
    return "domain_not_allowed"


def forbidden(action: Action, ctx: PolicyContext, forbidden_actions: list[str]) -> str | None:
    """The contract entry that forbids this action, if any."""
    if not forbidden_actions:
        return None
    keys: list[tuple[frozenset[str], str]] = []
    if isinstance(action, PressKeyAction):
        keys = [sig.chord_parts(k) for k in action.keys]
    for entry in forbidden_actions:
        e = entry.strip()
        low = e.lower()
        if low in (ctx.kind, ctx.effect.value):
            return e
        if low.startswith("target:") and low[7:] == ctx.target_kind.value:
            return e
        if low.startswith("key:") and sig.chord_parts(low[4:]) in keys:
            return e
    return None


def forbidden_entry(forbidden_actions: list[str], names: Iterable[str]) -> str | None:
    """The contract entry naming one of ``names`` (compared whole, case-insensitive), for the
    actions outside every window (a launch, a shell command) whose keys are fixed names."""
    lowered = {f.strip().lower(): f.strip() for f in forbidden_actions}
    return next((lowered[n] for n in names if n in lowered), None)


def contract_reason(
    action: Action, ctx: PolicyContext, contract: TaskContract, settings_allowed_apps: list[str]
) -> tuple[str, dict[str, str]] | None:
    """The first contract denial as (reason code, details), or None when the contract allows."""
    entry = forbidden(action, ctx, contract.forbidden_actions)
    if entry is not None:
        return "forbidden_action", {"entry": entry}
    if not app_allowed(ctx, contract.allowed_apps):
        return "app_not_allowed", {"app": _app_label(ctx), "source": "contract"}
    if not app_allowed(ctx, settings_allowed_apps):
        return "app_not_allowed", {"app": _app_label(ctx), "source": "settings"}
    domain = domain_reason(ctx, contract.allowed_domains)
    if domain is not None:
        return domain, {"host": ctx.host or ""}
    refused = sorted(c.value for c in ctx.data_classes if c not in contract.allowed_data_classes)
    if refused:
        return "data_class_not_allowed", {"dataClasses": ",".join(refused)}
    return None


def _app_label(ctx: PolicyContext) -> str:
    app = ctx.app
    return app.executable or app.name or app.wm_class or app.desktop_id or "unknown"
