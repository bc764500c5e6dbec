"""Criteria when a task gives none: what "done" means, from the words the caller did give.

In order, the first source that yields anything wins, and is recorded:

1. ``success_criteria`` — the caller's own specs, used as they are;
2. ``acceptance_criteria`` — each acceptance sentence becomes a ``visual`` ``text_present``
   (trimmed, one final ``.``/``!``/``。`` dropped: a UI shows "Saved", not "Saved.");
3. ``goal_quotes`` — each quoted text in the goal ("…", '…', “…”, ‘…’, «…», 「…」, 『…』)
   becomes a ``visual`` ``text_present``: a goal that quotes a text usually wants to see it;
4. ``target_frontmost`` — the target app is frontmost (``application_state``), the weakest
   claim, taken only when nothing better was said.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final, Literal

from deskpilot.protocol.verification import ApplicationStateSpec, VerificationSpec, VisualSpec

CriteriaSource = Literal[
    "success_criteria", "acceptance_criteria", "goal_quotes", "target_frontmost"
]

_QUOTES: Final = re.compile(
    r"""
    "(?P<dq>[^"\n]+)"
    | (?<!\w)'(?P<sq>[^'\n]+)'(?!\w)
    | “(?P<cq>[^”\n]+)”
    | ‘(?P<csq>[^’\n]+)’
    | «(?P<gq>[^»\n]+)»
    | 「(?P<jq>[^」\n]+)」
    | 『(?P<jdq>[^』\n]+)』
    """,
    re.VERBOSE,
)
_FINAL_STOP: Final = (".", "!", "。", "！")


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    for stop in _FINAL_STOP:
        if text.endswith(stop) and not text.endswith(stop * 2):
            return text[: -len(stop)].rstrip()
    return text


def goal_quotes(goal: str) -> list[str]:
    """The quoted texts of the goal, in order, each once."""
    out: list[str] = []
    for m in _QUOTES.finditer(goal):
        text = next(g for g in m.groups() if g is not None).strip()
        if text and text not in out:
            out.append(text)
    return out


def _unique(texts: list[str]) -> list[str]:
    out: list[str] = []
    for t in texts:
        if t and t not in out:
            out.append(t)
    return out


def derive_criteria(
    goal: str,
    acceptance: Sequence[str],
    target_app: str | None,
    *,
    success_criteria: Sequence[VerificationSpec] = (),
) -> tuple[list[VerificationSpec], CriteriaSource]:
    """The specs to verify a task with, and which source they came from."""
    if success_criteria:
        return list(success_criteria), "success_criteria"
    sentences = _unique([_sentence(s) for s in acceptance])
    if sentences:
        return [VisualSpec(assertion="text_present", text=s) for s in sentences], (
            "acceptance_criteria"
        )
    quotes = goal_quotes(goal)
    if quotes:
        return [VisualSpec(assertion="text_present", text=q) for q in quotes], "goal_quotes"
    return [ApplicationStateSpec(assertion="frontmost", app=target_app or None)], (
        "target_frontmost"
    )
