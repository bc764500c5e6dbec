"""Does an app string name this app? One rule for every ``application_state`` assertion.

An app is named by any of its identities, as ``runtime/apps.py`` resolves an ``app`` argument:
the accessibility name, the executable's basename (also without a version or packaging
suffix: protocol/app_names.py), WM_CLASS (either part: the host sends
instance and class joined by a NUL), the desktop id (with or without ``.desktop``) or
the pid as text; case is ignored.
"""

from __future__ import annotations

from deskpilot.protocol.app_names import executable_names
from deskpilot.protocol.wire import AppIdentity


def _key(text: str) -> str:
    return text.strip().casefold().removesuffix(".desktop")


def identity_keys(app: AppIdentity) -> set[str]:
    keys = {_key(v) for v in (app.name, app.executable, app.wm_class, app.desktop_id) if v}
    if app.wm_class:
        keys |= {_key(p) for p in app.wm_class.split("\0")}
    if app.executable:
        keys |= executable_names(app.executable)
    if app.pid is not None:
        keys.add(str(app.pid))
    keys.discard("")
    return keys


def names_app(query: str, app: AppIdentity) -> bool:
    return _key(query) in identity_keys(app)


def same_app(a: AppIdentity, b: AppIdentity) -> bool:
    """Two identities of one app: the same pid when both carry one, else a shared identity."""
    if a.pid is not None and b.pid is not None:
        return a.pid == b.pid
    return bool(identity_keys(a) & identity_keys(b))


def describe(app: AppIdentity) -> dict[str, object]:
    """The identity for an evidence record (camelCase, no empty fields)."""
    return app.wire()
