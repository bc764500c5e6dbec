"""A task suite: the file ``deskpilot eval`` runs (docs/eval.md is the long form).

A suite is JSON or YAML (``deskpilot.eval.suite/1``, the same schema either way): tasks,
each with an instruction for the agent, what to set up on its private desktop first (files
in the task's own directory, apps to launch with their arguments, a local page to open in
Chromium), the app the task is about, its success criteria as the project's own verification
specs (protocol/verification.py, decided by runtime/verification/) and its limits.

Strings may name the task's directory as ``${TASK_DIR}``: every task gets a fresh one, so a
suite never writes where another run (or the person) keeps files. The file is validated with
the placeholder standing for a sample directory; every problem is reported with its place in
the file (``tasks[3].setup.launch[0].app``) and what is wrong with it — in a YAML file also
with its line (yaml_source.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Self

from pydantic import Field, TypeAdapter, ValidationError, field_validator, model_validator

from deskpilot.eval.yaml_source import YamlError, read_yaml
from deskpilot.kernel.policy.launch_rules import DISPLAY_FLAGS
from deskpilot.protocol.verification import VERIFICATION_KINDS, VerificationSpec
from deskpilot.protocol.wire import WireModel

SUITE_SCHEMA = "deskpilot.eval.suite/1"
#: stands for the task's own directory in any string of a task
TASK_DIR = "${TASK_DIR}"
#: what the placeholder is replaced with while a suite is validated
SAMPLE_TASK_DIR = "/eval-task-dir"
MAX_TASKS = 1_000
#: file names read as YAML; anything else is read as JSON
YAML_SUFFIXES = frozenset({".yaml", ".yml"})
_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_SPECS: TypeAdapter[list[VerificationSpec]] = TypeAdapter(list[VerificationSpec])


class SuiteError(ValueError):
    """A suite file that cannot be run; ``problems`` are ``place: what is wrong`` lines."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        shown = "\n".join(f"  {p}" for p in problems[:20])
        more = f"\n  … and {len(problems) - 20} more" if len(problems) > 20 else ""
        super().__init__(f"{source}: not a valid task suite:\n{shown}{more}")


class FileToCreate(WireModel):
    """A file written into the task's directory before anything starts."""

    #: relative to the task's directory; no ``..``, not absolute
    path: str = Field(min_length=1, max_length=255)
    text: str = Field(default="", max_length=1_000_000)

    @field_validator("path")
    @classmethod
    def _inside(cls, value: str) -> str:
        p = PurePosixPath(value)
        if p.is_absolute() or ".." in p.parts or value.startswith("~"):
            raise ValueError("must be a path inside the task's directory (relative, no '..')")
        return value


class LaunchSpec(WireModel):
    """An app started on the task's desktop, without a shell, through the launch policy."""

    #: a desktop id or an executable on PATH (resolved the way ``open_app`` resolves it)
    app: str = Field(min_length=1, max_length=255)
    args: list[str] = Field(default_factory=list, max_length=64)
    #: a file in the task's directory that receives the app's standard output (zenity prints
    #: what was submitted there), relative like ``files`` paths
    stdout: str | None = Field(default=None, min_length=1, max_length=255)
    #: wait until the app is on the desktop's accessibility bus before the agent starts
    wait_accessible: bool = True

    @field_validator("app")
    @classmethod
    def _plain(cls, value: str) -> str:
        if any(c.isspace() for c in value):
            raise ValueError("one program, no arguments (they go in 'args'); nothing runs a shell")
        return value

    @field_validator("args")
    @classmethod
    def _on_its_desktop(cls, value: list[str]) -> list[str]:
        for arg in value:
            if "\x00" in arg:
                raise ValueError("an argument holds a NUL character")
            if DISPLAY_FLAGS.match(arg):
                raise ValueError(
                    f"{arg.split('=', 1)[0]!r} would choose the app's display: a suite's apps "
                    "run on the task's own private desktop only"
                )
        return value

    @field_validator("stdout")
    @classmethod
    def _stdout_inside(cls, value: str | None) -> str | None:
        return None if value is None else FileToCreate._inside(value)


class TaskSetup(WireModel):
    files: list[FileToCreate] = Field(default_factory=list, max_length=64)
    launch: list[LaunchSpec] = Field(default_factory=list, max_length=8)
    #: a local page (``file://${TASK_DIR}/page.html``) opened in Chromium after the launches
    open_url: str | None = Field(default=None, max_length=4096)

    @field_validator("open_url")
    @classmethod
    def _local(cls, value: str | None) -> str | None:
        local = ("file:///", f"file://{TASK_DIR}/")
        if value is not None and not value.startswith(local):
            raise ValueError(
                "must be a local file page (file:///…, e.g. file://${TASK_DIR}/p.html)"
            )
        return value


class TaskLimits(WireModel):
    #: decision steps (operator) — the delegated contract's own cap is 100
    steps: int = Field(default=30, ge=1, le=100)
    #: the agent's wall time; the task is stopped after it
    time_s: float = Field(default=180.0, gt=0, le=3_600)


class SuiteTask(WireModel):
    id: str
    instruction: str = Field(min_length=1, max_length=4_000)
    setup: TaskSetup = Field(default_factory=TaskSetup)
    #: the app the task is about: what the operator is pointed at and what verification
    #: observes (name, executable, WM_CLASS or desktop id); none for file-only criteria
    target: str | None = Field(default=None, min_length=1, max_length=255)
    #: the success criteria, kept as written (``${TASK_DIR}`` unresolved); see :meth:`criteria`
    success: list[dict[str, Any]] = Field(min_length=1, max_length=32)
    limits: TaskLimits = Field(default_factory=TaskLimits)
    tags: list[str] = Field(default_factory=list, max_length=16)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not _ID.match(value):
            raise ValueError("ids are 1-64 of a-z 0-9 . _ -, starting with a letter or digit")
        return value

    @model_validator(mode="after")
    def _specs(self) -> Self:
        try:
            self.criteria(SAMPLE_TASK_DIR)
        except ValidationError as exc:  # said as a place under this task: success[0].expected
            inner = [
                f"success{_place(_untagged(e['loc']))}: "
                + str(e["msg"]).removeprefix("Value error, ")
                for e in exc.errors(include_url=False, include_input=False)
            ]
            raise ValueError("; ".join(inner)) from None
        if self.setup.open_url is not None and self.target is None:
            self.target = "chromium"
        return self

    def criteria(self, task_dir: str) -> list[VerificationSpec]:
        """The success criteria with ``${TASK_DIR}`` standing for ``task_dir``."""
        return _SPECS.validate_python(resolve(self.success, task_dir))

    def resolved_setup(self, task_dir: str) -> TaskSetup:
        return TaskSetup.model_validate(resolve(self.setup.wire(), task_dir))


class Suite(WireModel):
    schema_id: str = Field(alias="schema")
    name: str = Field(min_length=1, max_length=200)
    description: str = Field(default="", max_length=10_000)
    tasks: list[SuiteTask] = Field(min_length=1, max_length=MAX_TASKS)

    @field_validator("schema_id")
    @classmethod
    def _schema(cls, value: str) -> str:
        if value != SUITE_SCHEMA:
            raise ValueError(f"this deskpilot reads {SUITE_SCHEMA!r} suites, not {value!r}")
        return value

    @model_validator(mode="after")
    def _unique(self) -> Self:
        seen: set[str] = set()
        for t in self.tasks:
            if t.id in seen:
                raise ValueError(f"task id {t.id!r} is used twice")
            seen.add(t.id)
        return self

    def select(self, ids: list[str] | None) -> list[SuiteTask]:
        """The tasks named (in the suite's order), or all; an unknown id is an error."""
        if not ids:
            return list(self.tasks)
        known = {t.id for t in self.tasks}
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise SuiteError(self.name, [f"--tasks: no task {i!r} in this suite" for i in unknown])
        wanted = set(ids)
        return [t for t in self.tasks if t.id in wanted]


def resolve(value: Any, task_dir: str) -> Any:
    """``value`` (JSON) with every ``${TASK_DIR}`` in its strings replaced by ``task_dir``."""
    if isinstance(value, str):
        return value.replace(TASK_DIR, task_dir)
    if isinstance(value, list):
        return [resolve(v, task_dir) for v in value]
    if isinstance(value, dict):
        return {k: resolve(v, task_dir) for k, v in value.items()}
    return value


def _untagged(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """A spec's error place without the union's kind tag (``[0].file.path`` → ``[0].path``),
    led by a dot-less index so it reads ``success[0].path``."""
    parts = [p for i, p in enumerate(loc) if not (i == 1 and p in VERIFICATION_KINDS)]
    return ("", *parts)


def _place(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if part == "":
            out = " "  # a lead that makes the next name take its dot (stripped below)
        elif isinstance(part, int):
            out += f"[{part}]"
        elif part in ("function-after", "function-before") or "[" in str(part):
            continue  # pydantic's tags for a validator or a union member, not a place
        else:
            out += f".{part}" if out else str(part)
    return out.strip() or "(the file)"


#: a task-level message that names a place inside the task (``success[0].path: …``)
_INNER_PLACE = re.compile(r"^(success(?:\[\d+\]|\.\w+)*): ")
_PLACE_PART = re.compile(r"\[(\d+)\]|\.?(\w+)")
LineOf = Callable[[Sequence[int | str]], int | None]


def _inner_loc(message: str) -> tuple[int | str, ...]:
    """``success[1].selector: …`` → ``("success", 1, "selector")`` (a spec error is raised
    at the task's level, its place inside the task said in the message)."""
    m = _INNER_PLACE.match(message)
    if m is None:
        return ()
    return tuple(int(i) if i else name for i, name in _PLACE_PART.findall(m.group(1)))


def _tagless(loc: Sequence[int | str]) -> list[int | str]:
    """The places of ``loc`` that are in the file (not pydantic's validator/union tags)."""
    return [
        p
        for p in loc
        if isinstance(p, int) or (p not in ("function-after", "function-before") and "[" not in p)
    ]


def problems_of(exc: ValidationError, data: Any, line_of: LineOf | None = None) -> list[str]:
    """``place: message`` per error, places written as in the file (``tasks[2].success[0]``),
    a task named by its id when it has one, and the place's line when ``line_of`` knows it
    (a YAML file: yaml_source.py)."""
    lines = []
    for err in exc.errors(include_url=False, include_input=False):
        loc = tuple(err["loc"])
        where = _place(loc)
        msg = str(err["msg"]).removeprefix("Value error, ")
        said: list[str] = []
        if len(loc) >= 2 and loc[0] == "tasks" and isinstance(loc[1], int):
            try:
                tid = data["tasks"][loc[1]]["id"]
            except (KeyError, IndexError, TypeError):
                tid = None
            if isinstance(tid, str):
                said.append(f"task {tid!r}")
        if line_of is not None:
            found = line_of(_tagless((*loc, *_inner_loc(msg))))
            if found is not None:
                said.append(f"line {found}")
        if said:
            where = f"{where} ({', '.join(said)})"
        lines.append(f"{where}: {msg}")
    return lines


def parse_suite(data: Any, source: str = "suite", line_of: LineOf | None = None) -> Suite:
    try:
        return Suite.model_validate(data)
    except ValidationError as exc:
        raise SuiteError(source, problems_of(exc, data, line_of)) from None


def load_suite(path: Path) -> Suite:
    """Read and validate a suite file — YAML when it is named ``*.yaml``/``*.yml``, JSON
    otherwise — or raise :class:`SuiteError` saying what is wrong (and where)."""
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise SuiteError(str(path), [f"cannot read it: {why}"]) from None
    if path.suffix.lower() in YAML_SUFFIXES:
        try:
            source = read_yaml(text)
        except YamlError as exc:
            raise SuiteError(str(path), [str(exc)]) from None
        return parse_suite(source.data, str(path), source.line_of)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SuiteError(
            str(path), [f"line {exc.lineno} column {exc.colno}: not JSON: {exc.msg}"]
        ) from None
    return parse_suite(data, str(path))
