"""``application_state`` specs: frontmost, window_exists, running, window_title_contains.

``app`` names an app by any identity (identity.py); omitted, it means the observed window's
app (the task's target). Windows come from the desktop's window list (the evidence's, or the
one the state carried); without one, only what the observation itself shows is used, and a
claim that needs the list (no such window) is undecidable. ``running`` is decided from the
process table (processes.py), so ``expected: false`` is answered, never "unsupported", on
Linux. ``expected: false`` turns every assertion around.
"""

from __future__ import annotations

import asyncio

from deskpilot.protocol.verification import ApplicationStateSpec
from deskpilot.protocol.wire import AppIdentity, ObservationBody, WindowInfo

from . import processes
from .evidence import LISTED, Evidence, Outcome, clip, passed, undecidable
from .identity import describe, identity_keys, names_app, same_app
from .text import contains


class _Target:
    """Which app the spec means: the named one, or the observed window's app."""

    def __init__(self, spec: ApplicationStateSpec, obs: ObservationBody | None) -> None:
        self.query = spec.app
        self.observed = obs.app if obs is not None else None

    @property
    def known(self) -> bool:
        return self.query is not None or self.observed is not None

    def is_(self, app: AppIdentity) -> bool:
        if self.query is not None:
            return names_app(self.query, app)
        return self.observed is not None and same_app(self.observed, app)

    def label(self) -> str:
        if self.query is not None:
            return self.query
        return "the observed app"


def _foreground(
    obs: ObservationBody | None, windows: list[WindowInfo] | None
) -> AppIdentity | None:
    if obs is not None:
        if obs.foreground_app is not None:
            return obs.foreground_app
        if obs.foreground_window is not None:
            return obs.foreground_window.app
    if windows is not None:
        for w in windows:
            if w.focused:
                return w.app
    return None


def _frontmost(spec: ApplicationStateSpec, target: _Target, ev: Evidence) -> Outcome:
    obs = ev.state.observation if ev.state is not None else None
    fg = _foreground(obs, ev.desktop_windows())
    if fg is None:
        return undecidable("which app is in the foreground is not known (no observation, no focus)")
    is_front = target.is_(fg)
    return passed(is_front == spec.expected, frontmost=is_front, foregroundApp=describe(fg))


def _app_windows(target: _Target, ev: Evidence) -> list[WindowInfo] | None:
    """The target's windows; None when there is no window list to look in."""
    windows = ev.desktop_windows()
    obs = ev.state.observation if ev.state is not None else None
    if windows is None:
        if obs is not None and target.is_(obs.app):
            return [obs.window]  # at least the observed one exists; others are unknown
        return None
    if target.query is None and obs is not None:
        # the observed window, or any other window of the observed app
        return [w for w in windows if w.window_id == obs.window.window_id or target.is_(w.app)]
    return [w for w in windows if target.is_(w.app)]


def _listed(windows: list[WindowInfo]) -> list[dict[str, object]]:
    return [{"windowId": w.window_id, "title": clip(w.title, 80)} for w in windows[:LISTED]]


def _window_exists(spec: ApplicationStateSpec, target: _Target, ev: Evidence) -> Outcome:
    found = _app_windows(target, ev)
    if found is None:
        return undecidable("no window list, and the observed window is not this app's")
    return passed(bool(found) == spec.expected, windowCount=len(found), windows=_listed(found))


def _title_contains(spec: ApplicationStateSpec, target: _Target, ev: Evidence) -> Outcome:
    obs = ev.state.observation if ev.state is not None else None
    if target.query is None:
        # the observed window itself: its title is all there is to look at
        found: list[WindowInfo] | None = [obs.window] if obs is not None else None
        complete = True
    else:
        found = _app_windows(target, ev)
        complete = ev.desktop_windows() is not None
    if found is None:
        return undecidable("no window list, and the observed window is not this app's")
    hits = [w for w in found if contains(w.title, spec.text or "")]
    evidence: dict[str, object] = {
        "windowCount": len(found),
        "matchingTitles": len(hits),
        "windows": _listed(hits or found),
    }
    if not hits and not complete:
        return undecidable(
            "the observed window's title does not hold it; no window list", **evidence
        )
    if not found:
        evidence["note"] = f"{target.label()} has no window"
        return passed(False, **evidence)
    return passed(bool(hits) == spec.expected, **evidence)


def _wanted_names(target: _Target, ev: Evidence) -> set[str]:
    """What to look for in the process table.

    A named app: the string itself, and the executables and pids of the windows (and observed
    apps) it names, so a desktop id or a WM_CLASS also finds its process. The observed app:
    its pid when known (that very process, not another instance), else its identities.
    """
    if target.query is None:
        observed = target.observed
        if observed is None:
            return set()
        if observed.pid is not None:
            return {str(observed.pid)}
        return identity_keys(observed)
    wanted = {target.query.strip().casefold()}
    apps: list[AppIdentity] = [w.app for w in ev.desktop_windows() or []]
    if ev.state is not None:
        obs = ev.state.observation
        apps.extend(a for a in (obs.app, obs.foreground_app) if a is not None)
    for app in apps:
        if target.is_(app):
            if app.executable:
                wanted.add(app.executable.casefold())
            if app.pid is not None:
                wanted.add(str(app.pid))
    return wanted


async def _running(spec: ApplicationStateSpec, target: _Target, ev: Evidence) -> Outcome:
    if not processes.available():
        return undecidable("no process table (/proc) on this system")
    wanted = _wanted_names(target, ev)
    if not wanted:
        return undecidable("no app named and no observed app to look for")
    table = await asyncio.to_thread(processes.processes)
    hits = [p for p in table if processes.named(p, wanted)]
    return passed(
        bool(hits) == spec.expected,
        running=bool(hits),
        processTable=processes.PROC,
        lookedFor=sorted(wanted)[: LISTED * 2],
        processes=[{"pid": p.pid, "comm": p.comm} for p in hits[:LISTED]],
    )


async def check_application_state(spec: ApplicationStateSpec, ev: Evidence) -> Outcome:
    obs = ev.state.observation if ev.state is not None else None
    target = _Target(spec, obs)
    if not target.known:
        return undecidable("no app named and no observation to take the target app from")
    if spec.assertion == "frontmost":
        return _frontmost(spec, target, ev)
    if spec.assertion == "window_exists":
        return _window_exists(spec, target, ev)
    if spec.assertion == "window_title_contains":
        return _title_contains(spec, target, ev)
    return await _running(spec, target, ev)
