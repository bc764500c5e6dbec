"""Which application an ``app`` argument means.

An app is named by its accessibility name, executable name (also without a version or
packaging suffix: ``gimp`` names ``gimp-2.10``, protocol/app_names.py), WM_CLASS or desktop id
(compared case-insensitively; a desktop id may be given with or without ``.desktop``), or by
its pid.
Windows are grouped into apps by pid. One match is the answer; several apps or none are a clear
error that lists the candidates, so the agent can choose instead of guessing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from deskpilot.protocol.app_names import executable_names
from deskpilot.protocol.errors import ErrorCode
from deskpilot.protocol.wire import AppIdentity, WindowInfo
from deskpilot.runtime.refusals import refusal


@dataclass
class AppEntry:
    pid: int | None
    identity: AppIdentity
    windows: list[WindowInfo] = field(default_factory=list)

    def names(self) -> set[str]:
        out: set[str] = set()
        ident = self.identity
        for value in (ident.name, ident.executable, ident.wm_class, ident.desktop_id):
            if value:
                v = value.strip().lower()
                out.add(v)
                if v.endswith(".desktop"):
                    out.add(v[: -len(".desktop")])
        if ident.executable:
            out |= executable_names(ident.executable)
        return out

    def main_window(self) -> WindowInfo | None:
        """The window an agent means by the app: an open dialog of one of its windows (the
        topmost; the window under it is usually blocked by it), else the focused window,
        else the largest visible one that is not minimised. Without a window manager a new
        dialog does not take the focus, so the focus alone would keep pointing under it."""
        if not self.windows:
            return None
        shown = [w for w in self.windows if w.visible and not w.minimized]
        ids = {w.window_id for w in shown}
        dialogs = [w for w in shown if w.transient_for in ids]
        focused = next((w for w in self.windows if w.focused), None)
        if focused is not None and (focused in dialogs or not dialogs):
            return focused
        if dialogs:
            return dialogs[0]  # windows are listed topmost first
        return max(shown or self.windows, key=lambda w: w.bounds.width * w.bounds.height)

    def unresponsive_ms(self) -> float | None:
        """How long the app has left the host's accessibility question unanswered (stopped,
        hung), when it has; None when it answered."""
        silent = [w.app_unresponsive_ms for w in self.windows if w.app_unresponsive_ms]
        return max(silent) if silent else None

    def to_json(self) -> dict[str, Any]:
        ident = self.identity
        out: dict[str, Any] = {
            "pid": self.pid,
            "name": ident.name,
            "executable": ident.executable,
            "wmClass": ident.wm_class,
            "desktopId": ident.desktop_id,
            "windows": len(self.windows),
        }
        silent = self.unresponsive_ms()
        if silent is not None:
            out["unresponsiveMs"] = silent
        return out


def _merge(into: AppIdentity, other: AppIdentity) -> None:
    for attr in ("name", "executable", "wm_class", "desktop_id"):
        if getattr(into, attr) is None and getattr(other, attr) is not None:
            setattr(into, attr, getattr(other, attr))


def group_apps(windows: list[WindowInfo]) -> list[AppEntry]:
    by_key: dict[object, AppEntry] = {}
    for w in windows:
        key: object = w.app.pid if w.app.pid is not None else ("window", w.window_id)
        entry = by_key.get(key)
        if entry is None:
            entry = AppEntry(pid=w.app.pid, identity=w.app.model_copy())
            by_key[key] = entry
        else:
            _merge(entry.identity, w.app)
        entry.windows.append(w)
    return list(by_key.values())


_WINDOW_ID = re.compile(r"0x[0-9a-f]{1,8}")


def _as_pid(query: str | int) -> int | None:
    if isinstance(query, int):
        return query
    q = query.strip()
    if q.lower().startswith("pid:"):
        q = q[4:].strip()
    return int(q) if q.isdigit() else None


def resolve_app(query: str | int, windows: list[WindowInfo]) -> AppEntry:
    """The app an ``app`` argument names; a window id ("0x…") names that one window."""
    if isinstance(query, str) and _WINDOW_ID.fullmatch(query.strip().lower()):
        wid = query.strip().lower()
        exact = [w for w in windows if w.window_id.lower() == wid]
        if exact:
            w = exact[0]
            return AppEntry(pid=w.app.pid, identity=w.app.model_copy(), windows=[w])
    apps = group_apps(windows)
    pid = _as_pid(query)
    if pid is not None:
        matches = [a for a in apps if a.pid == pid]
    else:
        q = str(query).strip().lower()
        if q.endswith(".desktop"):
            q = q[: -len(".desktop")]
        matches = [a for a in apps if q in a.names()]
    if len(matches) == 1:
        return matches[0]
    candidates = [a.to_json() for a in (matches or apps)][:40]
    if not matches:
        raise refusal(
            ErrorCode.TARGET_NOT_FOUND,
            f"No running application matches app={_shown(query)}. Candidates are listed; name "
            "one by accessibility name, executable, WM_CLASS, desktop id, pid or window id "
            "(0x…, from list_windows), or use open_app.",
            candidates=candidates,
        )
    raise refusal(
        ErrorCode.TARGET_AMBIGUOUS,
        f"app={_shown(query)} matches {len(matches)} applications. Pass the pid of the one you "
        "mean.",
        candidates=candidates,
    )


def _shown(query: object) -> str:
    """The agent's own query, echoed short: a pasted blob must not flood the answer."""
    text = repr(query)
    return text if len(text) <= 80 else text[:77] + "…'"
