"""Which tools the model sees this turn.

Ranking reads user messages only (the latest, or recent ones when the latest is a continuation);
tool results never rank. Forbidden tools ("don't use read") leave the eligible set and nothing
adds them back; explicit-only prompts ("only use X") show only X. Name mentions need word
boundaries, so ``README.md`` does not name ``read``.

Vision bridge (rules in ``vision_intent``): for an image-understanding request the best
eligible vision tool is forced in (above any clip, even ``max_tools=1``); for an image *path*
the file tools lose their path bonus and are demoted, so the path is not shown to ``read``.
Forbidden and explicit-only rules still win: nothing re-adds a vision tool they removed.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from deskpilot.provider.continuation import ranking_window
from deskpilot.provider.tools.spec import ToolSpec, keywords
from deskpilot.provider.vision_intent import (
    NO_VISION,
    REVIEW_TOOL,
    VisionIntent,
    detect,
    is_file_tool,
    preferred_vision_tools,
)

SUMMARY_SCHEMA = "deskpilot.provider.tool-selection.v1"
SUMMARY_GROUP_LIMIT = 12
#: a pinned tool's bonus: more than any prompt evidence (≤ 128), less than a preferred vision
#: tool for an image task or an explicit "only use X"
PINNED_SCORE = 300
CORE_TOOLS = frozenset({"read", "bash", "write", "edit", "ls", "grep", "find"})
VISION_FORCED_SCORE = 500.0  # above a name mention (100), below explicit-only (1000)
VISION_ALTERNATIVE_SCORE = 20.0
IMAGE_PATH_FILE_PENALTY = 50.0

_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:/\\-]*")
_PATHLIKE = re.compile(r"[/\\]|\.[A-Za-z0-9]")
_NAME = r"`?[a-z0-9_][a-z0-9_.:-]*`?"
_LIST = rf"{_NAME}(?:\s*(?:,|、|，|/|\band\b|\bor\b|和|或|及)\s*(?:the\s+)?{_NAME})*"
_FORBID = re.compile(
    r"(?:\b(?:don'?t|do\s+not|never|must\s+not|mustn'?t|shouldn'?t|should\s+not|avoid|without|"
    r"no\s+need\s+to)\s+(?:using\s+|use\s+|call(?:ing)?\s+|run(?:ning)?\s+|invok(?:e|ing)\s+)?"
    r"|(?:不要|别|不用|不许|禁止|请勿|勿|无需|不需要)\s*(?:再\s*)?(?:使用|调用|用|执行|运行)?\s*)"
    rf"(?:the\s+|any\s+)?(?:tools?\s+|工具\s*)?({_LIST})"
)
_EXCLUSIVE = re.compile(
    r"(?:\b(?:only|just|exclusively)\s+(?:use|call|run|invoke)\s+|\buse\s+only\s+"
    r"|(?:只|仅|只能|仅能)\s*(?:使用|调用|用)\s*)"
    rf"(?:the\s+)?(?:tools?\s+|工具\s*)?({_LIST})"
)
_SPLIT = re.compile(r"\s*(?:,|、|，|/|\band\b|\bor\b|和|或|及)\s*(?:the\s+)?")


class ToolScore(NamedTuple):
    name: str
    position: int
    score: float
    reasons: tuple[str, ...]
    selected: bool


@dataclass(frozen=True)
class Selection:
    selected: tuple[ToolSpec, ...]
    scores: tuple[ToolScore, ...]
    valid_count: int
    prompt_source: str
    prompt_chars: int
    user_messages: int
    explicit_only: tuple[str, ...] = ()
    forbidden: tuple[str, ...] = ()
    vision: VisionIntent = NO_VISION
    names: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", frozenset(t.name for t in self.selected))

    @property
    def omitted(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.scores if not s.selected)

    @property
    def vision_selected(self) -> tuple[str, ...]:
        """Selected vision tools, best first (empty: none shown this turn)."""
        return preferred_vision_tools(t.name for t in self.selected)

    @property
    def clipped(self) -> bool:
        return len(self.selected) < self.valid_count

    def summary(self) -> dict[str, Any]:
        """Bounded selection summary: names, indexes, scores, reason codes; no prompt text."""

        def row(s: ToolScore) -> dict[str, Any]:
            return {
                "name": s.name,
                "index": s.position,
                "score": s.score,
                "reasonCodes": list(s.reasons),
            }

        ranked = sorted(self.scores, key=lambda s: (-s.score, s.position))
        chosen = [row(s) for s in ranked if s.selected]
        dropped = [row(s) for s in ranked if not s.selected]
        return {
            "schema": SUMMARY_SCHEMA,
            "selected": chosen[:SUMMARY_GROUP_LIMIT],
            "omitted": dropped[:SUMMARY_GROUP_LIMIT],
        }

    def telemetry(self) -> dict[str, Any]:
        return {
            "tool_selection_clipped": self.clipped,
            "tool_selection_omitted_count": len(self.omitted),
            "tool_selection_valid_count": self.valid_count,
            "tool_selection_prompt_source": self.prompt_source,
            "tool_selection_prompt_chars": self.prompt_chars,
            "tool_selection_user_messages": self.user_messages,
            "selected_tool_names": [t.name for t in self.selected],
            "tool_selection_vision_task": self.vision.image_task,
            "tool_selection_vision_reasons": list(self.vision.reasons),
        }


def _names_in(pattern: re.Pattern[str], text: str, known: dict[str, str]) -> list[str]:
    found: list[str] = []
    for match in pattern.finditer(text):
        for part in _SPLIT.split(match.group(1)):
            name = known.get(part.strip("`.,:;").lower())
            if name and name not in found:
                found.append(name)
    return found


def _tokens(text: str) -> tuple[set[str], bool, set[str]]:
    """Word tokens (names can match), whether a path is mentioned, and keywords."""
    words: set[str] = set()
    has_path = False
    for raw in _TOKEN.findall(text):
        token = raw.rstrip(".:/\\-").lower()
        if not token:
            continue
        if _PATHLIKE.search(token):
            has_path = True
            words.add(token)  # a tool literally named like a path still matches exactly
            continue
        words.add(token)
    return words, has_path, set(keywords(text))


def select_tools(
    tools: Sequence[ToolSpec],
    user_texts: Sequence[str],
    *,
    max_tools: int,
    only: Iterable[str] | None = None,
    core_tools: frozenset[str] = CORE_TOOLS,
    pinned: Collection[str] = (),
) -> Selection:
    """Rank and clip; ``only`` (a caller's explicit list) bypasses ranking but not validity.

    ``pinned`` are the caller's always-needed tools (an agent's observe/act core): they rank
    above everything the prompt's words earn, below an explicit "only use X", and a "don't use
    X" still removes them."""
    window, source = ranking_window(user_texts)
    text = "\n".join(window)
    vision = detect(window)
    if only is not None:
        wanted = set(only)
        chosen = tuple(t for t in tools if t.name in wanted)
        scores = tuple(
            ToolScore(
                t.name, i, 0.0, ("caller_selected",) if t.name in wanted else (), t.name in wanted
            )
            for i, t in enumerate(tools)
        )
        return Selection(
            chosen, scores, len(tools), "caller", len(text), len(window), vision=vision
        )
    lowered = text.lower()
    known = {t.name_lower: t.name for t in tools}
    forbidden = _names_in(_FORBID, lowered, known) if lowered else []
    named_exclusive = _names_in(_EXCLUSIVE, lowered, known) if lowered else []
    exclusive = [n for n in named_exclusive if n not in forbidden]
    words, has_path, prompt_keywords = _tokens(text)
    eligible_names = [
        t.name
        for t in tools
        if t.name not in forbidden and (not named_exclusive or t.name in exclusive)
    ]
    ranked_vision = preferred_vision_tools(eligible_names) if vision.image_task else ()
    rows: list[tuple[float, tuple[str, ...]] | None] = []
    reasons_out: dict[int, tuple[str, ...]] = {}
    for index, tool in enumerate(tools):
        if tool.name in forbidden:
            rows.append(None)
            reasons_out[index] = ("prompt_tool_forbidden",)
            continue
        if named_exclusive and tool.name not in exclusive:
            rows.append(None)
            reasons_out[index] = ("prompt_tool_not_exclusive",)
            continue
        score, reasons = 0.0, []
        if exclusive:
            score += 1000
            reasons.append("prompt_tool_exclusive")
        if tool.name_lower in words:
            score += 100
            reasons.append("prompt_tool_name")
        demoted = vision.has_path and is_file_tool(tool.name)
        if has_path and tool.takes_path and not demoted:
            score += 8
            reasons.append("prompt_path_file")
        overlap = len(tool.keyword_set & prompt_keywords) if prompt_keywords else 0
        if overlap:
            score += 4 * min(overlap, 5)
            reasons.append("prompt_keyword")
        if tool.name in core_tools:
            score += 2
            reasons.append("core_tool")
        if tool.name in pinned:
            score += PINNED_SCORE
            reasons.append("caller_pinned")
        score += _vision_adjustment(tool.name, ranked_vision, demoted, reasons)
        rows.append((score, tuple(reasons)))
    eligible = [i for i, row in enumerate(rows) if row is not None]
    eligible.sort(key=lambda i: -rows[i][0])  # type: ignore[index]  # stable: ties keep order
    keep = set(eligible[:max_tools])
    ordered = [
        ToolScore(tool.name, i, row[0], row[1], i in keep)
        if (row := rows[i]) is not None
        else ToolScore(tool.name, i, 0.0, reasons_out[i], False)
        for i, tool in enumerate(tools)
    ]
    chosen = tuple(t for i, t in enumerate(tools) if i in keep)
    return Selection(
        chosen,
        tuple(ordered),
        len(tools),
        source,
        len(text),
        len(window),
        tuple(exclusive),
        tuple(forbidden),
        vision,
    )


def _vision_adjustment(
    name: str, ranked_vision: tuple[str, ...], demoted: bool, reasons: list[str]
) -> float:
    """Score change for the vision bridge; appends its reason code."""
    if ranked_vision and name == ranked_vision[0]:
        review = name.lower() == REVIEW_TOOL
        reasons.append("vision_review_fallback" if review else "vision_preferred")
        return VISION_FORCED_SCORE
    if name in ranked_vision:
        reasons.append("vision_alternative")
        return VISION_ALTERNATIVE_SCORE
    if demoted:
        reasons.append("image_path_file_demoted")
        return -IMAGE_PATH_FILE_PENALTY
    return 0.0
