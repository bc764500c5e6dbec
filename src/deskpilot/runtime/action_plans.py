"""What one action tool call becomes: a plan of one to three wire actions.

Each step is built against a frame (one observation's ids), so a step can be rebuilt after a
self-heal against a newer frame: an element is found again by its signature
(``runtime/tree.py``), a point of the image never is (it is refused once the window was
resized). Coordinates are pixels of the image the model was given with the state, converted to
normalised window coordinates and clamped (``runtime/coords.py``).

* a click on an element is sent as a ``click`` on it: the host decides what it means (a left
  single click on a list, table or tree item selects it and two activate it; on anything else
  a left single click is the element's own action; other clicks are pointer clicks);
* ``type_text``/``paste`` go only into an element that takes text (``runtime/text_targets.py``:
  refused before the stateId is spent otherwise); with ``element_id`` they first focus that
  element (falling back to a click on it), and ``submit`` adds an Enter after a short pause.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from deskpilot.protocol.errors import ErrorCode
from deskpilot.protocol.wire import (
    Action,
    ClickAction,
    DragAction,
    InvokeElementAction,
    MouseButton,
    ObservationBody,
    PasteTextAction,
    PressKeyAction,
    ScrollAction,
    ScrollDirection,
    SecondaryAction,
    SelectTextAction,
    SetValueAction,
    TypeTextAction,
)
from deskpilot.runtime import tool_args as ta
from deskpilot.runtime.coords import to_window_point
from deskpilot.runtime.enabled_targets import check_enabled
from deskpilot.runtime.refusals import refusal
from deskpilot.runtime.state_ids import StateRecord
from deskpilot.runtime.text_targets import (
    check_keys_target,
    check_text_target,
    check_value_target,
)
from deskpilot.runtime.tree import element_lines, in_popup, remap
from deskpilot.vision.outline import is_visual_version


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
                f"element_id {element_id} is not an element of this state: an element keeps "
                "its id only while it exists, so it is gone (or never was). Read the state "
                "again (get_app_state) and act on one of its ids.",
            )

        def current(frame: Frame) -> int:
            if frame.frame_id == self.record.frame_id:
                return element_id
            line_ids = is_visual_version(self.record.tree_version) and is_visual_version(
                frame.tree_version
            )
            new_id = remap(self.record.tree, frame.tree, element_id, line_ids=line_ids)
            if new_id is None and in_popup(self.record.tree, element_id):
                raise refusal(
                    ErrorCode.STALE_TREE,
                    "The menu or popup that element was in has closed (or changed) since that "
                    "state, and its items are not matched again by name. Call get_app_state "
                    "again, open the menu again if it is still needed, and use the new ids.",
                )
            if new_id is None:
                raise refusal(
                    ErrorCode.STALE_TREE,
                    "The element is no longer present (or no longer unique) in the window. "
                    "Call get_app_state again and use the new element ids; do not repeat the "
                    "same call.",
                )
            return new_id

        return current

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
    match args:
        case ta.ClickArgs():
            _click(plan, args)
        case ta.TypeTextArgs() | ta.PasteArgs():
            _text(plan, args)
        case ta.PressKeyArgs():
            _keys(plan, args)
        case ta.SetValueArgs():
            _set_value(plan, args)
        case ta.InvokeElementArgs():
            _invoke(plan, args)
        case ta.ScrollArgs():
            _scroll(plan, args)
        case ta.DragArgs():
            _drag(plan, args)
        case ta.SelectTextArgs():
            _select(plan, args)
        case ta.SecondaryActionArgs():
            el = plan.element(args.element_id)
            plan.add("perform_secondary_action", lambda f: SecondaryAction(element_id=el(f)))
        case _:  # pragma: no cover - the tool table only routes the ten action tools here
            raise refusal(ErrorCode.UNSUPPORTED_ACTION, f"{tool} is not an action tool.")
    return plan


def _click(plan: Plan, args: ta.ClickArgs) -> None:
    button = MouseButton(args.button)
    if args.element_id is not None:
        if button is MouseButton.LEFT:
            check_enabled(plan.record.tree, args.element_id, "click")
        el = plan.element(args.element_id)
        plan.add(
            "click",
            lambda f: ClickAction(
                element_id=el(f), button=button, count=args.count, modifiers=args.modifiers
            ),
        )
        return
    assert args.x is not None and args.y is not None
    point = to_window_point(args.x, args.y, plan.record.image_size)
    plan.add(
        "click",
        lambda f: ClickAction(
            point=point, button=button, count=args.count, modifiers=args.modifiers
        ),
        positional=True,
    )


def _where_keys_go(plan: Plan, args: ta.TypeTextArgs | ta.PasteArgs | ta.PressKeyArgs) -> None:
    """The step that says where keys go, when the call names a place: the element focused
    (a ledger row of its own; a host without a "focus" action name refuses before dispatch,
    and a pointer click on the element focuses it instead), or the point clicked. Without
    one, the state must be able to show where they go (text_targets.check_keys_target)."""
    tool = _tool_of(args)
    if args.element_id is not None:
        check_enabled(plan.record.tree, args.element_id, tool)
        el = plan.element(args.element_id)
        plan.add(
            "focus",
            lambda f: InvokeElementAction(element_id=el(f), action="focus"),
            fallback=lambda f: ClickAction(element_id=el(f)),
        )
    elif args.point is not None:
        point = to_window_point(*args.point, plan.record.image_size)
        plan.add("click", lambda f: ClickAction(point=point), positional=True)
    else:
        check_keys_target(plan.record, tool)


def _tool_of(args: ta.TypeTextArgs | ta.PasteArgs | ta.PressKeyArgs) -> str:
    if isinstance(args, ta.PressKeyArgs):
        return "press_key"
    return "paste" if isinstance(args, ta.PasteArgs) else "type_text"


def _keys(plan: Plan, args: ta.PressKeyArgs) -> None:
    _where_keys_go(plan, args)
    keys = list(args.keys)
    plan.add("press_key", lambda f: PressKeyAction(keys=keys))


def _text(plan: Plan, args: ta.TypeTextArgs | ta.PasteArgs) -> None:
    paste = isinstance(args, ta.PasteArgs)
    text = args.text
    # nothing is typed "into" a label: the keys would go to whatever has the focus; a point
    # the agent names to click is its own choice of where the text goes
    if args.element_id is not None:
        check_enabled(plan.record.tree, args.element_id, _tool_of(args))
    if args.point is None:
        check_text_target(plan.record.tree, args.element_id, _tool_of(args))
    _where_keys_go(plan, args)
    into: Callable[[Frame], int | None] = lambda f: None  # noqa: E731
    if args.element_id is not None:
        into = plan.element(args.element_id)
    if paste:
        plan.add("paste_text", lambda f: PasteTextAction(text=text, element_id=into(f)))
    else:
        plan.add("type_text", lambda f: TypeTextAction(text=text, element_id=into(f)))
    if args.submit:
        # some apps finish taking text in after their accessibility events went quiet (a
        # GTK file chooser completing a typed path drops an Enter that comes within ~100 ms):
        # the submit Enter waits a short, bounded moment
        plan.add(
            "press_key", lambda f: PressKeyAction(keys=["Return"]), pause_before_s=SUBMIT_PAUSE_S
        )


def _set_value(plan: Plan, args: ta.SetValueArgs) -> None:
    check_enabled(plan.record.tree, args.element_id, "set_value")
    check_value_target(plan.record.tree, args.element_id)
    el = plan.element(args.element_id)
    value = args.value
    plan.add("set_value", lambda f: SetValueAction(element_id=el(f), value=value))


def _invoke(plan: Plan, args: ta.InvokeElementArgs) -> None:
    check_enabled(plan.record.tree, args.element_id, "invoke_element")
    el = plan.element(args.element_id)
    name = args.action
    plan.add("invoke_element", lambda f: InvokeElementAction(element_id=el(f), action=name))


def _scroll(plan: Plan, args: ta.ScrollArgs) -> None:
    direction = ScrollDirection(args.direction)
    amount = args.amount
    if args.element_id is not None:
        el = plan.element(args.element_id)
        plan.add(
            "scroll", lambda f: ScrollAction(element_id=el(f), direction=direction, amount=amount)
        )
        return
    assert args.x is not None and args.y is not None
    point = to_window_point(args.x, args.y, plan.record.image_size)
    plan.add(
        "scroll",
        lambda f: ScrollAction(point=point, direction=direction, amount=amount),
        positional=True,
    )


def _drag(plan: Plan, args: ta.DragArgs) -> None:
    size = plan.record.image_size
    start = to_window_point(args.from_.x, args.from_.y, size)
    end = to_window_point(args.to.x, args.to.y, size)
    plan.add("drag", lambda f: DragAction(start=start, end=end), positional=True)


def _select(plan: Plan, args: ta.SelectTextArgs) -> None:
    el = plan.element(args.element_id)
    s, e = args.start, args.end
    plan.add("select_text", lambda f: SelectTextAction(element_id=el(f), start=s, end=e))
