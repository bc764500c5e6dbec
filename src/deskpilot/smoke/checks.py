"""Judging one case from what it left behind: its agent events and its provider debug log.

The checks are generic over ``Expect`` (case_model.py); a desktop case adds its own ``verify``
after these. Everything here reads artifacts only, so the same judgement runs on a live run,
a self-test, or an artifact copied from another machine.

Besides the case's expectations every case must end its tasks with a real answer: a final that
still carries protocol markup (``<dp_tool_call>``, another agent's ``<x_tool_call>``, history
records) or is a tool call dressed as text is a failure of its own kind, counted in the run's
summary; so is an empty one.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from deskpilot.provider.protocol.boundary import count_calls
from deskpilot.provider.protocol.markers import has_markup
from deskpilot.provider.turn.final_policy import has_plan
from deskpilot.smoke.case_model import Case, Expect, Failure, Observation

CONTINUATION_SOURCE = "recent_user_continuation"


def raw_markup(text: str) -> bool:
    """The provider's own test (one rule for both: what it repairs is what a case fails on)."""
    return has_markup(text)


def tool_envelope(text: str, tools: set[str]) -> bool:
    return count_calls(text, tools, tools) > 0


def user_tasks(case: Case) -> int:
    """How many user tasks the case sends (``/plan`` lines are switches, not tasks)."""
    return sum(1 for line in case.turns if not line.startswith("/"))


def judge(case: Case, obs: Observation, workspace: Path) -> list[Failure]:
    """Every way the case fell short of its ``Expect``; empty when it passed."""
    out: list[Failure] = []
    out += _ending(case, obs)
    out += _notices(obs)
    out += _tools(case.expect, obs)
    out += _final(case.expect, obs, workspace)
    out += _selection(case.expect, obs)
    return out


def _ending(case: Case, obs: Observation) -> list[Failure]:
    out: list[Failure] = []
    ends = obs.of("turn_end")
    for error in obs.of("error"):
        out.append(Failure("agent_error", f"{error.get('code')}: {error.get('message')}"))
    if len(ends) < user_tasks(case):
        out.append(
            Failure(
                "task_not_ended",
                f"{len(ends)} of {user_tasks(case)} user tasks ended (no turn_end for the rest)",
            )
        )
        return out
    status = ends[-1].get("status")
    if status != case.expect.status:
        out.append(
            Failure("wrong_status", f"the last task ended {status!r}, not {case.expect.status!r}")
        )
    return out


#: notices that say the answer is deskpilot's, not the model's
_NOT_THE_MODELS = {
    "plan_fallback": "the model gave no plan; the plan shown is deskpilot's local fallback",
}


def _notices(obs: Observation) -> list[Failure]:
    seen = {str(n.get("code")) for n in obs.of("notice")}
    return [Failure(code, message) for code, message in _NOT_THE_MODELS.items() if code in seen]


def _tools(expect: Expect, obs: Observation) -> list[Failure]:
    out: list[Failure] = []
    runs = obs.tool_runs()
    names = [r.name for r in runs]
    if expect.no_tools and runs:
        out.append(Failure("tool_executed", f"no tool may run; ran: {', '.join(names)}"))
    for name in expect.must_run:
        if name not in names:
            out.append(Failure("tool_not_executed", f"{name} never ran (ran: {names or 'none'})"))
    if expect.only is not None:
        extra = sorted({n for n in names if n not in expect.only})
        if extra:
            allowed = ", ".join(expect.only)
            out.append(Failure("tool_not_allowed", f"only {allowed} may run; ran {extra}"))
    read = [_plain(r.path) for r in runs if r.name == "read" and r.path is not None]
    for path in expect.read_paths:
        if path not in read:
            out.append(Failure("read_path_missing", f"{path} was never read (read: {read})"))
    for tool, path in expect.at_most_once:
        times = sum(1 for r in runs if r.name == tool and _plain(r.path or "") == path)
        if times > 1:
            out.append(
                Failure("repeated_call_executed", f"{tool} {path} ran {times} times (at most 1)")
            )
    return out


def _plain(path: str) -> str:
    return path[2:] if path.startswith("./") else path


def _final(expect: Expect, obs: Observation, workspace: Path) -> list[Failure]:
    final = obs.final()
    if final is None or not final.strip():
        if obs.of("error"):  # the task failed (agent_error says why): not an empty answer
            return []
        return [Failure("empty_assistant_end", "the agent ended without a final answer")]
    out: list[Failure] = []
    if raw_markup(final):
        out.append(Failure("raw_markup_final", "the final answer carries protocol markup"))
    if tool_envelope(final, offered_tools(obs)):
        out.append(Failure("tool_envelope_final", "the final answer is a tool call as text"))
    lowered = final.casefold()
    for needle in expect.final_contains:
        wanted = needle.replace("{cwd}", str(workspace))
        if wanted.casefold() not in lowered:
            out.append(Failure("final_missing_text", f"the final answer does not say {wanted!r}"))
    for needle in expect.final_forbids:
        if needle.casefold() in lowered:
            out.append(Failure("final_forbidden_text", f"the final answer says {needle!r}"))
    if expect.final_plan and not has_plan(final):
        out.append(Failure("plan_missing", "the final answer is not a complete <proposed_plan>"))
    return out


def offered_tools(obs: Observation) -> set[str]:
    names: set[str] = set()
    for start in obs.of("session_start"):
        listed = start.get("toolNames")
        if isinstance(listed, list):
            names.update(str(n) for n in listed)
    return names


def _selection(expect: Expect, obs: Observation) -> list[Failure]:
    out: list[Failure] = []
    starts = obs.debug_of("turn.start")
    if expect.continuation and not any(
        s.get("tool_selection_prompt_source") == CONTINUATION_SOURCE
        and int(s.get("tool_selection_user_messages") or 0) >= 2
        for s in starts
    ):
        out.append(
            Failure(
                "continuation_not_ranked",
                "no request ranked its tools over the recent user messages",
            )
        )
    if expect.clipped_omits:
        wanted = set(expect.clipped_omits)
        if not any(s.get("tool_selection_clipped") and wanted <= omitted(s) for s in starts):
            out.append(
                Failure(
                    "clipping_not_reported",
                    f"no request reported clipping with {sorted(wanted)} omitted",
                )
            )
    return out


def omitted(start: dict[str, object]) -> set[str]:
    summary = start.get("toolSelectionSummary")
    rows = summary.get("omitted") if isinstance(summary, dict) else None
    return {str(r.get("name")) for r in rows or [] if isinstance(r, dict)}


def reason_codes(starts: list[dict[str, object]], group: str) -> Counter[str]:
    """Selection reason codes over the requests' summaries (``selected`` / ``omitted``)."""
    counts: Counter[str] = Counter()
    for start in starts:
        summary = start.get("toolSelectionSummary")
        rows = summary.get(group) if isinstance(summary, dict) else None
        for row in rows or []:
            if isinstance(row, dict):
                counts.update(str(c) for c in row.get("reasonCodes") or [])
    return counts
