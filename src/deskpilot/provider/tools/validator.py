"""Argument validation against the JSON-schema subset tools actually use.

Tool schemas are untrusted input too: patterns run under the ``regex`` module's timeout with
length caps, and a pattern that is skipped becomes a warning code (for telemetry), never silence.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import regex  # type: ignore[import-untyped]

from deskpilot.provider.tools.fingerprint import json_equal

MAX_PATTERN_CHARS = 512
MAX_PATTERN_INPUT_CHARS = 8192
PATTERN_TIMEOUT_S = 0.05
MAX_DEPTH = 32
MAX_ISSUES = 8
_NESTED_QUANTIFIER = regex.compile(r"\((?:[^()\\]|\\.)*[+*](?:[^()\\]|\\.)*\)\s*(?:[+*]|\{\d*,)")
_UNSUPPORTED = frozenset({"$ref", "patternProperties", "dependentRequired", "if", "not"})
_COMBINATORS = frozenset({"anyOf", "oneOf", "allOf"})
_STRING_KEYS = frozenset({"minLength", "maxLength", "pattern"})
_NUMBER_KEYS = frozenset(
    {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
)
_ARRAY_KEYS = frozenset({"minItems", "maxItems", "items", "uniqueItems"})
_OBJECT_KEYS = frozenset(
    {"required", "properties", "additionalProperties", "minProperties", "maxProperties"}
)


@dataclass(frozen=True, slots=True)
class Issue:
    path: str
    code: str
    message: str


@dataclass(slots=True)
class ValidationReport:
    errors: list[Issue] = field(default_factory=list)
    warnings: list[Issue] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def warning_codes(self) -> list[str]:
        return sorted({w.code for w in self.warnings})

    def summary(self) -> str:
        return "; ".join(f"{e.path}: {e.message}" for e in self.errors[:MAX_ISSUES])


@lru_cache(maxsize=512)
def _pattern_plan(pattern: str) -> tuple[Any, str | None]:
    """Compile once per pattern; the reason to skip it, if any, is decided once too."""
    if len(pattern) > MAX_PATTERN_CHARS:
        return None, "pattern_skipped_too_long"
    if _NESTED_QUANTIFIER.search(pattern):
        return None, "pattern_skipped_nested_quantifier"
    try:
        return regex.compile(pattern), None
    except (regex.error, ValueError, OverflowError):
        return None, "pattern_invalid"


def validate_arguments(schema: Mapping[str, Any] | bool, value: Any) -> ValidationReport:
    report = ValidationReport()
    if isinstance(schema, Mapping) and not isinstance(schema, dict):
        schema = dict(schema)
    _check(schema, value, "$", report, 0)
    return report


def _type_ok(value: Any, name: Any) -> bool:
    if name == "string":
        return isinstance(value, str)
    if name == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "null":
        return value is None
    return True  # unknown type names do not reject


def _err(report: ValidationReport, path: str, code: str, message: str) -> None:
    if len(report.errors) < MAX_ISSUES:
        report.errors.append(Issue(path, code, message))


def _warn(report: ValidationReport, path: str, code: str) -> None:
    if len(report.warnings) < MAX_ISSUES and all(
        w.code != code or w.path != path for w in report.warnings
    ):
        report.warnings.append(Issue(path, code, code.replace("_", " ")))


def _check(schema: Any, value: Any, path: str, report: ValidationReport, depth: int) -> None:
    if schema is True:
        return
    if schema is False:
        _err(report, path, "not_allowed", "no value is allowed here")
        return
    if not isinstance(schema, dict):
        _warn(report, path, "schema_not_object")
        return
    if not schema:
        return
    if depth > MAX_DEPTH:
        _warn(report, path, "schema_too_deep")
        return
    keys = schema.keys()
    if keys & _UNSUPPORTED:
        for key in _UNSUPPORTED:
            if key in schema:
                _warn(report, path, f"unsupported_keyword_{key.strip('$').lower()}")
    declared = schema.get("type")
    if declared is not None:
        if type(declared) is str:
            fits = _type_ok(value, declared)
        else:
            types = declared if isinstance(declared, list) else [declared]
            fits = any(_type_ok(value, t) for t in types)
        if not fits:
            types = declared if isinstance(declared, list) else [declared]
            _err(report, path, "type", f"expected {'/'.join(map(str, types))}")
            return
    enum = schema.get("enum")
    if isinstance(enum, list) and not any(json_equal(value, option) for option in enum):
        _err(report, path, "enum", "value is not one of the allowed options")
    if "const" in schema and not json_equal(value, schema["const"]):
        _err(report, path, "const", "value is not the required constant")
    if keys & _COMBINATORS:
        _check_combinators(schema, value, path, report, depth)
    if isinstance(value, str):
        if keys & _STRING_KEYS:
            _check_string(schema, value, path, report)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        if keys & _NUMBER_KEYS:
            _check_number(schema, value, path, report)
    elif isinstance(value, list):
        if keys & _ARRAY_KEYS:
            _check_array(schema, value, path, report, depth)
    elif isinstance(value, dict) and keys & _OBJECT_KEYS:
        _check_object(schema, value, path, report, depth)


def _passes(schema: Any, value: Any, path: str, report: ValidationReport, depth: int) -> bool:
    sub = ValidationReport()
    _check(schema, value, path, sub, depth + 1)
    for warning in sub.warnings:
        _warn(report, warning.path, warning.code)
    return sub.ok


def _check_combinators(
    schema: Mapping[str, Any], value: Any, path: str, report: ValidationReport, depth: int
) -> None:
    any_of = schema.get("anyOf")
    if (
        isinstance(any_of, list)
        and any_of
        and not any(_passes(s, value, path, report, depth) for s in any_of)
    ):
        _err(report, path, "anyOf", "value matches none of the allowed shapes")
    one_of = schema.get("oneOf")
    if isinstance(one_of, list) and one_of:
        hits = sum(1 for s in one_of if _passes(s, value, path, report, depth))
        if hits != 1:
            _err(report, path, "oneOf", f"value matches {hits} shapes; exactly one is required")
    all_of = schema.get("allOf")
    if isinstance(all_of, list):
        for sub in all_of:
            _check(sub, value, path, report, depth + 1)


def _check_string(
    schema: Mapping[str, Any], value: str, path: str, report: ValidationReport
) -> None:
    low, high = schema.get("minLength"), schema.get("maxLength")
    if isinstance(low, int) and len(value) < low:
        _err(report, path, "minLength", f"shorter than {low} characters")
    if isinstance(high, int) and len(value) > high:
        _err(report, path, "maxLength", f"longer than {high} characters")
    pattern = schema.get("pattern")
    if not isinstance(pattern, str):
        return
    compiled, skip = _pattern_plan(pattern)
    if skip is None and len(value) > MAX_PATTERN_INPUT_CHARS:
        skip = "pattern_skipped_input_too_long"
    if skip is not None:
        _warn(report, path, skip)
        return
    try:
        matched = compiled.search(value, timeout=PATTERN_TIMEOUT_S) is not None
    except TimeoutError:
        _warn(report, path, "pattern_timeout")
        return
    if not matched:
        _err(report, path, "pattern", "does not match the required pattern")


def _check_number(
    schema: Mapping[str, Any], value: float, path: str, report: ValidationReport
) -> None:
    def num(key: str) -> float | None:
        raw = schema.get(key)
        return raw if type(raw) is int or type(raw) is float else None

    minimum, maximum = num("minimum"), num("maximum")
    if minimum is not None and value < minimum:
        _err(report, path, "minimum", f"less than {minimum}")
    if maximum is not None and value > maximum:
        _err(report, path, "maximum", f"greater than {maximum}")
    ex_min, ex_max = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if ex_min is None and ex_max is None and "multipleOf" not in schema:
        return
    if ex_min is True and minimum is not None and value <= minimum:  # draft-4 boolean form
        _err(report, path, "exclusiveMinimum", f"not greater than {minimum}")
    elif (v := num("exclusiveMinimum")) is not None and value <= v:
        _err(report, path, "exclusiveMinimum", f"not greater than {v}")
    if ex_max is True and maximum is not None and value >= maximum:
        _err(report, path, "exclusiveMaximum", f"not less than {maximum}")
    elif (v := num("exclusiveMaximum")) is not None and value >= v:
        _err(report, path, "exclusiveMaximum", f"not less than {v}")
    step = num("multipleOf")
    if step is not None and step > 0:
        quotient = value / step
        if not math.isclose(quotient, round(quotient), rel_tol=1e-9, abs_tol=1e-9):
            _err(report, path, "multipleOf", f"not a multiple of {step}")


def _check_array(
    schema: Mapping[str, Any], value: list[Any], path: str, report: ValidationReport, depth: int
) -> None:
    low, high = schema.get("minItems"), schema.get("maxItems")
    if isinstance(low, int) and len(value) < low:
        _err(report, path, "minItems", f"fewer than {low} items")
    if isinstance(high, int) and len(value) > high:
        _err(report, path, "maxItems", f"more than {high} items")
    items = schema.get("items")
    if isinstance(items, dict | bool):
        for i, item in enumerate(value):
            _check(items, item, f"{path}[{i}]", report, depth + 1)
    elif isinstance(items, list):
        for i, (item, sub) in enumerate(zip(value, items, strict=False)):
            _check(sub, item, f"{path}[{i}]", report, depth + 1)
    if schema.get("uniqueItems") is True:
        for i in range(len(value)):
            if any(json_equal(value[i], value[j]) for j in range(i)):
                _err(report, path, "uniqueItems", "items are not unique")
                break


def _check_object(
    schema: Mapping[str, Any],
    value: Mapping[str, Any],
    path: str,
    report: ValidationReport,
    depth: int,
) -> None:
    required = schema.get("required")
    if isinstance(required, list):
        for key in required:
            if isinstance(key, str) and key not in value:
                _err(report, f"{path}.{key}", "required", "is required")
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        if key in props:
            _check(props[key], item, f"{path}.{key}", report, depth + 1)
        elif extra is False:
            _err(report, f"{path}.{key}", "additionalProperties", "is not an allowed property")
        elif isinstance(extra, dict):
            _check(extra, item, f"{path}.{key}", report, depth + 1)
    low, high = schema.get("minProperties"), schema.get("maxProperties")
    if isinstance(low, int) and len(value) < low:
        _err(report, path, "minProperties", f"fewer than {low} properties")
    if isinstance(high, int) and len(value) > high:
        _err(report, path, "maxProperties", f"more than {high} properties")
