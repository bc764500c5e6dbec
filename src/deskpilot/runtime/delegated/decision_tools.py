"""The tools the decision model sees: the atomic actions (without ``state_id``: the operator
always acts on the state it just showed the model) and the loop's own decisions.

``act_batch`` is offered only while the ``actionBatch`` flag is on; with it off the model
decides one action at a time. The schemas are derived from the same argument models the
runtime validates against (runtime/tool_args.py), so what the model is told and what is
accepted cannot drift apart.
"""

from __future__ import annotations

from typing import Any

from deskpilot.provider import ToolSpec as ModelTool
from deskpilot.runtime import tool_args as ta

#: the atomic actions as the model is told of them (ids are the [N] of the state it sees)
ACTIONS: dict[str, tuple[type[ta.ToolArgs], str]] = {
    "click": (
        ta.ClickArgs,
        "Click an element (element_id) or a point (x, y in pixels of the image). A single "
        "left click on a list/table/tree row selects it; count 2 opens it.",
    ),
    "type_text": (
        ta.TypeTextArgs,
        "Type text into an element that takes text (element_id focuses it first, x, y "
        "clicks that point first; without either the focused element); submit=true presses "
        "Enter after.",
    ),
    "paste": (ta.PasteArgs, "Paste text through the clipboard into an element that takes text."),
    "set_value": (ta.SetValueArgs, "Set an element's value (text field, slider, spin box)."),
    "invoke_element": (
        ta.InvokeElementArgs,
        "Run an element's accessibility action (default: its primary one).",
    ),
    "press_key": (
        ta.PressKeyArgs,
        'Press key chords in order, e.g. ["ctrl+s"] or ["Tab"] (element_id or x, y: focus or '
        "click there first).",
    ),
    "scroll": (ta.ScrollArgs, "Scroll an element or at a point: direction and amount."),
    "drag": (ta.DragArgs, "Drag from one point {x, y} to another, in pixels of the image."),
    "select_text": (ta.SelectTextArgs, "Select characters start..end in a text element."),
    "perform_secondary_action": (
        ta.SecondaryActionArgs,
        "An element's secondary action (a context menu).",
    ),
}
ATOMIC = tuple(ACTIONS)
READY = "ready_for_verification"
HANDOFF = "need_handoff"
GIVE_UP = "give_up"
BATCH = "act_batch"
MIN_BATCH, MAX_BATCH = 2, 8
#: fields the operator fills in itself
OPERATOR_FIELDS = frozenset({"state_id", "expect"})


def _action_schema(name: str) -> dict[str, Any]:
    return ta.schema_without(ACTIONS[name][0], OPERATOR_FIELDS)


def decision_tools(*, batching: bool) -> list[ModelTool]:
    tools = [ModelTool(n, ACTIONS[n][1], _action_schema(n)) for n in ATOMIC]
    if batching:
        tools.append(
            ModelTool(
                BATCH,
                f"Run {MIN_BATCH}-{MAX_BATCH} of the actions above in order on the state you "
                "see (e.g. fill several fields, then press a button). The batch stops at the "
                "first error, refusal or unexpected change (a dialog, another window); you "
                "then see where it stopped.",
                {
                    "type": "object",
                    "properties": {
                        "actions": {
                            "type": "array",
                            "minItems": MIN_BATCH,
                            "maxItems": MAX_BATCH,
                            "items": {
                                "type": "object",
                                "properties": {
                                    "name": {"type": "string", "enum": list(ATOMIC)},
                                    "arguments": {"type": "object"},
                                },
                                "required": ["name", "arguments"],
                                "additionalProperties": False,
                            },
                        }
                    },
                    "required": ["actions"],
                    "additionalProperties": False,
                },
            )
        )
    tools += [
        ModelTool(
            READY,
            "Say the goal is reached: deskpilot then checks the success criteria on the "
            "window as it is now. If a check fails you are told which and may go on.",
            {"type": "object", "properties": {}, "additionalProperties": False},
        ),
        ModelTool(
            HANDOFF,
            "Hand the task to the person (a login, a decision only they can make, something "
            "unsafe). Give the reason.",
            _reason_schema(),
        ),
        ModelTool(
            GIVE_UP,
            "Stop: the goal cannot be reached from here. Give the reason.",
            _reason_schema(),
        ),
    ]
    return tools


def _reason_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"reason": {"type": "string", "minLength": 1, "maxLength": 500}},
        "required": ["reason"],
        "additionalProperties": False,
    }
