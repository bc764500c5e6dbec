"""What a smoke case is: the user lines it sends, the tools it may use, what must be observed.

A case is data (``Case`` + ``Expect``); judging it is ``checks``; running it is ``runner``. A
desktop case adds a ``setup`` (bring its app up on the private desktop, tear it down after) and
a ``verify`` that looks at the desktop or the app's own output after the agent ended.

``Observation`` is everything a case left behind, parsed once from its artifacts: the agent's
event stream (``deskpilot agent --json``) and the provider's debug log.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal


class CaseUnavailable(RuntimeError):
    """The case cannot run on this machine (the message says what is missing): it is recorded
    as skipped with that reason, never as passed."""


@dataclass(frozen=True)
class Failure:
    """One thing a case did wrong, as a stable code and a sentence for the person."""

    code: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


@dataclass(frozen=True)
class Expect:
    """What must be observed. Every field left at its default asks nothing."""

    #: how the (last) user task must end
    status: Literal["answered", "planned"] = "answered"
    #: no tool may run at all
    no_tools: bool = False
    #: each of these tools must have run at least once
    must_run: tuple[str, ...] = ()
    #: only these tools may run (``None``: any the case offers)
    only: tuple[str, ...] | None = None
    #: each of these paths must have been read, exactly as written (cwd-relative)
    read_paths: tuple[str, ...] = ()
    #: (tool, path) pairs that may run at most once (a repeated identical call is refused)
    at_most_once: tuple[tuple[str, str], ...] = ()
    #: the final answer must contain each of these (case-insensitive)
    final_contains: tuple[str, ...] = ()
    #: the final answer must contain none of these (case-insensitive)
    final_forbids: tuple[str, ...] = ()
    #: the final answer is one complete ``<proposed_plan>…</proposed_plan>``
    final_plan: bool = False
    #: a turn ranked its tools over the recent user messages (``继续``)
    continuation: bool = False
    #: a turn clipped its tools and these were among the omitted
    clipped_omits: tuple[str, ...] = ()


@dataclass(frozen=True)
class CaseEnv:
    """Where a case runs: its fresh working directory and the agent process's environment."""

    workspace: Path
    env: Mapping[str, str]
    artifacts: Path
    stamp: str


#: a desktop case's setup: a context manager that brings its app up and tears it down; what it
#: yields is handed to ``verify``
Setup = Callable[[CaseEnv], AbstractContextManager[Any]]
Verify = Callable[["Observation", Any], list[Failure]]


@dataclass(frozen=True)
class Case:
    name: str
    summary: str
    #: the user lines, in order; ``/plan`` toggles plan mode between them
    turns: tuple[str, ...]
    expect: Expect
    #: the tools offered (``deskpilot agent --tools``); ``None``: the agent's default set;
    #: ``()``: none at all
    tools: tuple[str, ...] | None = None
    #: tools shown per request (``--max-tools``); ``None``: the agent's default
    max_tools: int | None = None
    #: files created in the case's working directory before it runs (path → text)
    files: Mapping[str, str] = field(default_factory=dict)
    #: needs the private desktop (``desktop_cases``)
    desktop: bool = False
    setup: Setup | None = None
    verify: Verify | None = None
    #: the case's own watchdog (seconds); ``None``: the run's
    timeout_s: float | None = None


@dataclass(frozen=True)
class ToolRun:
    """One executed tool call: its name, the path it named (file tools), how it ended."""

    name: str
    path: str | None
    ok: bool | None
    code: str | None
    summary: str


@dataclass
class Observation:
    events: list[dict[str, Any]]
    debug: list[dict[str, Any]]

    @classmethod
    def load(cls, events_path: Path, debug_path: Path) -> Observation:
        return cls(_jsonl(events_path), _jsonl(debug_path))

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("event") == kind]

    def debug_of(self, name: str) -> list[dict[str, Any]]:
        return [d.get("data") or {} for d in self.debug if d.get("event") == name]

    def tool_runs(self) -> list[ToolRun]:
        results = {e.get("id"): e for e in self.of("tool_result")}
        runs: list[ToolRun] = []
        for call in self.of("tool_call"):
            result = results.get(call.get("id")) or {}
            runs.append(
                ToolRun(
                    str(call.get("name")),
                    call.get("path") if isinstance(call.get("path"), str) else None,
                    result.get("ok") if isinstance(result.get("ok"), bool) else None,
                    result.get("code") if isinstance(result.get("code"), str) else None,
                    str(call.get("summary") or ""),
                )
            )
        return runs

    def finals(self) -> list[str]:
        return [str(e.get("text") or "") for e in self.of("model_text")]

    def final(self) -> str | None:
        finals = self.finals()
        return finals[-1] if finals else None


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return list(_records(path))


def _records(path: Path) -> Iterator[dict[str, Any]]:
    """Each JSON object line; a line that is not one (a crash's half line) is skipped."""
    try:
        text = path.read_text("utf-8", errors="replace")
    except FileNotFoundError:
        return
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            yield value
