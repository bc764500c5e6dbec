"""Which window a tool looks at, and the kernel reads that find it (timed as the diagnostic's
``discoveryMs`` and ``rpcMs`` stages)."""

from __future__ import annotations

from deskpilot.protocol.errors import ErrorCode
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.wire import TargetSpec, WindowInfo
from deskpilot.runtime.apps import AppEntry, resolve_app
from deskpilot.runtime.call import Call
from deskpilot.runtime.context import ToolContext
from deskpilot.runtime.refusals import refusal
from deskpilot.runtime.window_lists import in_front


async def list_windows(ctx: ToolContext, call: Call) -> list[WindowInfo]:
    with call.watch.stage("discovery"):
        return await ctx.kernel.windows()


def resolve_in(windows: list[WindowInfo], app: str | int) -> tuple[AppEntry, WindowInfo]:
    """The app named by ``app`` (pid, name, executable, window id …) and its main window —
    or, when another process holds a dialog over that window (GIMP's export plug-ins are
    processes of their own: "Export Image as PNG" is ``file-png``'s, transient for GIMP's
    dialog), that dialog and its process: it is what a person looking at the app sees and
    answers next. A window named by its id is that window."""
    entry = resolve_app(app, windows)
    window = entry.main_window()
    if window is None:
        raise refusal(ErrorCode.NO_WINDOWS_AVAILABLE, "That application has no window.")
    if not _names_window(app, window):
        front = in_front(window, windows)
        if front.app.pid != window.app.pid:
            return AppEntry(front.app.pid, front.app.model_copy(), [front]), front
    return entry, window


def _names_window(app: str | int, window: WindowInfo) -> bool:
    return isinstance(app, str) and app.strip().lower() == window.window_id.lower()


async def resolve(ctx: ToolContext, call: Call, app: str | int) -> tuple[AppEntry, WindowInfo]:
    return resolve_in(await list_windows(ctx, call), app)


async def resolve_target(
    ctx: ToolContext, call: Call, app: str | int | None, window_id: str | None
) -> tuple[AppEntry, WindowInfo]:
    """The window a control or a task names, by ``window_id`` (from list_windows) or by
    ``app`` (its main window), with its app."""
    if window_id is None:
        assert app is not None
        return await resolve(ctx, call, app)
    windows = await list_windows(ctx, call)
    match = [w for w in windows if w.window_id.lower() == window_id.lower()]
    if not match:
        raise refusal(
            ErrorCode.TARGET_NOT_FOUND,
            f"No window with id {window_id}. Call list_windows for the ids.",
        )
    window = match[0]
    return AppEntry(window.app.pid, window.app, [window]), window


async def observe(
    ctx: ToolContext, call: Call, target: TargetSpec | None, *, screenshot: bool = True
) -> ObservedState:
    """Observe for the call's session (it must hold one); the result is its current frame."""
    assert call.session_id is not None
    with call.watch.stage("rpc"):
        return await ctx.kernel.observe(call.session_id, target, include_screenshot=screenshot)


async def observation_target(
    ctx: ToolContext, call: Call, app: str | int | None
) -> tuple[TargetSpec | None, int | None, list[WindowInfo] | None]:
    """The window to observe: the named app's main window, the bound target, or focus (and
    the windows, when they were listed to find it)."""
    if app is not None:
        listing = await list_windows(ctx, call)
        entry, window = resolve_in(listing, app)
        return TargetSpec(window_id=window.window_id), entry.pid, listing
    sess = ctx.sessions.get(call.agent_session)
    if sess is not None and sess.bound_target is not None:
        wid = sess.bound_target.get("windowId")
        if isinstance(wid, str):
            if any(w.window_id == wid for w in await list_windows(ctx, call)):
                return TargetSpec(window_id=wid), None, None
            # the bound window closed: the kernel drops its binding on the next look and
            # says so (bound_window_closed); this session forgets it too
            sess.bound_target = None
    return None, None, None
