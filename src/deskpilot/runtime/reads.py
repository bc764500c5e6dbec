"""The eight observation tools.

``get_app_state`` is the one that issues a stateId: text header + tree (always, so text-only
models keep working) and the model frame. The others inform without issuing anything an
action could be taken on.
"""

from __future__ import annotations

import json
import time
from typing import Any

from deskpilot.hostclient.api import ObservedState
from deskpilot.protocol.errors import ErrorCode
from deskpilot.protocol.wire import ObservationBody, TargetSpec, WindowInfo
from deskpilot.runtime.apps import app_windows, dialogs_of, group_apps
from deskpilot.runtime.core import Call, RuntimeCore, ToolOutcome, app_key, app_label
from deskpilot.runtime.errors import refusal, safe_error
from deskpilot.runtime.state_ids import AppKey
from deskpilot.runtime.tool_args import AppArgs, NoArgs


def json_text(value: Any) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False)


async def _target(
    core: RuntimeCore, call: Call, app: str | int | None
) -> tuple[TargetSpec | None, int | None, list[WindowInfo] | None]:
    """The window to observe: the named app's main window, the bound target, or focus (and
    the app's windows, when they were listed to find it)."""
    if app is not None:
        listing = await core.windows(call)
        entry, window = core.resolve_in(listing, app)
        return TargetSpec(window_id=window.window_id), entry.pid, listing
    sess = core.sessions.get(call.agent_session)
    if sess is not None and sess.bound_target is not None:
        wid = sess.bound_target.get("windowId")
        if isinstance(wid, str):
            if any(w.window_id == wid for w in await core.windows(call)):
                return TargetSpec(window_id=wid), None, None
            # the bound window closed: the kernel drops its binding on the next look and
            # says so (bound_window_closed); this session forgets it too
            sess.bound_target = None
    return None, None, None


def _check_recovery(call: Call, tool: str, obs: ObservationBody | None, pid: int | None) -> None:
    """Outside get_app_state on the recovering app, nothing may run during recovery."""
    recovery = call.turn.recovery
    if recovery is None:
        return
    if obs is not None:
        recovery.check(tool, app_key(obs), app_label(obs.app))
    elif pid is not None:
        recovery.check(tool, AppKey(pid=pid, window_id=""))
    elif tool != "get_app_state":
        recovery.check(tool, None)
    # get_app_state without a resolved pid is checked once the observation names the app


async def get_app_state(core: RuntimeCore, call: Call, args: AppArgs) -> ToolOutcome:
    await core.preflight(call, acting=False)
    target, pid, windows = await _target(core, call, args.app)
    _check_recovery(call, "get_app_state", None, pid)
    async with core.sessions.using(call.agent_session) as sess:
        call.session_id = sess.session_id
        observed = await core.observe(call, target, screenshot=True)
    obs = observed.observation
    _check_recovery(call, "get_app_state", obs, None)
    frame = core.frame(call, observed.png, obs)
    record = core.issue(call, obs, observed.png, frame)
    if windows is not None:  # what was open already, so an action can tell what it opened
        record.extras["dialogs"] = {w.window_id for w in dialogs_of(windows, obs.window.window_id)}
        record.extras["appWindows"] = {w.window_id for w in app_windows(windows, obs.app.pid)}
    with call.watch.stage("format"):
        text = core.render_state(record, obs, frame)
    return ToolOutcome(text=text, diagnostic=call.diag, image=frame)


async def get_screen_state(core: RuntimeCore, call: Call, args: NoArgs) -> ToolOutcome:
    """The windows on screen, then the focused window's full state (with a stateId)."""
    await core.preflight(call, acting=False)
    _check_recovery(call, "get_screen_state", None, None)
    windows = await core.windows(call)
    async with core.sessions.using(call.agent_session) as sess:
        call.session_id = sess.session_id
        observed = await core.observe(call, None, screenshot=True)
    obs = observed.observation
    frame = core.frame(call, observed.png, obs)
    record = core.issue(call, obs, observed.png, frame)
    with call.watch.stage("format"):
        summary = [
            f"windows={len(windows)}",
            *(
                f'- id={w.window_id} app="{app_label(w.app)}" pid={w.app.pid} '
                f'title="{w.title}"{" focused" if w.focused else ""}'
                f"{' minimized' if w.minimized else ''}"
                for w in windows
            ),
            "",
            "Focused window state:",
            core.render_state(record, obs, frame),
        ]
    return ToolOutcome(text="\n".join(summary), diagnostic=call.diag, image=frame)


async def list_windows(core: RuntimeCore, call: Call, args: NoArgs) -> ToolOutcome:
    await core.preflight(call, acting=False)
    _check_recovery(call, "list_windows", None, None)
    windows = await core.windows(call)
    data = [w.wire() for w in windows]
    return ToolOutcome(text=json_text({"windows": data}), diagnostic=call.diag)


async def list_apps(core: RuntimeCore, call: Call, args: NoArgs) -> ToolOutcome:
    await core.preflight(call, acting=False)
    _check_recovery(call, "list_apps", None, None)
    apps = group_apps(await core.windows(call))
    return ToolOutcome(text=json_text({"apps": [a.to_json() for a in apps]}), diagnostic=call.diag)


async def screenshot(core: RuntimeCore, call: Call, args: AppArgs) -> ToolOutcome:
    await core.preflight(call, acting=False)
    target, pid, _ = await _target(core, call, args.app)
    _check_recovery(call, "screenshot", None, pid)
    async with core.sessions.using(call.agent_session) as sess:
        call.session_id = sess.session_id
        with call.watch.stage("rpc"):
            observed = await _capture_with_regions(core, sess.session_id, target)
    obs = observed.observation
    if observed.png is None:
        raise refusal(ErrorCode.CAPTURE_FAILED, "The capture returned no image.")
    frame = core.frame(call, observed.png, obs)
    assert frame is not None
    text = "\n".join(
        [
            f'App=(name="{app_label(obs.app)}", pid={obs.app.pid})',
            f'Window=(title="{obs.window.title}", id={obs.window.window_id})',
            f"image={frame.width}x{frame.height}",
            "No state_id: call get_app_state to act on this window.",
        ]
    )
    return ToolOutcome(text=text, diagnostic=call.diag, image=frame)


async def _capture_with_regions(
    core: RuntimeCore, session_id: str, target: TargetSpec | None
) -> ObservedState:
    """A screenshot whose secure regions are known, so they are painted out before the image is
    stored or shown to the model. A bare ``capture_window`` carries no tree and so no regions;
    an observation does. It is taken under a side session id so it never replaces the frame
    the agent's current state_id points at (a screenshot must not make that state stale)."""
    if target is None:
        binding = getattr(core.backend, "binding", None)
        target = binding(session_id) if callable(binding) else None
    return await core.backend.observe(f"{session_id}:capture", target, include_screenshot=True)


async def capture_app_snapshot(core: RuntimeCore, call: Call, args: AppArgs) -> ToolOutcome:
    if core.snapshots is None:
        raise refusal(
            ErrorCode.NOT_AVAILABLE_YET,
            "capture_app_snapshot is not available here: the snapshot vault could not be "
            "opened in this process (see deskpilot vault stats). Use screenshot or "
            "get_app_state.",
        )
    await core.preflight(call, acting=False)
    target, pid, _ = await _target(core, call, args.app)
    _check_recovery(call, "capture_app_snapshot", None, pid)
    async with core.sessions.using(call.agent_session) as sess:
        call.session_id = sess.session_id
        with call.watch.stage("rpc"):
            observed = await _capture_with_regions(core, sess.session_id, target)
        with call.watch.stage("format"):
            stored = await core.snapshots.capture(
                observed, session_id=sess.session_id, turn=call.turn.key
            )
    frame = core.frame(call, observed.png, observed.observation)
    return ToolOutcome(text=json_text(stored), diagnostic=call.diag, image=frame, data=stored)


async def get_capabilities(core: RuntimeCore, call: Call, args: NoArgs) -> ToolOutcome:
    caps = await core.preflight_soft(call)
    caps.update(desktop_sharing(core))
    return ToolOutcome(text=json_text(caps), diagnostic=call.diag)


def desktop_sharing(core: RuntimeCore) -> dict[str, Any]:
    """This process's kill switch (armed / watching another deskpilot process / unavailable,
    with the cause) and who holds the desktop lease, from the kernel's status."""
    status = getattr(core.kernel, "status", None)
    data = status() if callable(status) else {}
    if not isinstance(data, dict):
        return {}
    return {k: data[k] for k in ("killSwitch", "desktopLease") if k in data}


async def diagnose_native_host(core: RuntimeCore, call: Call, args: NoArgs) -> ToolOutcome:
    checks: list[dict[str, Any]] = []
    caps: dict[str, Any] | None = None
    t0 = time.perf_counter()
    try:
        caps = await core.preflight_soft(call)
        checks.append({"check": "capabilities", "ok": bool(caps.get("available")), "ms": _ms(t0)})
    except Exception as exc:  # the point of this tool is to report, not to fail
        checks.append({"check": "capabilities", "ok": False, "code": _code(exc), "ms": _ms(t0)})
    t1 = time.perf_counter()
    try:
        n = len(await core.windows(call))
        checks.append({"check": "list_windows", "ok": True, "windows": n, "ms": _ms(t1)})
    except Exception as exc:
        checks.append({"check": "list_windows", "ok": False, "code": _code(exc), "ms": _ms(t1)})
    advice: list[str] = []
    if caps is None or not caps.get("available"):
        advice.append(
            "Start a desktop (deskpilot desktop up) or export DISPLAY and "
            "DBUS_SESSION_BUS_ADDRESS for an X11 session, then run deskpilot doctor."
        )
    perms = (caps or {}).get("permissions", {})
    for name, state in perms.items():
        if state != "granted":
            advice.append(f"{name} is {state}: see deskpilot doctor for how to grant it.")
    data = {
        "kernel": core.kernel.name,
        "snapshotVault": core.snapshots is not None,
        "capabilities": caps,
        "checks": checks,
        "advice": advice,
    }
    return ToolOutcome(text=json_text(data), diagnostic=call.diag)


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 2)


def _code(exc: BaseException) -> str:
    return safe_error(exc)[0].value
