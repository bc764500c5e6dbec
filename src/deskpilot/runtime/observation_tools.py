"""The eight observation tools.

``get_app_state`` is the one that issues a stateId: text header + tree (always, so text-only
models keep working) and the model frame. The others inform without issuing anything an
action could be taken on.
"""

from __future__ import annotations

import json
import time
from typing import Any

from deskpilot.protocol.errors import ErrorCode
from deskpilot.protocol.wire import ObservationBody
from deskpilot.runtime.apps import group_apps
from deskpilot.runtime.call import Call, ToolOutcome
from deskpilot.runtime.context import ToolContext
from deskpilot.runtime.preflight import capabilities_json, require_desktop
from deskpilot.runtime.refusals import refusal, safe_error
from deskpilot.runtime.state_ids import AppKey
from deskpilot.runtime.state_view import app_key, app_label, model_frame, present
from deskpilot.runtime.targets import list_windows as windows_of
from deskpilot.runtime.targets import observation_target, observe
from deskpilot.runtime.tool_args import AppArgs, NoArgs
from deskpilot.runtime.window_changes import remember_windows


def json_text(value: Any) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False)


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


async def get_app_state(ctx: ToolContext, call: Call, args: AppArgs) -> ToolOutcome:
    await require_desktop(ctx, call, acting=False)
    target, pid, windows = await observation_target(ctx, call, args.app)
    _check_recovery(call, "get_app_state", None, pid)
    async with ctx.sessions.using(call.agent_session) as sess:
        call.session_id = sess.session_id
        observed = await observe(ctx, call, target, screenshot=True)
    obs = observed.observation
    _check_recovery(call, "get_app_state", obs, None)
    shown = present(ctx, call, observed)
    if windows is not None:  # what was open already, so an action can tell what it opened
        remember_windows(shown.record, windows)
    return ToolOutcome(
        text=shown.text,
        diagnostic=call.diag,
        image=shown.frame,
        observed=observed,
        state_id=shown.record.state_id,
    )


async def get_screen_state(ctx: ToolContext, call: Call, args: NoArgs) -> ToolOutcome:
    """The windows on screen, then the focused window's full state (with a stateId)."""
    await require_desktop(ctx, call, acting=False)
    _check_recovery(call, "get_screen_state", None, None)
    windows = await windows_of(ctx, call)
    async with ctx.sessions.using(call.agent_session) as sess:
        call.session_id = sess.session_id
        observed = await observe(ctx, call, None, screenshot=True)
    shown = present(ctx, call, observed)
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
            shown.text,
        ]
    return ToolOutcome(text="\n".join(summary), diagnostic=call.diag, image=shown.frame)


async def list_windows(ctx: ToolContext, call: Call, args: NoArgs) -> ToolOutcome:
    await require_desktop(ctx, call, acting=False)
    _check_recovery(call, "list_windows", None, None)
    windows = await windows_of(ctx, call)
    data = [w.wire() for w in windows]
    return ToolOutcome(text=json_text({"windows": data}), diagnostic=call.diag)


async def list_apps(ctx: ToolContext, call: Call, args: NoArgs) -> ToolOutcome:
    await require_desktop(ctx, call, acting=False)
    _check_recovery(call, "list_apps", None, None)
    apps = group_apps(await windows_of(ctx, call))
    return ToolOutcome(text=json_text({"apps": [a.to_json() for a in apps]}), diagnostic=call.diag)


async def screenshot(ctx: ToolContext, call: Call, args: AppArgs) -> ToolOutcome:
    await require_desktop(ctx, call, acting=False)
    target, pid, _ = await observation_target(ctx, call, args.app)
    _check_recovery(call, "screenshot", None, pid)
    async with ctx.sessions.using(call.agent_session) as sess:
        call.session_id = sess.session_id
        with call.watch.stage("rpc"):
            # a capture knows its secure regions (it carries the tree) and does not replace
            # the frame the agent's current state_id points at
            observed = await ctx.kernel.capture(sess.session_id, target)
    obs = observed.observation
    if observed.png is None:
        raise refusal(ErrorCode.CAPTURE_FAILED, "The capture returned no image.")
    frame = model_frame(ctx, call, observed.png, obs)
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


async def capture_app_snapshot(ctx: ToolContext, call: Call, args: AppArgs) -> ToolOutcome:
    if ctx.snapshots is None:
        raise refusal(
            ErrorCode.NOT_AVAILABLE_YET,
            "capture_app_snapshot is not available here: the snapshot vault could not be "
            "opened in this process (see deskpilot vault stats). Use screenshot or "
            "get_app_state.",
        )
    await require_desktop(ctx, call, acting=False)
    target, pid, _ = await observation_target(ctx, call, args.app)
    _check_recovery(call, "capture_app_snapshot", None, pid)
    async with ctx.sessions.using(call.agent_session) as sess:
        call.session_id = sess.session_id
        with call.watch.stage("rpc"):
            observed = await ctx.kernel.capture(sess.session_id, target)
        with call.watch.stage("format"):
            stored = await ctx.snapshots.capture(
                observed, session_id=sess.session_id, turn=call.turn.key
            )
    frame = model_frame(ctx, call, observed.png, observed.observation)
    return ToolOutcome(text=json_text(stored), diagnostic=call.diag, image=frame, data=stored)


async def get_capabilities(ctx: ToolContext, call: Call, args: NoArgs) -> ToolOutcome:
    caps = await capabilities_json(ctx, call)
    caps.update(desktop_sharing(ctx))
    return ToolOutcome(text=json_text(caps), diagnostic=call.diag)


def desktop_sharing(ctx: ToolContext) -> dict[str, Any]:
    """This process's kill switch (armed / watching another deskpilot process / unavailable,
    with the cause) and who holds the desktop lease, from the kernel's status."""
    data = ctx.kernel.status()
    return {k: data[k] for k in ("killSwitch", "desktopLease") if k in data}


async def diagnose_native_host(ctx: ToolContext, call: Call, args: NoArgs) -> ToolOutcome:
    checks: list[dict[str, Any]] = []
    caps: dict[str, Any] | None = None
    #: host settings that stopped the host (names only)
    settings: list[str] = []
    t0 = time.perf_counter()
    try:
        caps = await capabilities_json(ctx, call)
        checks.append({"check": "capabilities", "ok": bool(caps.get("available")), "ms": _ms(t0)})
    except Exception as exc:  # the point of this tool is to report, not to fail
        checks.append({"check": "capabilities", "ok": False, **_failed(exc), "ms": _ms(t0)})
    t1 = time.perf_counter()
    try:
        n = len(await windows_of(ctx, call))
        checks.append({"check": "list_windows", "ok": True, "windows": n, "ms": _ms(t1)})
    except Exception as exc:
        checks.append({"check": "list_windows", "ok": False, **_failed(exc), "ms": _ms(t1)})
    for c in checks:
        settings += [s for s in c.get("settings", ()) if s not in settings]
    advice: list[str] = []
    codes = {c.get("code") for c in checks}
    if settings:
        advice.append(
            f"The host refused to start: {', '.join(settings)} in the MCP server's environment "
            "cannot be used. Run deskpilot doctor with that environment (it says what each "
            "takes), fix or unset it, and start the server again (docs/host.md)."
        )
    elif ErrorCode.NATIVE_HOST_UNTRUSTED.value in codes:
        advice.append(
            "The host process was not trusted (native_host_untrusted), so it was not started: "
            "run deskpilot doctor, which says what the installed host is missing; in a "
            "development checkout set DESKPILOT_HOST_LOCAL_TRUST=1 (docs/security.md)."
        )
    elif caps is None or not caps.get("available"):
        advice.append(
            "Start a desktop (deskpilot desktop up) or export DISPLAY and "
            "DBUS_SESSION_BUS_ADDRESS for an X11 session, then run deskpilot doctor."
        )
    perms = (caps or {}).get("permissions", {})
    for name, state in perms.items():
        if state != "granted":
            advice.append(f"{name} is {state}: see deskpilot doctor for how to grant it.")
    data = {
        "kernel": ctx.kernel.name,
        "snapshotVault": ctx.snapshots is not None,
        "capabilities": caps,
        "checks": checks,
        "advice": advice,
    }
    return ToolOutcome(text=json_text(data), diagnostic=call.diag)


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 2)


def _failed(exc: BaseException) -> dict[str, Any]:
    """A failed check's code, and its reason and the settings it names where it has them."""
    code, _msg, _retry, details = safe_error(exc)
    out: dict[str, Any] = {"code": code.value}
    for key in ("reason", "settings"):
        if details.get(key):
            out[key] = details[key]
    return out
