"""One reply → one verdict: parser, selected-tool whitelist, argument validation, shell guard.

This is exactly what ``deskpilot provider parse`` runs, so the debugging aid and the turn can
never disagree about a reply. Every check that needs only the reply and the tool list lives
here; checks that need the conversation (repeats, premature finals, vision refusals) are turn
policy in ``step``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from deskpilot.provider.contract import load_contract
from deskpilot.provider.protocol import (
    FinalCandidate,
    ParseFailure,
    parse_output,
    project_native_calls,
)
from deskpilot.provider.tools import ToolSpec, shell_problem, validate_arguments


@dataclass(frozen=True)
class Verdict:
    kind: Literal["tool_call", "final", "error"]
    name: str | None = None
    arguments: dict[str, Any] | None = None
    text: str | None = None
    code: str | None = None
    message: str = ""
    form: str = ""
    warnings: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.kind != "error"

    @property
    def repairable(self) -> bool:
        return self.code is not None and load_contract().spec(self.code).repairable

    def to_json(self) -> dict[str, Any]:
        """The exact shapes ``deskpilot provider parse`` prints."""
        if self.kind == "tool_call":
            return {"ok": True, "kind": "tool_call", "name": self.name, "arguments": self.arguments}
        if self.kind == "final":
            return {"ok": True, "kind": "final", "text": self.text}
        return {"ok": False, "error": self.code, "repairable": self.repairable}


def failure(code: str, message: str, form: str = "") -> Verdict:
    return Verdict("error", code=code, message=message, form=form)


def evaluate(
    raw: str,
    *,
    selected: Collection[str],
    tools: Mapping[str, ToolSpec],
    native_tool_calls: list[dict[str, Any]] | None = None,
) -> Verdict:
    """``selected`` = names shown to the model; ``tools`` = every tool of the turn by name."""
    text = project_native_calls(native_tool_calls, raw) if native_tool_calls else raw
    outcome = parse_output(text, selected, tools.keys())
    if isinstance(outcome, ParseFailure):
        return failure(outcome.code, outcome.message, outcome.form)
    if isinstance(outcome, FinalCandidate):
        return Verdict("final", text=outcome.text, form=outcome.form)
    form = "native_" + outcome.form if native_tool_calls else outcome.form
    if outcome.name not in selected or outcome.name not in tools:
        return Verdict(
            "error",
            name=outcome.name,
            code="unknown_tool",
            message=f"tool {outcome.name!r} is not available this turn",
            form=form,
        )
    report = validate_arguments(tools[outcome.name].parameters, outcome.arguments)
    warnings = tuple(report.warning_codes())
    if not report.ok:
        return Verdict(
            "error",
            name=outcome.name,
            arguments=outcome.arguments,
            code="invalid_arguments",
            message=report.summary(),
            form=form,
            warnings=warnings,
        )
    problem = shell_problem(outcome.name, outcome.arguments)
    if problem:
        return Verdict(
            "error",
            name=outcome.name,
            arguments=outcome.arguments,
            code="shell_mismatch",
            message=problem,
            form=form,
            warnings=warnings,
        )
    return Verdict(
        "tool_call", name=outcome.name, arguments=outcome.arguments, form=form, warnings=warnings
    )
