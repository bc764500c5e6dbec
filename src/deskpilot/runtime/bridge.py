"""The bridge: one entry point, ``Runtime.call(tool, arguments, ...)``, for all 28 tools.

Every call gets a diagnostic, whatever happens. The bridge resolves the turn, validates the
arguments itself, applies the kill-switch halt and the budget (in bounded mode a call in
flight is cancelled when the task's time runs out), runs the tool's handler, and turns any
failure into a ``deskpilot diagnostic: {...}`` text that never carries a raw error body from
below. Entry points (MCP, the agent loop) only translate to and from this.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from deskpilot.hostclient.api import DesktopBackend
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.session import CancelReason
from deskpilot.runtime import actions, controls, launcher, reads
from deskpilot.runtime import tool_args as ta
from deskpilot.runtime.budget import (
    BOUNDED_DURATION_MS,
    BOUNDED_MAX_ACTIONS,
    BudgetMode,
    TaskBudget,
)
from deskpilot.runtime.core import Call, RuntimeCore, ToolOutcome
from deskpilot.runtime.diagnostics import (
    ActionOutcome,
    Diagnostic,
    ObservationOutcome,
    Stopwatch,
    Timings,
)
from deskpilot.runtime.errors import refusal, safe_error
from deskpilot.runtime.implicit import (
    IDLE_RELEASE_S,
    EndedSession,
    ImplicitSession,
    ImplicitSessions,
)
from deskpilot.runtime.kernel_seam import KernelPort, kernel_port
from deskpilot.runtime.snapshots import SnapshotPort
from deskpilot.runtime.state_ids import STATE_ID_TTL_S, StateIdRegistry, void_reason
from deskpilot.runtime.turns import Turn, TurnTracker

log = logging.getLogger(__name__)

Handler = Callable[[RuntimeCore, Call, Any], Awaitable[ToolOutcome]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    group: str  # observation | action | delegated | control | status
    args: type[ta.ToolArgs]
    handler: Handler | None
    description: str
    #: read (observes), act (changes the desktop), control, status, unavailable
    kind: str
    read_only: bool = False


@dataclass
class RuntimeConfig:
    budget_mode: BudgetMode = BudgetMode.UNBOUNDED
    bounded_duration_ms: int = BOUNDED_DURATION_MS
    bounded_max_actions: int = BOUNDED_MAX_ACTIONS
    idle_release_s: float = IDLE_RELEASE_S
    state_ttl_s: float = STATE_ID_TTL_S


class Runtime:
    def __init__(
        self,
        backend: DesktopBackend,
        *,
        kernel: KernelPort | None = None,
        snapshots: SnapshotPort | None = None,
        config: RuntimeConfig | None = None,
    ) -> None:
        self.config = config or RuntimeConfig()
        self.backend = backend
        kernel = kernel or kernel_port(backend)
        states = StateIdRegistry(ttl_s=self.config.state_ttl_s)
        self.turns = TurnTracker(self._new_budget, self.config.budget_mode, self._turn_ended)
        sessions = ImplicitSessions(
            kernel,
            idle_release_s=self.config.idle_release_s,
            on_release=self._session_released,
            on_ended=self._session_ended,
        )
        self.core = RuntimeCore(backend, kernel, sessions, states, self.turns, snapshots)
        self._last_end: dict[str, float] = {}
        self._known_sessions: set[str] = set()
        self._last_diag: dict[str, dict[str, Any]] = {}
        self.calls = 0

    # ------------------------------------------------------------------ lifecycle

    def _new_budget(self, mode: BudgetMode) -> TaskBudget:
        return TaskBudget(
            mode,
            duration_ms=self.config.bounded_duration_ms,
            max_actions=self.config.bounded_max_actions,
        )

    def _turn_ended(self, turn: Turn) -> None:
        self.core.states.invalidate(turn=turn.key, reason="turn_ended")
        if self.core.snapshots is not None:
            self.core.snapshots.end_turn(turn.key)

    def _session_released(self, sess: ImplicitSession) -> None:
        self.core.states.invalidate(agent_session=sess.agent_session, reason="released")

    def _session_ended(self, ended: EndedSession) -> None:
        """The kernel ended an agent's implicit session under it: its stateIds die with it,
        saying why; a stop by the user from outside this runtime stops the turn, as the
        ``stop`` tool does."""
        self.core.states.invalidate(
            agent_session=ended.agent_session, reason=void_reason(ended.reason)
        )
        turn = self.turns.peek(ended.agent_session)
        if ended.reason == CancelReason.USER_STOP and turn is not None and not turn.stopped:
            turn.stopped = True
            turn.stopped_at = time.time()

    def set_budget_mode(self, mode: BudgetMode) -> None:
        """Switch limits on or off for open tasks and new ones; counters are never reset."""
        self.config.budget_mode = mode
        self.turns.set_mode(mode)

    async def start(self) -> None:
        """Arm the kill switch when the kernel has one (entry points call this once)."""
        start = getattr(self.core.kernel, "start_kill_switch", None)
        if start is None:
            return
        try:
            await start()
        except Exception as exc:  # no display, a grab refused: say so once, plainly
            log.warning("the kill switch could not be armed: %s", exc)

    async def close(self) -> None:
        await self.core.sessions.close_all(CancelReason.SHUTDOWN)
        await self.core.kernel.close()
        if self.core.snapshots is not None:
            await self.core.snapshots.close()
        close = getattr(self.backend, "close", None)
        if close is not None:
            await close()

    # ------------------------------------------------------------------ the call

    async def call(
        self,
        tool: str,
        arguments: Any,
        *,
        agent_session: str = "default",
        turn_id: str | None = None,
    ) -> ToolOutcome:
        t0 = time.perf_counter()
        self.calls += 1
        timings = Timings()
        last = self._last_end.get(agent_session)
        if last is not None:
            timings.between_calls_ms = (t0 - last) * 1000.0
        diag = Diagnostic(tool=tool, timings=timings)
        spec = TOOLS.get(tool)
        if agent_session not in self._known_sessions:
            # a kill-switch halt binds agent sessions that began before it, not later ones
            self._known_sessions.add(agent_session)
            self.core.kernel.client_session_began(agent_session)
        # a session the kernel ended under this agent (another agent took the desktop, the
        # kill switch) is retired first, in the turn the agent was in until now
        before = self.turns.peek(agent_session)
        self.core.sessions.survey(agent_session, before.key if before is not None else None)
        turn = self.turns.current(agent_session, turn_id)
        call = Call(tool, agent_session, turn, diag, Stopwatch(timings))
        if spec is not None and spec.kind == "act":
            diag.action_outcome = ActionOutcome.NOT_DISPATCHED
        try:
            if spec is None:
                raise refusal(
                    ErrorCode.INVALID_REQUEST,
                    f"Unknown tool {tool!r}.",
                    tools=sorted(TOOLS),
                )
            outcome = await self._run(spec, call, arguments)
        except DeskpilotError as exc:
            outcome = self._failure(call, exc)
        except Exception:
            log.exception("tool %s failed unexpectedly", tool)
            if call.dispatched and diag.action_outcome is ActionOutcome.NOT_DISPATCHED:
                diag.action_outcome = ActionOutcome.UNKNOWN  # it reached the kernel: may have run
            outcome = self._failure(call, DeskpilotError(ErrorCode.INTERNAL_ERROR, "internal"))
        end = time.perf_counter()
        timings.tool_elapsed_ms = (end - t0) * 1000.0
        if timings.bridge_total_ms == 0.0:
            timings.bridge_total_ms = timings.tool_elapsed_ms
        rendered = outcome.diagnostic.render()
        outcome.text = rendered if outcome.is_error else f"{outcome.text.rstrip()}\n\n{rendered}"
        self._last_end[agent_session] = end
        self._last_diag[agent_session] = outcome.diagnostic.to_json()
        return outcome

    async def _run(self, spec: ToolSpec, call: Call, arguments: Any) -> ToolOutcome:
        if spec.kind == "unavailable":
            return await controls.not_available(self.core, call, None)
        args = ta.validate_args(spec.name, spec.args, arguments)
        if spec.kind == "status":
            return self._status(call)
        if spec.kind in ("read", "act"):
            # the kill-switch halt refuses actions (in act()); observation keeps working
            call.turn.budget.check_read()
        assert spec.handler is not None
        deadline = call.turn.budget.deadline() if spec.kind in ("read", "act") else None
        t_bridge = time.perf_counter()
        try:
            if deadline is None:
                return await spec.handler(self.core, call, args)
            loop = asyncio.get_running_loop()
            when = loop.time() + (deadline - time.monotonic())
            try:
                async with asyncio.timeout_at(when):
                    return await spec.handler(self.core, call, args)
            except TimeoutError:
                if time.monotonic() + 0.005 < deadline:
                    raise  # not ours
                return await self._expired(call)
        finally:
            call.diag.timings.bridge_total_ms = (time.perf_counter() - t_bridge) * 1000.0

    async def _expired(self, call: Call) -> ToolOutcome:
        """The bounded budget ran out with this call in flight: cancel it, say what is known."""
        if call.dispatched:
            call.diag.action_outcome = ActionOutcome.UNKNOWN
        sess = self.core.sessions.get(call.agent_session)
        if sess is not None:
            try:
                await self.core.backend.cancel_session(sess.session_id)
            except Exception:
                log.warning("cancelling the host session after budget expiry failed")
        budget = call.turn.budget
        exc = refusal(
            ErrorCode.BUDGET_EXHAUSTED,
            f"The bounded budget of this task ({budget.duration_ms // 1000} s) ran out while "
            "this call was in flight; it was cancelled. Cancelling does not undo an action "
            "that already ran: observe before reporting.",
            budget="time",
            cancelledInFlight=True,
        )
        return self._failure(call, exc)

    def _failure(self, call: Call, exc: DeskpilotError) -> ToolOutcome:
        code, message, retryable, details = safe_error(exc)
        diag = call.diag
        diag.code = code.value
        diag.message = message
        diag.retryable = retryable
        if diag.action_outcome is ActionOutcome.UNKNOWN:
            diag.message += " The action may have run; it is not retried automatically."
            diag.retryable = False
        if details:
            diag.extra["details"] = details
        if (
            diag.observation_outcome is ObservationOutcome.NOT_ATTEMPTED
            and call.session_id is not None
            and diag.tool in ("get_app_state", "get_screen_state", "screenshot")
        ):
            diag.observation_outcome = ObservationOutcome.UNAVAILABLE
        return ToolOutcome(text="", diagnostic=diag)

    # ------------------------------------------------------------------ status

    def status(self, agent_session: str = "default") -> dict[str, Any]:
        turn = self.turns.peek(agent_session)
        sess = self.core.sessions.get(agent_session)
        halt = self.core.kernel.halt_state(agent_session)
        state = self.core.kernel.session_state(sess.session_id) if sess is not None else None
        budget = turn.budget if turn is not None else self._new_budget(self.turns.mode)
        return {
            "budget": budget.to_json(),
            "elapsedMs": round(budget.elapsed_ms()),
            "actions": budget.actions,
            "turn": None
            if turn is None
            else {
                "id": turn.key,
                "explicit": turn.explicit,
                "stopped": turn.stopped,
            },
            "recovery": None if turn is None or turn.recovery is None else turn.recovery.to_json(),
            "halt": {
                "halted": halt.halted,
                "cause": halt.cause,
                "sinceEpochMs": halt.since_epoch_ms,
            },
            "session": None if sess is None else sess.to_json(state.value if state else None),
            "kernel": self.core.kernel.name,
            **reads.desktop_sharing(self.core),
            "snapshotVault": self.core.snapshots is not None,
            "lastDiagnostic": self._last_diag.get(agent_session),
        }

    def _status(self, call: Call) -> ToolOutcome:
        return ToolOutcome(
            text=reads.json_text(self.status(call.agent_session)), diagnostic=call.diag
        )


# ---------------------------------------------------------------------- the tool table

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
        reads.get_capabilities,
        "What this desktop supports: backends (X11, AT-SPI, XTEST), permissions, limits.",
        "read",
        True,
    ),
    ToolSpec(
        "diagnose_native_host",
        "observation",
        ta.NoArgs,
        reads.diagnose_native_host,
        "Check the host process and the desktop; returns checks with latencies and advice.",
        "read",
        True,
    ),
    ToolSpec(
        "list_apps",
        "observation",
        ta.NoArgs,
        reads.list_apps,
        "Running applications with windows: name, executable, WM_CLASS, desktop id, pid.",
        "read",
        True,
    ),
    ToolSpec(
        "list_windows",
        "observation",
        ta.NoArgs,
        reads.list_windows,
        "Top-level windows with ids, titles, bounds, focus and their app.",
        "read",
        True,
    ),
    ToolSpec(
        "get_screen_state",
        "observation",
        ta.NoArgs,
        reads.get_screen_state,
        "The windows on screen, then the focused window's full state (tree + image + state_id).",
        "read",
        True,
    ),
    ToolSpec(
        "get_app_state",
        "observation",
        ta.AppArgs,
        reads.get_app_state,
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
        reads.capture_app_snapshot,
        "Store an encrypted snapshot of an app's window; returns its id and a loopback preview "
        "URL that expires (at the latest) at the end of the turn.",
        "read",
        True,
    ),
    ToolSpec(
        "screenshot",
        "observation",
        ta.AppArgs,
        reads.screenshot,
        "A screenshot of an app's window (or the focused one). Issues no state_id.",
        "read",
        True,
    ),
    # atomic actions (10)
    ToolSpec(
        "click",
        "action",
        ta.ClickArgs,
        actions.act,
        "Click an element (element_id) or a point (x, y in pixels of the last image you "
        "saw). A left single click on a list, table or tree row selects it (count 2 "
        "activates/opens it); on other elements it runs the element's own action. button: "
        "left|right|middle; count: 1-3." + _STATE_HINT,
        "act",
    ),
    ToolSpec(
        "type_text",
        "action",
        ta.TypeTextArgs,
        actions.act,
        "Type text into an element that takes text (a text field, an editable document, a "
        "terminal; refused otherwise). With element_id the element is focused first, "
        "without it the text goes to the focused element; submit=true presses Enter after."
        + _STATE_HINT,
        "act",
    ),
    ToolSpec(
        "paste",
        "action",
        ta.PasteArgs,
        actions.act,
        "Paste text through the clipboard (fast for long text) into an element that takes "
        "text (refused otherwise). With element_id the element is focused first; "
        "submit=true presses Enter after." + _STATE_HINT,
        "act",
    ),
    ToolSpec(
        "set_value",
        "action",
        ta.SetValueArgs,
        actions.act,
        "Set an element's value semantically (text field contents, slider or spin value)."
        + _STATE_HINT,
        "act",
    ),
    ToolSpec(
        "invoke_element",
        "action",
        ta.InvokeElementArgs,
        actions.act,
        "Run an element's accessibility action (default: its primary action; or name one, "
        "e.g. 'activate', 'toggle', 'focus')." + _STATE_HINT,
        "act",
    ),
    ToolSpec(
        "press_key",
        "action",
        ta.PressKeyArgs,
        actions.act,
        'Press key chords in order, e.g. ["ctrl+s"] or ["Tab", "Return"].' + _STATE_HINT,
        "act",
    ),
    ToolSpec(
        "scroll",
        "action",
        ta.ScrollArgs,
        actions.act,
        "Scroll an element or at a point (pixels of the last image): direction up|down|left|"
        "right, amount 1-100 steps." + _STATE_HINT,
        "act",
    ),
    ToolSpec(
        "drag",
        "action",
        ta.DragArgs,
        actions.act,
        "Drag from one point to another; from/to are {x, y} in pixels of the last image."
        + _STATE_HINT,
        "act",
    ),
    ToolSpec(
        "select_text",
        "action",
        ta.SelectTextArgs,
        actions.act,
        "Select characters start..end (end exclusive) in a text element." + _STATE_HINT,
        "act",
    ),
    ToolSpec(
        "perform_secondary_action",
        "action",
        ta.SecondaryActionArgs,
        actions.act,
        "An element's secondary action (a context menu / right click)." + _STATE_HINT,
        "act",
    ),
    # delegated tasks (5)
    ToolSpec(
        "start_task",
        "delegated",
        ta.StartTaskArgs,
        None,
        "Delegate a whole goal to deskpilot's own operator. Not available yet in this build.",
        "unavailable",
    ),
    ToolSpec(
        "get_status",
        "delegated",
        ta.TaskRefArgs,
        None,
        "Status of a delegated task. Not available yet in this build.",
        "unavailable",
        True,
    ),
    ToolSpec(
        "wait_for_completion",
        "delegated",
        ta.TaskRefArgs,
        None,
        "Wait (bounded) for a delegated task to finish. Not available yet in this build.",
        "unavailable",
        True,
    ),
    ToolSpec(
        "open_app",
        "delegated",
        ta.OpenAppArgs,
        launcher.open_app,
        "Start an application by desktop id (org.gnome.Calculator) or executable, and wait "
        "until its window is accessible. Then call get_app_state with the returned pid.",
        "act",
    ),
    ToolSpec(
        "bind_target",
        "delegated",
        ta.BindTargetArgs,
        controls.bind_target,
        "Change the session's target window (app or window_id). Only while paused: pause, "
        "bind_target, resume.",
        "control",
    ),
    # control (4)
    ToolSpec(
        "pause",
        "control",
        ta.NoArgs,
        controls.pause,
        "Pause: cancels what is in flight and drops all state_ids until resume.",
        "control",
    ),
    ToolSpec(
        "resume",
        "control",
        ta.NoArgs,
        controls.resume,
        "Resume a paused or taken-over session; then call get_app_state.",
        "control",
    ),
    ToolSpec(
        "stop",
        "control",
        ta.StopArgs,
        controls.stop,
        "Stop the computer session for this task; actions are refused for the rest of the turn.",
        "control",
    ),
    ToolSpec(
        "takeover",
        "control",
        ta.NoArgs,
        controls.takeover,
        "Stop the agent so the user can drive the desktop; resume hands it back.",
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
