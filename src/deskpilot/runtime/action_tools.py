"""The ten atomic action tools: one tool call, one user-level action, through the kernel.

A tool call becomes one to three wire actions (a ledger row each):

* a click on an element is sent as a ``click`` on it: the host decides what it means (a left
  single click on a list, table or tree item selects it and two activate it; on anything
  else a left single click is the element's own action, semantic, stealing no pointer;
  other clicks are pointer clicks), and the result says what a click on an item did
  (:mod:`deskpilot.runtime.item_clicks`); coordinate clicks are pointer clicks;
* ``type_text``/``paste`` go only into an element that takes text
  (:mod:`deskpilot.runtime.text_targets`: refused before the stateId is spent otherwise);
  with ``element_id`` they first focus that element, and ``submit`` adds an Enter;
* coordinates are pixels of the image the model was given with the state, converted to
  normalised window coordinates and clamped.

``stale_frame``, ``stale_tree`` and ``focus_mismatch`` heal themselves once: re-observe,
rebuild the action against the new frame (an element is found again by its signature), retry.
An outcome that may have run (``unknown``) is never retried. After the last step the window is
observed once; the result issues a new stateId only when the reuse conditions of
``runtime/state_reuse.py`` hold, and says ``action_noop`` when nothing changed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from deskpilot.kernel.port import ExecutedAction
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.protocol.observed import ObservedState
from deskpilot.protocol.wire import (
    Action,
    ClickAction,
    DragAction,
    InvokeElementAction,
    MouseButton,
    ObservationBody,
    PasteTextAction,
    PressKeyAction,
    Rect,
    ScrollAction,
    ScrollDirection,
    SecondaryAction,
    SelectTextAction,
    SetValueAction,
    TargetSpec,
    TypeTextAction,
)
from deskpilot.runtime import tool_args as ta
from deskpilot.runtime.apps import app_windows, dialogs_of
from deskpilot.runtime.call import Call, ToolOutcome
from deskpilot.runtime.context import ToolContext
from deskpilot.runtime.coords import to_window_point
from deskpilot.runtime.diagnostics import ActionOutcome, ObservationOutcome, StepRecord
from deskpilot.runtime.implicit_sessions import ImplicitSession
from deskpilot.runtime.item_clicks import ItemClick
from deskpilot.runtime.preflight import check_may_act, require_desktop
from deskpilot.runtime.recovery import Recovery
from deskpilot.runtime.refusals import (
    SELF_HEALING_CODES,
    refusal,
    refused_before_dispatch,
    safe_error,
)
from deskpilot.runtime.state_ids import StateRecord
from deskpilot.runtime.state_reuse import reuse_refusals
from deskpilot.runtime.state_view import app_label, digest, present
from deskpilot.runtime.targets import list_windows, observe
from deskpilot.runtime.text_targets import check_text_target
from deskpilot.runtime.tree import element_lines, remap


@dataclass
class Frame:
    """What a wire action is built against: one observation's ids."""

    frame_id: str
    tree_version: str
    tree: str

    @classmethod
    def of(cls, obs: ObservationBody) -> Frame:
        return cls(obs.frame_id, obs.tree_version, obs.tree)


Builder = Callable[[Frame], Action]

SUBMIT_PAUSE_S = 0.2
#: refusals of the action itself (not of the state or the session): the state stays usable
REFUSED_BEFORE_DISPATCH = frozenset(
    {
        ErrorCode.UNSUPPORTED_ACTION,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.ACTION_BLOCKED,
        ErrorCode.APPROVAL_DENIED,
    }
)


@dataclass
class Step:
    kind: str
    build: Builder
    #: used once when the first form is refused as unsupported (pre-dispatch)
    fallback: Builder | None = None
    pause_before_s: float = 0.0
    #: aimed at a point of the state's image: never re-aimed at a resized window
    positional: bool = False


class Plan:
    """Builds steps against the state the agent acted on; ids are remapped per frame."""

    def __init__(self, record: StateRecord) -> None:
        self.record = record
        self.steps: list[Step] = []

    def element(self, element_id: int) -> Callable[[Frame], int]:
        if element_id not in element_lines(self.record.tree):
            raise refusal(
                ErrorCode.INVALID_REQUEST,
                f"element_id {element_id} is not an element of this state "
                f"(it has {self.record.element_count} elements).",
            )

        def current(frame: Frame) -> int:
            if frame.frame_id == self.record.frame_id:
                return element_id
            new_id = remap(self.record.tree, frame.tree, element_id)
            if new_id is None:
                raise refusal(
                    ErrorCode.STALE_TREE,
                    "The element is no longer present (or no longer unique) in the window. "
                    "Call get_app_state again and use the new element ids; do not repeat the "
                    "same call.",
                )
            return new_id

        return current

    def point(self, x: float, y: float) -> ta.PixelPoint:
        return ta.PixelPoint(x=x, y=y)

    def add(
        self,
        kind: str,
        build: Builder,
        fallback: Builder | None = None,
        *,
        pause_before_s: float = 0.0,
        positional: bool = False,
    ) -> None:
        self.steps.append(Step(kind, build, fallback, pause_before_s, positional))


def build_plan(tool: str, args: ta.ToolArgs, record: StateRecord) -> Plan:
    plan = Plan(record)
    size = record.image_size

    def pt(x: float, y: float) -> object:
        return to_window_point(x, y, size)

    if isinstance(args, ta.ClickArgs):
        button = MouseButton(args.button)
        if args.element_id is not None:
            el = plan.element(args.element_id)
            plan.add(
                "click",
                lambda f: ClickAction(element_id=el(f), button=button, count=args.count),
            )
        else:
            assert args.x is not None and args.y is not None
            point = to_window_point(args.x, args.y, size)
            plan.add(
                "click",
                lambda f: ClickAction(point=point, button=button, count=args.count),
                positional=True,
            )
    elif isinstance(args, ta.TypeTextArgs | ta.PasteArgs):
        paste = isinstance(args, ta.PasteArgs)
        text = args.text
        # nothing is typed "into" a label: the keys would go to whatever has the focus
        check_text_target(record.tree, args.element_id, tool)
        into: Callable[[Frame], int | None] = lambda f: None  # noqa: E731
        if args.element_id is not None:
            el = plan.element(args.element_id)
            into = el
            # focus first (a ledger row of its own); a host without a "focus" action name
            # refuses before dispatch, and a pointer click on the element focuses it instead
            plan.add(
                "focus",
                lambda f: InvokeElementAction(element_id=el(f), action="focus"),
                fallback=lambda f: ClickAction(element_id=el(f)),
            )
        if paste:
            plan.add("paste_text", lambda f: PasteTextAction(text=text, element_id=into(f)))
        else:
            plan.add("type_text", lambda f: TypeTextAction(text=text, element_id=into(f)))
        if args.submit:
            # some apps finish taking text in after their accessibility events went quiet (a
            # GTK file chooser completing a typed path drops an Enter that comes within
            # ~100 ms): the submit Enter waits a short, bounded moment
            plan.add(
                "press_key",
                lambda f: PressKeyAction(keys=["Return"]),
                pause_before_s=SUBMIT_PAUSE_S,
            )
    elif isinstance(args, ta.PressKeyArgs):
        keys = list(args.keys)
        plan.add("press_key", lambda f: PressKeyAction(keys=keys))
    elif isinstance(args, ta.SetValueArgs):
        el = plan.element(args.element_id)
        value = args.value
        plan.add("set_value", lambda f: SetValueAction(element_id=el(f), value=value))
    elif isinstance(args, ta.InvokeElementArgs):
        el = plan.element(args.element_id)
        name = args.action
        plan.add("invoke_element", lambda f: InvokeElementAction(element_id=el(f), action=name))
    elif isinstance(args, ta.ScrollArgs):
        direction = ScrollDirection(args.direction)
        amount = args.amount
        if args.element_id is not None:
            el = plan.element(args.element_id)
            plan.add(
                "scroll",
                lambda f: ScrollAction(element_id=el(f), direction=direction, amount=amount),
            )
        else:
            assert args.x is not None and args.y is not None
            point = to_window_point(args.x, args.y, size)
            plan.add(
                "scroll",
                lambda f: ScrollAction(point=point, direction=direction, amount=amount),
                positional=True,
            )
    elif isinstance(args, ta.DragArgs):
        start = to_window_point(args.from_.x, args.from_.y, size)
        end = to_window_point(args.to.x, args.to.y, size)
        plan.add("drag", lambda f: DragAction(start=start, end=end), positional=True)
    elif isinstance(args, ta.SelectTextArgs):
        el = plan.element(args.element_id)
        s, e = args.start, args.end
        plan.add("select_text", lambda f: SelectTextAction(element_id=el(f), start=s, end=e))
    elif isinstance(args, ta.SecondaryActionArgs):
        el = plan.element(args.element_id)
        plan.add("perform_secondary_action", lambda f: SecondaryAction(element_id=el(f)))
    else:  # pragma: no cover - the tool table only routes the ten action tools here
        raise refusal(ErrorCode.UNSUPPORTED_ACTION, f"{tool} is not an action tool.")
    return plan


def _outcome_of(exc: BaseException) -> ActionOutcome:
    if refused_before_dispatch(exc):
        return ActionOutcome.NOT_DISPATCHED
    return ActionOutcome.UNKNOWN


async def _run_step(
    ctx: ToolContext, call: Call, record: StateRecord, step: Step, frame: Frame, target: TargetSpec
) -> tuple[ExecutedAction, Frame]:
    assert call.session_id is not None
    healed = False
    used_fallback = False
    build = step.build
    kind = step.kind
    while True:  # at most: one heal and one fallback
        try:
            action = build(frame)
        except DeskpilotError as exc:
            call.diag.steps.append(StepRecord(kind, ActionOutcome.NOT_DISPATCHED, code=exc.code))
            raise
        try:
            call.dispatched = True
            with call.watch.stage("rpc"):
                gate = await ctx.kernel.execute(
                    call.session_id,
                    frame.frame_id,
                    frame.tree_version,
                    action,
                    expected_app=record.app_identity.executable or record.app_identity.name,
                    observe_after=True,
                )
            call.watch.add("approval", gate.approval_ms / 1000.0)
            call.diag.timings.add_toolkit_delay(gate.result.toolkit_delay_ms)
            call.diag.steps.append(
                StepRecord(
                    kind, ActionOutcome.CALL_RETURNED, method=gate.result.method, healed=healed
                )
            )
            return gate, frame
        except DeskpilotError as exc:
            if exc.code in SELF_HEALING_CODES and not healed:
                healed = True
                call.diag.healed += 1
                observed = await observe(ctx, call, target, screenshot=False)
                obs = observed.observation
                if obs.app.pid != record.app.pid:
                    call.diag.steps.append(
                        StepRecord(kind, ActionOutcome.NOT_DISPATCHED, code="state_changed")
                    )
                    raise refusal(
                        ErrorCode.STATE_CHANGED,
                        "A different application is in the target window now.",
                    ) from None
                if _positional(step) and _size(obs.window.bounds) != _size(record.window.bounds):
                    call.diag.steps.append(
                        StepRecord(kind, ActionOutcome.NOT_DISPATCHED, code="stale_frame")
                    )
                    raise refusal(
                        ErrorCode.STALE_FRAME,
                        "The window was resized since the image these coordinates come from; "
                        "they no longer point at the same place. Call get_app_state and use "
                        "the new image; do not repeat the same call.",
                        reason="window_resized",
                    ) from None
                frame = Frame.of(obs)
                continue
            if exc.code is ErrorCode.UNSUPPORTED_ACTION and step.fallback and not used_fallback:
                # the refused form spent the frame (kernel and host drop it when an action
                # goes out): the fallback is built on a fresh look, which is not a heal
                used_fallback = True
                build = step.fallback
                observed = await observe(ctx, call, target, screenshot=False)
                frame = Frame.of(observed.observation)
                continue
            call.diag.steps.append(
                StepRecord(kind, _outcome_of(exc), code=exc.code.value, healed=healed)
            )
            raise


def _positional(step: Step) -> bool:
    return step.kind in ("click", "scroll", "drag") and step.positional


def _size(bounds: Rect) -> tuple[int, int]:
    return bounds.width, bounds.height


def _overall(call: Call) -> ActionOutcome:
    outcomes = [s.outcome for s in call.diag.steps]
    if ActionOutcome.UNKNOWN in outcomes:
        return ActionOutcome.UNKNOWN
    if ActionOutcome.CALL_RETURNED in outcomes:
        return ActionOutcome.CALL_RETURNED
    return ActionOutcome.NOT_DISPATCHED


async def act(ctx: ToolContext, call: Call, args: ta.ToolArgs) -> ToolOutcome:
    """Run one action tool: admit, consume the stateId, dispatch, observe, maybe reissue."""
    tool = call.tool
    turn = call.turn
    call.diag.action_outcome = ActionOutcome.NOT_DISPATCHED
    check_may_act(ctx, call)
    if turn.recovery is not None:
        turn.recovery.check(tool, None)
    turn.budget.admit_action()
    state_id = getattr(args, "state_id", "")
    # the plan is checked (element ids) before the stateId is spent: a typo costs nothing
    plan = build_plan(tool, args, ctx.states.check(state_id, turn=turn.key))
    record = ctx.states.consume(state_id, turn=turn.key)
    await require_desktop(ctx, call, acting=True)
    target = TargetSpec(window_id=record.app.window_id)
    try:
        async with ctx.sessions.using(call.agent_session) as sess:
            call.session_id = sess.session_id
            sess.check_contract()
            frame = Frame(record.frame_id, record.tree_version, record.tree)
            post: ObservedState | None = None
            clicked: ItemClick | None = None
            for i, step in enumerate(plan.steps):
                if step.pause_before_s > 0:
                    await asyncio.sleep(step.pause_before_s)
                gate, frame = await _run_step(ctx, call, record, step, frame, target)
                sess.steps += 1
                post = gate.post
                clicked = ItemClick.of(gate.result, getattr(args, "element_id", None))
                if i < len(plan.steps) - 1:
                    if post is None:
                        post = await observe(ctx, call, target, screenshot=False)
                    frame = Frame.of(post.observation)
            call.diag.action_outcome = _overall(call)
            return await _after(ctx, call, record, target, sess, post, clicked)
    except DeskpilotError as exc:
        call.diag.action_outcome = _overall(call) if call.diag.steps else _outcome_of(exc)
        if exc.code is ErrorCode.STATE_CHANGED:
            _enter_recovery(ctx, call, record)
        elif (
            call.diag.action_outcome is ActionOutcome.NOT_DISPATCHED
            and exc.code in REFUSED_BEFORE_DISPATCH
        ):
            ctx.states.give_back(record)  # nothing happened: a refusal does not spend it
        raise


def _enter_recovery(ctx: ToolContext, call: Call, record: StateRecord) -> None:
    turn = call.turn
    if turn.recovery is None:
        turn.recovery = Recovery(
            app=record.app,
            app_name=app_label(record.app_identity),
            failed_method=call.tool,
            previous_action_outcome=call.diag.action_outcome,
        )
    else:
        turn.recovery.record_again()
    ctx.states.invalidate(turn=turn.key, app=record.app, reason="state_changed")
    call.diag.extra["recovery"] = turn.recovery.to_json()


async def _after(
    ctx: ToolContext,
    call: Call,
    record: StateRecord,
    target: TargetSpec,
    sess: ImplicitSession,
    post: ObservedState | None,
    clicked: ItemClick | None = None,
) -> ToolOutcome:
    """The state after the action (carried in its result, else observed once); issue the next
    stateId only if it is safe to reuse."""
    summary = _summary(call)
    try:
        observed = post if post is not None else await observe(ctx, call, target, screenshot=True)
    except DeskpilotError as exc:
        code, _, _, _ = safe_error(exc)
        call.diag.observation_outcome = ObservationOutcome.UNAVAILABLE
        call.diag.extra["observationCode"] = code.value
        if clicked is not None:
            summary += "\n" + clicked.note(record.tree, None)
        text = (
            f"{summary}\nThe action call returned, but the window could not be observed "
            f"afterwards ({code.value}); it may have closed. That does not prove the action "
            "did or did not reach its goal. Call get_app_state or list_windows before the "
            "next action."
        )
        return ToolOutcome(text=text, diagnostic=call.diag)
    obs = observed.observation
    png = observed.png
    if clicked is not None:
        summary += "\n" + clicked.note(record.tree, obs.tree)
    # a dialog the action opened is a window of its own: the acted-on window's tree does not
    # show it, and without a window manager it does not even take the focus; the host carries
    # the windows with the post-action state (listed here only when it could not)
    windows = (
        list(observed.windows) if observed.windows is not None else await list_windows(ctx, call)
    )
    dialogs = dialogs_of(windows, obs.window.window_id)
    known = record.extras.get("dialogs")
    opened = [d for d in dialogs if not isinstance(known, set) or d.window_id not in known]
    mine = app_windows(windows, obs.app.pid)
    known_windows = record.extras.get("appWindows")
    new_windows = [
        w
        for w in mine
        if isinstance(known_windows, set)
        and w.window_id not in known_windows
        and w.window_id != obs.window.window_id
        and w not in opened
    ]
    noop = (
        not opened
        and not new_windows
        and obs.tree_version == record.tree_version
        and (record.png_digest is None or digest(png) == record.png_digest)
    )
    sess.consecutive_noops = sess.consecutive_noops + 1 if noop else 0
    if noop:
        call.diag.noop = True
        call.diag.code = ErrorCode.ACTION_NOOP.value
        summary = (
            "action_noop: the action was dispatched but nothing changed in the window "
            "(same tree and screenshot). Do not assume it worked; try another element or "
            "approach.\n" + summary
        )
    if new_windows:
        top_new = new_windows[0]  # topmost first
        summary += (
            f'\nA new window of this app opened: "{top_new.title}" (window '
            f"{top_new.window_id}). get_app_state with app={top_new.window_id} shows it."
        )
    if opened:
        top = opened[0]
        summary += (
            f'\nA dialog of this window opened: "{top.title}" (window {top.window_id}). '
            f"get_app_state with app={obs.app.pid} shows it (the dialog is chosen over the "
            "window under it)."
        )
    refusals = reuse_refusals(record.app_identity, obs, png)
    if opened:
        fw = obs.foreground_window
        if fw is not None and fw.window_id in {d.window_id for d in opened}:
            refusals = [r for r in refusals if r != "popup_or_menu_open"]  # it is the dialog
        refusals.append("dialog_opened")
    if new_windows:
        refusals.append("window_opened")
    if refusals:
        call.diag.observation_outcome = ObservationOutcome.NOT_REUSABLE
        call.diag.not_reusable = refusals
        text = (
            f"{summary}\nThe new state cannot be reused ({', '.join(refusals)}). Call "
            "get_app_state before the next action."
        )
        return ToolOutcome(text=text, diagnostic=call.diag)
    shown = present(ctx, call, observed)
    shown.record.extras["dialogs"] = {d.window_id for d in dialogs}
    shown.record.extras["appWindows"] = {w.window_id for w in mine}
    text = (
        f"{summary}\nNew state below: read it, and act on its state_id (no need to call "
        f"get_app_state again).\n\n{shown.text}"
    )
    return ToolOutcome(text=text, diagnostic=call.diag, image=shown.frame)


def _summary(call: Call) -> str:
    steps = ", ".join(f"{s.kind}{'/' + s.method if s.method else ''}" for s in call.diag.steps)
    return f"{call.tool}: {call.diag.action_outcome.value} ({steps})"
