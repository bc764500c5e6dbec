"""Several actions from one decision (``act_batch``, while the ``actionBatch`` flag is on).

The model names the elements of the state it saw. Each later action is checked against the
state the previous one left: it runs only when that state could be acted on (a complete,
reusable state — no dialog or new window opened, no popup left open) and its element is
still there (``runtime/tree.py``: the host keeps an element's id while it exists; on an OCR
outline, by its signature — same role and name at the same depth, picked out uniquely). The
batch stops at the first error, refusal or unexpected change and says where; the model
decides again from there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deskpilot.runtime.call import ToolOutcome
from deskpilot.runtime.context import ToolContext
from deskpilot.runtime.delegated.acting import Acted, act
from deskpilot.runtime.delegated.decision_tools import ATOMIC, MAX_BATCH, MIN_BATCH
from deskpilot.runtime.task_registry import DelegatedTask
from deskpilot.runtime.tree import remap
from deskpilot.runtime.turns import Turn
from deskpilot.vision.outline import is_visual_version


@dataclass
class BatchRun:
    last: Acted | None
    text: str
    is_error: bool
    #: stopped before its last action by an error or a stale element (a rollout sample)
    broke: bool


def check_batch(arguments: dict[str, Any]) -> list[tuple[str, dict[str, Any]]] | str:
    """The batch's actions, or what is wrong with it (told to the model)."""
    items = arguments.get("actions")
    if not isinstance(items, list) or not MIN_BATCH <= len(items) <= MAX_BATCH:
        return f"act_batch takes {MIN_BATCH}-{MAX_BATCH} actions"
    out: list[tuple[str, dict[str, Any]]] = []
    for i, item in enumerate(items, 1):
        if not isinstance(item, dict) or item.get("name") not in ATOMIC:
            return f"action {i}: name must be one of {', '.join(ATOMIC)}"
        args = item.get("arguments", {})
        if not isinstance(args, dict):
            return f"action {i}: arguments must be an object"
        out.append((str(item["name"]), dict(args)))
    return out


async def run_batch(
    ctx: ToolContext,
    task: DelegatedTask,
    turn: Turn,
    actions: list[tuple[str, dict[str, Any]]],
    state: ToolOutcome,
) -> BatchRun:
    seen = state.observed.observation.tree if state.observed is not None else ""
    seen_version = state.observed.observation.tree_version if state.observed is not None else ""
    current: ToolOutcome = state
    lines: list[str] = []
    last: Acted | None = None
    for i, (name, arguments) in enumerate(actions, 1):
        if i > 1:
            stop = _stale(current, seen, seen_version, arguments)
            if stop is not None:
                lines.append(f"Batch stopped before action {i} ({name}): {stop}.")
                broke = "element" in stop
                return BatchRun(last, _text(lines, last), False, broke)
        last = await act(ctx, task, turn, name, arguments, current.state_id)
        lines.append(f"{i}. {name}: {_first_line(last.text)}")
        if last.end is not None or last.is_error or last.outcome is None:
            if i < len(actions):
                lines.append(f"Batch stopped after action {i}: it did not succeed.")
            return BatchRun(last, _text(lines, last), last.is_error, i < len(actions))
        current = last.outcome
    return BatchRun(last, _text(lines, last), False, False)


def _stale(
    current: ToolOutcome, seen: str, seen_version: str, arguments: dict[str, Any]
) -> str | None:
    """Why the next action cannot run on the state the previous one left, or None (and the
    element id is the one it has in the new state: the same one, but on an OCR outline)."""
    if current.state_id is None or current.observed is None:
        return "the window changed in a way that needs a fresh look (see the last result)"
    element = arguments.get("element_id")
    if isinstance(element, int) and not isinstance(element, bool):
        now = current.observed.observation
        line_ids = is_visual_version(seen_version) and is_visual_version(now.tree_version)
        moved = remap(seen, now.tree, element, line_ids=line_ids)
        if moved is None:
            return f"element [{element}] of the state you saw is no longer there"
        arguments["element_id"] = moved
    return None


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _text(lines: list[str], last: Acted | None) -> str:
    tail = "" if last is None else "\n\nLast result:\n" + last.text
    return "\n".join(lines) + tail
