"""The settings page without HTTP: one control per setting, what a form post means, and why a
value is refused.

The controls are derived from :class:`~deskpilot.store.settings.SettingsModel` itself — its
fields in order, their types and their constraints — so a field added to the model gets a
control (or, when its type has none, :func:`controls` raises and the page's tests fail); the
number limits shown in the browser are the model's own ``ge``/``le``. Validation is per
field, so a post with three bad values says all three, each next to its field, and saves
nothing; a post without errors writes only the fields whose value changed, through
:meth:`Settings.update` (the one validator every writer goes through), which tells this
process's listeners and bumps the revision other processes poll.

Checkboxes are posted as a hidden ``0`` followed by the box's ``1`` (the last value wins), so
a field that was not in the post at all is left as it is rather than read as "off".
"""

from __future__ import annotations

import functools
import typing
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from annotated_types import Ge, Le
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from deskpilot.protocol.chords import chord_check
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.store.db import Database
from deskpilot.store.settings import Settings, SettingsModel

MIB = 1024 * 1024

Kind = Literal["checkbox", "number", "select", "chord", "lines", "mib", "group"]

#: fields whose type alone does not say which control fits
KIND_OVERRIDES: dict[str, Kind] = {"kill_switch": "chord", "vault_quota_bytes": "mib"}

#: the page's sections, in order, and the fields each holds; a field not named here is shown
#: in "other" (it still gets its control)
SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "agents",
        (
            "enabled",
            "environments",
            "allowed_apps",
            "require_confirmation_above",
            "confirmation_timeout_seconds",
            "allow_external_readback",
        ),
    ),
    ("stopping", ("kill_switch", "escape_cancels_action")),
    (
        "privacy",
        (
            "redact_sensitive_content",
            "full_recording_enabled",
            "evidence_retention_days",
            "vault_quota_bytes",
        ),
    ),
    ("dashboard", ("remote",)),
)

#: an allowedApps entry: at most this long, at most this many entries
APP_NAME_MAX = 200
APPS_MAX = 200


@dataclass(frozen=True)
class Problem:
    """Why a value was refused: an i18n key and its fields (rendered in the page's locale)."""

    key: str
    fields: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Control:
    """One input of the form. ``name`` is the post's field name: the setting's camelCase
    name, ``group.child`` for a checkbox inside a group (``environments.myDesktop``)."""

    name: str
    field: str
    kind: Kind
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    children: tuple[Control, ...] = ()
    #: the child's attribute in its group model (groups only)
    attr: str = ""

    @property
    def message_key(self) -> str:
        """The prefix of this control's i18n keys (``settings.f.<name>.label`` / ``.help``)."""
        return f"settings.f.{self.name}"


def _bounds(info: FieldInfo) -> tuple[int | None, int | None]:
    low = high = None
    for meta in info.metadata:
        if isinstance(meta, Ge):
            low = int(meta.ge)  # type: ignore[call-overload]
        elif isinstance(meta, Le):
            high = int(meta.le)  # type: ignore[call-overload]
    return low, high


def _control(name: str, info: FieldInfo) -> Control:
    alias = info.alias or name
    annotation = info.annotation
    kind = KIND_OVERRIDES.get(name)
    low, high = _bounds(info)
    if kind == "mib":
        return Control(
            alias, name, "mib", minimum=-(-low // MIB) if low else None, maximum=_mib(high)
        )
    if kind == "chord":
        return Control(alias, name, "chord")
    if annotation is bool:
        return Control(alias, name, "checkbox")
    if annotation is int:
        return Control(alias, name, "number", minimum=low, maximum=high)
    if typing.get_origin(annotation) is Literal:
        return Control(
            alias, name, "select", choices=tuple(str(a) for a in typing.get_args(annotation))
        )
    if typing.get_origin(annotation) is list and typing.get_args(annotation) == (str,):
        return Control(alias, name, "lines")
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        children = []
        for child, child_info in annotation.model_fields.items():
            if child_info.annotation is not bool:
                raise TypeError(f"settings group {name}.{child} is not a checkbox")
            child_alias = child_info.alias or child
            children.append(Control(f"{alias}.{child_alias}", name, "checkbox", attr=child))
        return Control(alias, name, "group", children=tuple(children))
    raise TypeError(f"setting {name!r} ({annotation!r}) has no control on the settings page")


def _mib(value: int | None) -> int | None:
    return None if value is None else value // MIB


@functools.cache
def controls() -> tuple[Control, ...]:
    """Every setting's control, in the model's field order (the model is fixed at import:
    computed once)."""
    return tuple(_control(n, i) for n, i in SettingsModel.model_fields.items())


@dataclass(frozen=True)
class Section:
    key: str
    controls: tuple[Control, ...]


def sections() -> tuple[Section, ...]:
    """The controls grouped for the page; every control appears exactly once."""
    by_field = {c.field: c for c in controls()}
    out: list[Section] = []
    placed: set[str] = set()
    for key, names in SECTIONS:
        chosen = tuple(by_field[n] for n in names if n in by_field)
        placed.update(c.field for c in chosen)
        if chosen:
            out.append(Section(key, chosen))
    rest = tuple(c for f, c in by_field.items() if f not in placed)
    if rest:
        out.append(Section("other", rest))
    return tuple(out)


# ---------------------------------------------------------------------- showing values


def shown(control: Control, model: SettingsModel) -> Any:
    """The value a control shows for ``model``: bool for a checkbox, else text."""
    value = getattr(model, control.field)
    if control.kind == "group":
        raise ValueError("a group shows its children")
    if control.attr:
        return bool(getattr(value, control.attr))
    if control.kind == "checkbox":
        return bool(value)
    if control.kind == "mib":
        return _mib_text(int(value))
    if control.kind == "lines":
        return "\n".join(value)
    return str(value)


def _mib_text(value: int) -> str:
    mib = Decimal(value) / MIB
    text = f"{mib:.2f}".rstrip("0").rstrip(".")
    return text


def values_of(model: SettingsModel) -> dict[str, Any]:
    """Control name → what it shows, for every control (groups through their children)."""
    out: dict[str, Any] = {}
    for control in controls():
        for c in control.children or (control,):
            out[c.name] = shown(c, model)
    return out


def differs_from_default(control: Control, model: SettingsModel) -> bool:
    return bool(getattr(model, control.field) != getattr(Settings.defaults(), control.field))


def default_text(control: Control) -> Any:
    """The default as the control would show it (for "default: …" next to the field)."""
    defaults = Settings.defaults()
    if control.kind == "group":
        return {c.name: shown(c, defaults) for c in control.children}
    return shown(control, defaults)


# ---------------------------------------------------------------------- reading a post


FormData = Mapping[str, Sequence[str]]


@dataclass
class Outcome:
    """What a post asked for: the changed settings (field → value), the refusals (control
    name → problem), and what the person entered (control name → as entered), so a refused
    form is shown again with their values, not the stored ones."""

    changes: dict[str, Any] = field(default_factory=dict)
    problems: dict[str, Problem] = field(default_factory=dict)
    entered: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems


def _last(form: FormData, name: str) -> str | None:
    values = form.get(name)
    if not values:
        return None
    return str(values[-1])


def _checkbox(form: FormData, name: str) -> tuple[bool | None, Problem | None]:
    raw = _last(form, name)
    if raw is None:
        return None, None
    if raw not in ("0", "1"):
        return None, Problem("settings.error.checkbox")
    return raw == "1", None


def _number(raw: str, control: Control) -> tuple[int | None, Problem | None]:
    bounds: dict[str, object] = {"min": control.minimum, "max": control.maximum}
    try:
        value = int(raw.strip())
    except ValueError:
        return None, Problem("settings.error.integer", bounds)
    low, high = control.minimum, control.maximum
    if (low is not None and value < low) or (high is not None and value > high):
        return None, Problem("settings.error.range", bounds)
    return value, None


def _quota(raw: str, control: Control, current: int) -> tuple[int | None, Problem | None]:
    """A whole number of MiB within the model's bounds, parsed exactly (no float, no
    rounding: ``int`` on ASCII digits only)."""
    text = raw.strip()
    if text == _mib_text(current):
        return current, None  # shown rounded: posting it back unchanged must not alter it
    bounds: dict[str, object] = {"min": control.minimum, "max": control.maximum}
    if not text.isascii() or not text.isdigit() or len(text) > 12:
        return None, Problem("settings.error.mib", bounds)
    mib = int(text)
    minimum, maximum = _bounds(SettingsModel.model_fields[control.field])
    if minimum is not None and mib * MIB < minimum:
        return None, Problem("settings.error.quota_min", bounds)
    if maximum is not None and mib * MIB > maximum:
        return None, Problem("settings.error.range", bounds)
    return mib * MIB, None


def chord_refusal(chord: str) -> Problem | None:
    """Why the kill switch could never grab ``chord``, in the page's words: the rule and its
    reason come from :func:`deskpilot.protocol.chords.chord_check` (the store applies the same
    on save); this only picks the message for its code."""
    problem = chord_check(chord.strip())
    if problem is None:
        return None
    return Problem(f"settings.error.chord_{problem.code}", dict(problem.fields))


def _apps(raw: str) -> tuple[list[str] | None, Problem | None]:
    seen: set[str] = set()
    apps: list[str] = []
    for line in raw.splitlines():
        name = line.strip()
        if not name:
            continue
        if len(name) > APP_NAME_MAX or any(unicodedata.category(ch)[0] == "C" for ch in name):
            return None, Problem("settings.error.app_name", {"max": APP_NAME_MAX})
        if name.lower() in seen:
            continue  # the kernel compares case-insensitively: a duplicate adds nothing
        seen.add(name.lower())
        apps.append(name)
    if len(apps) > APPS_MAX:
        return None, Problem("settings.error.apps_count", {"max": APPS_MAX})
    return apps, None


def read_form(form: FormData, current: SettingsModel) -> Outcome:
    """Read a settings post against the current settings (see the module docstring)."""
    out = Outcome()
    for control in controls():
        value, problem, present = _read_one(form, control, current, out)
        if problem is not None:
            out.problems[control.name] = problem
            continue
        if not present:
            continue
        if value != getattr(current, control.field):
            out.changes[control.field] = value
    return out


def _read_one(
    form: FormData, control: Control, current: SettingsModel, out: Outcome
) -> tuple[Any, Problem | None, bool]:
    """(value, problem, whether the post carried this control at all)."""
    if control.kind == "group":
        group: BaseModel = getattr(current, control.field)
        values = group.model_dump()
        present = False
        for child in control.children:
            box, problem = _checkbox(form, child.name)
            if problem is not None:
                return None, problem, True
            if box is not None:
                present = True
                values[child.attr] = box
                out.entered[child.name] = box
        return type(group).model_validate(values), None, present
    if control.kind == "checkbox":
        box, problem = _checkbox(form, control.name)
        if box is not None:
            out.entered[control.name] = box
        return box, problem, box is not None or problem is not None
    raw = _last(form, control.name)
    if raw is None:
        return None, None, False
    out.entered[control.name] = raw
    if control.kind == "number":
        number, problem = _number(raw, control)
        return number, problem, True
    if control.kind == "mib":
        quota, problem = _quota(raw, control, int(getattr(current, control.field)))
        return quota, problem, True
    if control.kind == "select":
        if raw not in control.choices:
            return (
                None,
                Problem("settings.error.choice", {"choices": ", ".join(control.choices)}),
                True,
            )
        return raw, None, True
    if control.kind == "chord":
        problem = chord_refusal(raw)
        return raw.strip(), problem, True
    apps, problem = _apps(raw)
    return apps, problem, True


def save(db: Database, form: FormData) -> tuple[Outcome, SettingsModel]:
    """Validate a post and, when every field is valid, write what changed. Returns the
    outcome and the settings as they are now (unchanged on any refusal)."""
    current = Settings.load(db)
    outcome = read_form(form, current)
    if not outcome.ok or not outcome.changes:
        return outcome, current
    try:
        return outcome, Settings.update(db, **outcome.changes)
    except DeskpilotError as exc:  # the model refused what the form let through
        name = _control_of(exc, outcome.changes)
        outcome.problems[name] = Problem("settings.error.model", {"reason": exc.message})
        return outcome, Settings.load(db)


def _control_of(exc: DeskpilotError, changes: Mapping[str, Any]) -> str:
    by_field = {c.field: c.name for c in controls()}
    for name in changes:
        if name in exc.message or by_field[name] in exc.message:
            return by_field[name]
    return next(iter(by_field[n] for n in changes))


def reset(db: Database, name: str) -> SettingsModel:
    """Forget one stored setting (by its control name), so its default applies again."""
    for control in controls():
        if control.name == name:
            return Settings.reset(db, control.field)
    raise DeskpilotError(ErrorCode.INVALID_REQUEST, f"unknown setting {name!r}")


def labels(names: Iterable[str]) -> list[str]:
    """Control names of fields, in page order (for "saved: …")."""
    wanted = set(names)
    return [c.name for c in controls() if c.field in wanted or c.name in wanted]


__all__ = [
    "MIB",
    "Control",
    "Outcome",
    "Problem",
    "Section",
    "chord_refusal",
    "controls",
    "default_text",
    "differs_from_default",
    "read_form",
    "reset",
    "save",
    "sections",
    "shown",
    "values_of",
]
