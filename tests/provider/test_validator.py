"""Argument validation over the JSON-schema subset, with bounded patterns and warnings."""

from __future__ import annotations

import time

import pytest

from deskpilot.provider.tools import fingerprint, json_equal, validate_arguments


def errors(schema: dict, value: object) -> list[str]:
    return [e.code for e in validate_arguments(schema, value).errors]


def test_required_properties_additional() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    assert errors(schema, {"a": "x", "b": 2}) == []
    assert errors(schema, {"b": 2}) == ["required"]
    assert errors(schema, {"a": "x", "c": 1}) == ["additionalProperties"]
    assert errors(schema, {"a": 1}) == ["type"]
    assert errors(schema, {"a": "x", "b": True}) == ["type"]  # booleans are not integers
    assert errors(schema, {"a": "x", "b": 2.0}) == []
    assert errors(schema, []) == ["type"]
    assert errors({"type": "object", "additionalProperties": {"type": "number"}}, {"x": "no"}) == [
        "type"
    ]


def test_types_and_unions() -> None:
    assert errors({"type": ["string", "null"]}, None) == []
    assert errors({"type": ["string", "null"]}, 3) == ["type"]
    assert errors({"type": "number"}, True) == ["type"]
    assert errors({"type": "array", "items": {"type": "integer"}}, [1, "2"]) == ["type"]
    assert (
        errors({"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}, ["a", 1])
        == []
    )


def test_enum_and_const_compare_as_json() -> None:
    schema = {"enum": [{"a": 1, "b": [1, 2]}, "x", 1]}
    assert errors(schema, {"b": [1, 2], "a": 1}) == []  # key order ignored
    assert errors(schema, {"a": 1, "b": [2, 1]}) == ["enum"]  # list order matters
    assert errors(schema, True) == ["enum"]  # true is not 1
    assert errors(schema, 1.0) == []
    assert errors({"const": False}, 0) == ["const"]
    assert json_equal({"a": {"x": 1, "y": 2}}, {"a": {"y": 2, "x": 1}})
    assert fingerprint("t", {"a": 1, "b": {"c": 2, "d": 3}}) == fingerprint(
        "t", {"b": {"d": 3, "c": 2}, "a": 1.0}
    )
    assert fingerprint("t", {"a": 1}) != fingerprint("t", {"a": True})


def test_any_of_one_of_all_of() -> None:
    any_of = {"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 5}]}
    assert errors(any_of, "s") == [] and errors(any_of, 7) == []
    assert errors(any_of, 2) == ["anyOf"]
    one_of = {"oneOf": [{"type": "integer"}, {"type": "number"}]}
    assert errors(one_of, 1.5) == []
    assert errors(one_of, 2) == ["oneOf"]  # both match
    assert errors({"allOf": [{"minLength": 2}, {"maxLength": 3}]}, "abcd") == ["maxLength"]


def test_bounds() -> None:
    assert errors({"type": "string", "minLength": 2, "maxLength": 4}, "a") == ["minLength"]
    assert errors({"type": "string", "maxLength": 2}, "日本語") == ["maxLength"]
    assert errors({"minimum": 1, "maximum": 3}, 0) == ["minimum"]
    assert errors({"minimum": 1, "maximum": 3}, 4) == ["maximum"]
    assert errors({"exclusiveMinimum": 1}, 1) == ["exclusiveMinimum"]
    assert errors({"exclusiveMaximum": 1}, 1) == ["exclusiveMaximum"]
    assert errors({"minimum": 1, "exclusiveMinimum": True}, 1) == ["exclusiveMinimum"]
    assert errors({"multipleOf": 0.1}, 0.3) == []
    assert errors({"multipleOf": 3}, 10) == ["multipleOf"]
    assert errors({"minItems": 1, "maxItems": 2}, []) == ["minItems"]
    assert errors({"minItems": 1, "maxItems": 2}, [1, 2, 3]) == ["maxItems"]
    assert errors({"uniqueItems": True}, [{"a": 1}, {"a": 1}]) == ["uniqueItems"]
    assert errors({"minProperties": 1}, {}) == ["minProperties"]
    assert errors({"maxProperties": 1}, {"a": 1, "b": 2}) == ["maxProperties"]


def test_pattern_matches_and_rejects() -> None:
    assert errors({"pattern": "^https?://"}, "https://x") == []
    assert errors({"pattern": "^https?://"}, "ftp://x") == ["pattern"]


@pytest.mark.parametrize(
    ("schema", "value", "code"),
    [
        ({"pattern": "(a+)+$"}, "a" * 30 + "!", "pattern_skipped_nested_quantifier"),
        ({"pattern": "x" * 600}, "x", "pattern_skipped_too_long"),
        ({"pattern": "^a"}, "a" * 10_000, "pattern_skipped_input_too_long"),
        ({"pattern": "(unclosed"}, "x", "pattern_invalid"),
        ({"$ref": "#/defs/x"}, "x", "unsupported_keyword_ref"),
    ],
)
def test_skipped_checks_are_warnings_not_silence(schema: dict, value: str, code: str) -> None:
    report = validate_arguments(schema, value)
    assert report.ok
    assert report.warning_codes() == [code]


def test_catastrophic_pattern_is_time_bounded() -> None:
    # no nested-quantifier shape the heuristic knows, still exponential: alternation overlap
    schema = {"pattern": "^(a|a)*b$"}
    started = time.monotonic()
    report = validate_arguments(schema, "a" * 40)
    assert time.monotonic() - started < 1.0
    assert report.ok or report.errors[0].code == "pattern"
    assert report.warning_codes() in ([], ["pattern_timeout"])


def test_error_list_is_bounded() -> None:
    schema = {"type": "object", "additionalProperties": False}
    report = validate_arguments(schema, {f"k{i}": i for i in range(50)})
    assert len(report.errors) == 8
