"""Arguments are validated by the server: unknown fields refused, JSON strings accepted."""

from __future__ import annotations

import pytest

from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.runtime import tool_args as ta
from deskpilot.runtime.runtime import TOOLS


def _bad(model: type[ta.ToolArgs], raw: object) -> DeskpilotError:
    with pytest.raises(DeskpilotError) as exc:
        ta.validate_args("t", model, raw)
    assert exc.value.code is ErrorCode.INVALID_REQUEST
    return exc.value


def test_28_tools_in_five_groups() -> None:
    groups: dict[str, int] = {}
    for spec in TOOLS.values():
        groups[spec.group] = groups.get(spec.group, 0) + 1
    assert groups == {"observation": 8, "action": 10, "delegated": 5, "control": 4, "status": 1}


def test_unknown_fields_are_refused_and_named() -> None:
    err = _bad(ta.ClickArgs, {"state_id": "s", "element_id": 3, "force": True})
    assert "force: unknown field" in err.message
    assert "element_id" in err.details["allowedFields"]


def test_json_string_arguments_are_accepted() -> None:
    a = ta.validate_args("press_key", ta.PressKeyArgs, {"state_id": "s", "keys": '["ctrl+s"]'})
    assert a.keys == ["ctrl+s"]
    b = ta.validate_args("press_key", ta.PressKeyArgs, {"stateId": "s", "keys": "Return"})
    assert b.keys == ["Return"] and b.state_id == "s"
    d = ta.validate_args(
        "drag", ta.DragArgs, {"state_id": "s", "from": '{"x": 1, "y": 2}', "to": {"x": 3, "y": 4}}
    )
    assert (d.from_.x, d.to.y) == (1, 4)
    c = ta.validate_args("click", ta.ClickArgs, '{"state_id": "s", "x": "10", "y": 20}')
    assert (c.x, c.y) == (10, 20)
    t = ta.validate_args("type_text", ta.TypeTextArgs, {"state_id": "s", "text": "[1, 2]"})
    assert t.text == "[1, 2]"  # text stays text


def test_target_rules_and_values_never_echoed() -> None:
    _bad(ta.ClickArgs, {"state_id": "s"})
    _bad(ta.ClickArgs, {"state_id": "s", "element_id": 1, "x": 1, "y": 2})
    _bad(ta.ScrollArgs, {"state_id": "s", "x": 1, "direction": "down"})
    _bad(ta.SelectTextArgs, {"state_id": "s", "element_id": 1, "start": 5, "end": 2})
    err = _bad(ta.TypeTextArgs, {"state_id": "s", "text": "hunter2-secret", "element_id": "x1"})
    assert "hunter2" not in err.message and "x1" not in err.message
    _bad(ta.NoArgs, "not json")
    _bad(ta.NoArgs, [1, 2])


def test_schemas_forbid_extra_properties() -> None:
    for spec in TOOLS.values():
        schema = ta.input_schema(spec.args)
        assert schema["additionalProperties"] is False
    drag = ta.input_schema(ta.DragArgs)
    assert set(drag["required"]) == {"state_id", "from", "to"}


def test_a_boolean_id_and_a_field_sent_twice_are_named_for_what_they_are() -> None:
    err = _bad(ta.ClickArgs, {"state_id": "s", "element_id": True})
    assert "element_id: should be a number, not a boolean" in err.message
    assert "string" not in err.message
    err = _bad(ta.ClickArgs, {"state_id": "s", "stateId": "t", "element_id": 1})
    assert "state_id and stateId: the same field twice; send one spelling" in err.message
    assert "unknown field" not in err.message and "element_id" in err.details["allowedFields"]
