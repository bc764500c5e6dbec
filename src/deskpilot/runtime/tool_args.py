"""Argument models of the 28 tools, validated by the server itself.

Clients do not all validate against the published schema (pi's MCP adapter strips
``additionalProperties``; some models send nested values as JSON strings), so the runtime
validates every call: unknown fields are refused, JSON-string values are accepted where a
list, object, number or boolean is expected, and both ``state_id`` and ``stateId`` spellings
are read. Error messages name fields and rules, never the values (they may be typed text).
"""

from __future__ import annotations

import json
import types
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from deskpilot.protocol.errors import ErrorCode
from deskpilot.protocol.session import DELEGATED_CONTRACT_LIMITS
from deskpilot.protocol.verification import VerificationSpec
from deskpilot.protocol.wire import ClickModifier
from deskpilot.runtime.refusals import RuntimeRefusal, refusal


class ToolArgs(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        str_strip_whitespace=False,
        allow_inf_nan=False,  # NaN/inf coordinates or amounts: "should be a finite number"
    )

    @model_validator(mode="before")
    @classmethod
    def _json_strings(cls, data: Any) -> Any:
        """Parse values that arrive as JSON text where a structured value is expected."""
        if not isinstance(data, dict):
            return data
        out = dict(data)
        by_key: dict[str, Any] = {}
        for name, field in cls.model_fields.items():
            by_key[name] = field.annotation
            if field.alias:
                by_key[field.alias] = field.annotation
            by_key[to_camel(name)] = field.annotation
        for key, value in data.items():
            ann = by_key.get(key)
            if ann is not None and isinstance(value, bool) and not _accepts(ann, bool):
                out[key] = _NOT_A_NUMBER  # JSON true is not element 1 (pydantic would take it)
                continue
            if ann is None or not isinstance(value, str) or _accepts(ann, str):
                continue
            text = value.strip()
            if text[:1] in "[{" or text in ("true", "false", "null"):
                try:
                    out[key] = json.loads(text)
                except ValueError:
                    continue
        return out


_NOT_A_NUMBER = "<a boolean>"


def _accepts(ann: Any, kind: type) -> bool:
    if ann is kind:
        return True
    return get_origin(ann) in (Union, types.UnionType) and kind in get_args(ann)


AppRef = str | int


class NoArgs(ToolArgs):
    pass


class AppArgs(ToolArgs):
    app: AppRef | None = Field(
        default=None,
        description="Accessibility name, executable, WM_CLASS, desktop id, pid, or a window "
        "id (0x…). Omitted: the bound target, else the focused window.",
    )


class PixelPoint(ToolArgs):
    x: float = Field(ge=0, description="Pixels from the left of the last image you saw")
    y: float = Field(ge=0, description="Pixels from the top of the last image you saw")


class _StateArgs(ToolArgs):
    state_id: str = Field(min_length=1, description="The state_id of the state you are acting on")
    expect: list[VerificationSpec] | None = Field(
        default=None,
        max_length=16,
        description="Optional verification specs checked on the state after the action; the "
        "result says passed/failed/undecidable per spec (docs/verification.md)",
    )


class ClickArgs(_StateArgs):
    element_id: int | None = Field(default=None, ge=1)
    x: float | None = Field(default=None, ge=0)
    y: float | None = Field(default=None, ge=0)
    button: Literal["left", "right", "middle"] = "left"
    count: int = Field(default=1, ge=1, le=3)
    modifiers: list[ClickModifier] = Field(
        default_factory=list,
        max_length=4,
        description='Keys held during the click: ["ctrl"] adds an item to a selection (a '
        'ctrl-click), ["shift"] extends it to the item',
    )

    @field_validator("modifiers")
    @classmethod
    def _once_each(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("each modifier at most once")
        return value

    @model_validator(mode="after")
    def _target(self) -> ClickArgs:
        _one_target(self.element_id, self.x, self.y)
        return self


_KEYS_ELEMENT = "The element the keys go to: it is focused (else clicked) first"
_KEYS_X = "Where the keys go, as a point to click first: pixels from the left of the last image"
_KEYS_Y = "Where the keys go, as a point to click first: pixels from the top of the last image"


class _KeysArgs(_StateArgs):
    """Where keys go: the focused element by default; an element to focus, or a point of the
    image to click, first. A state that cannot show the focus needs one of them
    (runtime/text_targets.py ``check_keys_target``)."""

    element_id: int | None = Field(default=None, ge=1, description=_KEYS_ELEMENT)
    x: float | None = Field(default=None, ge=0, description=_KEYS_X)
    y: float | None = Field(default=None, ge=0, description=_KEYS_Y)

    @model_validator(mode="after")
    def _where(self) -> _KeysArgs:
        _at_most_one_target(self.element_id, self.x, self.y)
        return self

    @property
    def point(self) -> tuple[float, float] | None:
        return (self.x, self.y) if self.x is not None and self.y is not None else None


class TypeTextArgs(_KeysArgs):
    text: str = Field(min_length=1, max_length=100_000)
    submit: bool = False


class PasteArgs(_KeysArgs):
    text: str = Field(min_length=1, max_length=1_000_000)
    submit: bool = False


class PressKeyArgs(_KeysArgs):
    keys: list[str] = Field(
        min_length=1,
        max_length=64,
        description='Key chords pressed in order, e.g. ["ctrl+s"] or ["Tab", "Return"]',
    )

    @model_validator(mode="before")
    @classmethod
    def _single_chord(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("keys"), str):
            text = data["keys"].strip()
            if not text.startswith("["):
                data = {**data, "keys": [text]}
        return data


class SetValueArgs(_StateArgs):
    element_id: int = Field(ge=1)
    value: str | float


class InvokeElementArgs(_StateArgs):
    element_id: int = Field(ge=1)
    action: str | None = Field(default=None, max_length=200)


class ScrollArgs(_StateArgs):
    element_id: int | None = Field(default=None, ge=1)
    x: float | None = Field(default=None, ge=0)
    y: float | None = Field(default=None, ge=0)
    direction: Literal["up", "down", "left", "right"]
    amount: int = Field(default=3, ge=1, le=100)

    @model_validator(mode="after")
    def _target(self) -> ScrollArgs:
        _one_target(self.element_id, self.x, self.y)
        return self


class DragArgs(_StateArgs):
    from_: PixelPoint = Field(alias="from")
    to: PixelPoint


class SelectTextArgs(_StateArgs):
    element_id: int = Field(ge=1)
    start: int = Field(ge=0)
    end: int = Field(ge=0)

    @model_validator(mode="after")
    def _order(self) -> SelectTextArgs:
        if self.end < self.start:
            raise ValueError("end must be >= start")
        return self


class SecondaryActionArgs(_StateArgs):
    element_id: int = Field(ge=1)


class OpenAppArgs(ToolArgs):
    app: str = Field(min_length=1, description="A desktop id (org.gnome.Calculator) or executable")
    args: list[str] = Field(default_factory=list, max_length=64)
    timeout_ms: int = Field(default=20_000, ge=100, le=120_000)


class BindTargetArgs(ToolArgs):
    app: AppRef | None = None
    window_id: str | None = None

    @model_validator(mode="after")
    def _one(self) -> BindTargetArgs:
        if (self.app is None) == (self.window_id is None):
            raise ValueError("give exactly one of app or window_id")
        return self


class StopArgs(ToolArgs):
    reason: str | None = Field(default=None, max_length=500)


class StartTaskArgs(ToolArgs):
    goal: str = Field(min_length=1, max_length=4_000)
    app: AppRef | None = None
    window_id: str | None = None
    #: omitted = derived from the acceptance sentences or the goal; an empty list is refused
    #: (it would silently mean the weakest default check)
    success_criteria: list[VerificationSpec] | None = Field(
        default=None, min_length=1, max_length=32
    )
    acceptance_criteria: list[str] = Field(default_factory=list, max_length=16)
    #: only "my_desktop" is provided; anything else is refused by the handler, in words
    environment: str = "my_desktop"
    #: tighter limits than the delegated contract's (never looser)
    max_steps: int | None = Field(default=None, ge=1, le=DELEGATED_CONTRACT_LIMITS["max_steps"])
    max_runtime_ms: int | None = Field(
        default=None, ge=1_000, le=DELEGATED_CONTRACT_LIMITS["max_runtime_ms"]
    )
    max_consecutive_noops: int | None = Field(
        default=None, ge=1, le=DELEGATED_CONTRACT_LIMITS["max_consecutive_noops"]
    )
    allowed_apps: list[str] | None = Field(default=None, max_length=16)

    @model_validator(mode="after")
    def _target(self) -> StartTaskArgs:
        if (self.app is None) == (self.window_id is None):
            raise ValueError("give exactly one of app or window_id")
        return self


class TaskRefArgs(ToolArgs):
    task_id: str | None = None


class WaitArgs(ToolArgs):
    task_id: str | None = None
    timeout_ms: int = Field(default=120_000, ge=100, le=300_000)


class TaskControlArgs(ToolArgs):
    """pause / takeover / resume: the caller's delegated task when it has a live one (or the
    one named), else its own atomic session."""

    task_id: str | None = None


class TaskStopArgs(StopArgs):
    task_id: str | None = None


class TaskBindArgs(BindTargetArgs):
    task_id: str | None = None


def _one_target(element_id: int | None, x: float | None, y: float | None) -> None:
    if element_id is not None:
        if x is not None or y is not None:
            raise ValueError("give element_id or x and y, not both")
        return
    if x is None or y is None:
        raise ValueError("give element_id, or both x and y")


def _at_most_one_target(element_id: int | None, x: float | None, y: float | None) -> None:
    if (x is None) != (y is None):
        raise ValueError("give both x and y, or neither")
    if element_id is not None and x is not None:
        raise ValueError("give element_id or x and y, not both")


def validate_args(tool: str, model: type[ToolArgs], raw: Any) -> Any:
    """Validate, or raise ``invalid_request`` naming the fields and rules (not the values)."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except ValueError:
            raise refusal(
                ErrorCode.INVALID_REQUEST, f"Arguments for {tool} are not a JSON object."
            ) from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise refusal(ErrorCode.INVALID_REQUEST, f"Arguments for {tool} must be an object.")
    problems = _double_spellings(model, raw)
    if not problems:
        try:
            return model.model_validate(raw)
        except ValidationError as exc:
            problems = _problems(exc, raw)
    allowed = sorted(
        (f.alias or n) if n.endswith("_") else n for n, f in model.model_fields.items()
    )
    raise refusal(
        ErrorCode.INVALID_REQUEST,
        f"Invalid arguments for {tool}: " + "; ".join(problems[:10]),
        problems=problems[:10],
        allowedFields=allowed,
    )


def _problems(exc: ValidationError, raw: dict[str, Any]) -> list[str]:
    """One line per broken rule, naming the field and the rule, never the value."""
    problems: list[str] = []
    for err in exc.errors(include_input=False, include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        if err["type"] == "extra_forbidden":
            problems.append(f"{loc}: unknown field")
        elif len(err["loc"]) == 1 and isinstance(raw.get(str(err["loc"][0])), bool):
            problems.append(f"{loc}: should be a number, not a boolean")
        else:
            problems.append(f"{loc}: {err['msg']}")
    return problems


def _double_spellings(model: type[ToolArgs], raw: dict[str, Any]) -> list[str]:
    """A field sent under both its spellings (``state_id`` and ``stateId``): which one is meant
    cannot be told, and pydantic would report the second as an unknown field."""
    return [
        f"{name} and {to_camel(name)}: the same field twice; send one spelling"
        for name in model.model_fields
        if name != to_camel(name) and name in raw and to_camel(name) in raw
    ]


def input_schema(model: type[ToolArgs]) -> dict[str, Any]:
    """The published JSON schema: snake_case names, no extra properties."""
    schema = model.model_json_schema(by_alias=False)
    if "from_" in schema.get("properties", {}):
        props = schema["properties"]
        props["from"] = props.pop("from_")
        schema["required"] = ["from" if r == "from_" else r for r in schema.get("required", [])]
    schema["additionalProperties"] = False
    return schema


def schema_without(model: type[ToolArgs], fields: frozenset[str]) -> dict[str, Any]:
    """The published schema without ``fields`` (and the definitions only they used): what a
    model is shown when the caller fills those fields itself or never needs them."""
    schema = input_schema(model)
    props = {k: v for k, v in schema.get("properties", {}).items() if k not in fields}
    out: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    required = [r for r in schema.get("required", []) if r not in fields]
    if required:
        out["required"] = required
    text = json.dumps(props)
    used = {k: v for k, v in schema.get("$defs", {}).items() if f"#/$defs/{k}" in text}
    if used:
        out["$defs"] = used
    return out


__all__ = ["RuntimeRefusal", "ToolArgs", "input_schema", "schema_without", "validate_args"]
