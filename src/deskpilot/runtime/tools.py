"""The tool table: the 28 tools an agent sees, with their arguments, handler and kind.

One row per tool (docs/mcp.md lists them): the name, its group, the arguments model it is
validated against (runtime/tool_args.py), the handler that runs it, the description the agent
reads, and its kind — ``read`` (observes), ``act`` (changes the desktop), ``control``,
or ``status`` — which decides the budget and halt rules the runtime applies.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from deskpilot.runtime import action_tools, observation_tools, open_app
from deskpilot.runtime import tool_args as ta
from deskpilot.runtime.call import Call, ToolOutcome
from deskpilot.runtime.context import ToolContext
from deskpilot.runtime.delegated import task_controls, task_tools

Handler = Callable[[ToolContext, Call, Any], Awaitable[ToolOutcome]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    group: str  # observation | action | delegated | control | status
    args: type[ta.ToolArgs]
    handler: Handler | None
    description: str
    #: read (observes), act (changes the desktop), control, status
    kind: str
    read_only: bool = False


_STATE_HINT = (
    " Takes the state_id of the state you are acting on (single use, valid 60 s). On success "
    "the result usually carries the new state and its state_id; otherwise call get_app_state."
)

_SPECS = [
    # observation (8)
    ToolSpec(
        "get_capabilities",
        "observation",
        ta.NoArgs,
        observation_tools.get_capabilities,
        "What this desktop supports: backends (X11, AT-SPI, XTEST), permissions, limits.",
        "read",
        True,
    ),
    ToolSpec(
        "diagnose_native_host",
        "observation",
        ta.NoArgs,
        observation_tools.diagnose_native_host,
        "Check the host process and the desktop; returns checks with latencies and advice.",
        "read",
        True,
    ),
    ToolSpec(
        "list_apps",
        "observation",
        ta.NoArgs,
        observation_tools.list_apps,
        "Running applications with windows: name, executable, WM_CLASS, desktop id, pid.",
        "read",
        True,
    ),
    ToolSpec(
        "list_windows",
        "observation",
        ta.NoArgs,
        observation_tools.list_windows,
        "Top-level windows with ids, titles, bounds, focus and their app.",
        "read",
        True,
    ),
    ToolSpec(
        "get_screen_state",
        "observation",
        ta.NoArgs,
        observation_tools.get_screen_state,
        "The windows on screen, then the focused window's full state (tree + image + state_id).",
        "read",
        True,
    ),
    ToolSpec(
        "get_app_state",
        "observation",
        ta.AppArgs,
        observation_tools.get_app_state,
        "Observe an app's window: a header (App=, Window=, state_id, frameId, treeVersion, "
        "image size), the accessibility tree with element ids in [brackets], and a screenshot. "
        "Call this first; act with its state_id.",
        "read",
        True,
    ),
    ToolSpec(
        "capture_app_snapshot",
        "observation",
        ta.AppArgs,
        observation_tools.capture_app_snapshot,
        "Store an encrypted snapshot of an app's window; returns its id and a loopback preview "
        "URL that expires (at the latest) at the end of the turn.",
        "read",
        True,
    ),
    ToolSpec(
        "screenshot",
        "observation",
        ta.AppArgs,
        observation_tools.screenshot,
        "A screenshot of an app's window (or the focused one). Issues no state_id.",
        "read",
        True,
    ),
    # atomic actions (10)
    ToolSpec(
        "click",
        "action",
        ta.ClickArgs,
        action_tools.act,
        "Click an element (element_id) or a point (x, y in pixels of the last image you "
        "saw). A left single click on a list, table or tree row selects it (count 2 "
        "activates/opens it), on a check box cell flips the box; on other elements it runs "
        "the element's own action. button: "
        "left|right|middle; count: 1-3." + _STATE_HINT,
        "act",
    ),
    ToolSpec(
        "type_text",
        "action",
        ta.TypeTextArgs,
        action_tools.act,
        "Type text into an element that takes text (a text field, an editable document, a "
        "terminal; refused otherwise). With element_id the element is focused first, with x, "
        "y (pixels of the last image) that point is clicked first; without either the text "
        "goes to the focused element (refused where the state cannot show one: a partial, "
        "visual or missing tree). submit=true presses Enter after." + _STATE_HINT,
        "act",
    ),
    ToolSpec(
        "paste",
        "action",
        ta.PasteArgs,
        action_tools.act,
        "Paste text through the clipboard (fast for long text) into an element that takes "
        "text (refused otherwise). With element_id the element is focused first, with x, y "
        "that point is clicked first; submit=true presses Enter after." + _STATE_HINT,
        "act",
    ),
    ToolSpec(
        "set_value",
        "action",
        ta.SetValueArgs,
        action_tools.act,
        "Set an element's value semantically (text field contents, slider or spin value)."
        + _STATE_HINT,
        "act",
    ),
    ToolSpec(
        "invoke_element",
        "action",
        ta.InvokeElementArgs,
        action_tools.act,
        "Run an element's accessibility action (default: its primary action; or name one, "
        "e.g. 'activate', 'toggle', 'focus')." + _STATE_HINT,
        "act",
    ),
    ToolSpec(
        "press_key",
        "action",
        ta.PressKeyArgs,
        action_tools.act,
        'Press key chords in order, e.g. ["ctrl+s"] or ["Tab", "Return"]. They go to the '
        "focused element; element_id focuses that element first, x, y (pixels of the last "
        "image) clicks that point first. Where the state cannot show the focus (a partial, "
        "visual or missing tree) one of them is needed." + _STATE_HINT,
        "act",
    ),
    ToolSpec(
        "scroll",
        "action",
        ta.ScrollArgs,
        action_tools.act,
        "Scroll an element or at a point (pixels of the last image): direction up|down|left|"
        "right, amount 1-100 steps." + _STATE_HINT,
        "act",
    ),
    ToolSpec(
        "drag",
        "action",
        ta.DragArgs,
        action_tools.act,
        "Drag from one point to another; from/to are {x, y} in pixels of the last image."
        + _STATE_HINT,
        "act",
    ),
    ToolSpec(
        "select_text",
        "action",
        ta.SelectTextArgs,
        action_tools.act,
        "Select characters start..end (end exclusive) in a text element." + _STATE_HINT,
        "act",
    ),
    ToolSpec(
        "perform_secondary_action",
        "action",
        ta.SecondaryActionArgs,
        action_tools.act,
        "An element's secondary action (a context menu / right click)." + _STATE_HINT,
        "act",
    ),
    # delegated tasks (5)
    ToolSpec(
        "start_task",
        "delegated",
        ta.StartTaskArgs,
        task_tools.start_task,
        "Delegate a whole goal in one app window (app or window_id) to deskpilot's operator, "
        "which works on the configured decision model in the background until its success "
        "criteria verify. Optional: success_criteria (verification specs), "
        "acceptance_criteria (sentences), tighter max_steps/max_runtime_ms/"
        "max_consecutive_noops, allowed_apps (narrowing only); environment: my_desktop. "
        "Returns at once with task_id; then wait_for_completion.",
        "act",
    ),
    ToolSpec(
        "get_status",
        "delegated",
        ta.TaskRefArgs,
        task_tools.get_status,
        "A delegated task's state, operator state, steps, no-ops, elapsed time, budget "
        "left, last action and its risk, last verification (task_id; default: your latest).",
        "read",
        True,
    ),
    ToolSpec(
        "wait_for_completion",
        "delegated",
        ta.WaitArgs,
        task_tools.wait_for_completion,
        "Wait (timeout_ms, default 120000, 100-300000) until a delegated task completes, "
        "fails, is canceled or paused, waits for approval or needs the person. timedOut "
        "true is not a failure.",
        "read",
        True,
    ),
    ToolSpec(
        "open_app",
        "delegated",
        ta.OpenAppArgs,
        open_app.open_app,
        "Start an application by desktop id (org.gnome.Calculator) or executable, and wait "
        "until its window is accessible. Then call get_app_state with the returned pid.",
        "act",
    ),
    ToolSpec(
        "bind_target",
        "delegated",
        ta.TaskBindArgs,
        task_controls.bind_target,
        "Change the session's (or delegated task's) target window (app or window_id). Only "
        "while paused: pause, bind_target, resume.",
        "control",
    ),
    # control (4)
    ToolSpec(
        "pause",
        "control",
        ta.TaskControlArgs,
        task_controls.pause,
        "Pause: cancels what is in flight and drops all state_ids until resume. With a live "
        "delegated task (or task_id) it pauses the task and stops its operator.",
        "control",
    ),
    ToolSpec(
        "resume",
        "control",
        ta.TaskControlArgs,
        task_controls.resume,
        "Resume a paused or taken-over session (a delegated task's operator restarts on the "
        "same budget); then call get_app_state.",
        "control",
    ),
    ToolSpec(
        "stop",
        "control",
        ta.TaskStopArgs,
        task_controls.stop,
        "Stop the computer session for this task (or the live delegated task); actions are "
        "refused for the rest of the turn. reason is recorded.",
        "control",
    ),
    ToolSpec(
        "takeover",
        "control",
        ta.TaskControlArgs,
        task_controls.takeover,
        "Stop the agent (or the delegated task's operator) so the user can drive the "
        "desktop; resume hands it back.",
        "control",
    ),
    # status (1)
    ToolSpec(
        "status",
        "status",
        ta.NoArgs,
        None,
        "Budget, elapsed time, action count, recovery state, halt state with its cause, the "
        "session's state and the last diagnostic, as JSON.",
        "status",
        True,
    ),
]

TOOLS: dict[str, ToolSpec] = {s.name: s for s in _SPECS}
assert len(TOOLS) == 28
