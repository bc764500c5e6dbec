"""The only source of continuation rules.

"继续" / "continue" carries no task of its own; selection, message preparation and the final
guard must all agree on what counts as one, or the same user intent drifts between modules.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# How many recent user messages a continuation pulls in (including the latest).
RECENT_USER_WINDOW = 3

_ZH = (
    "继续",
    "接着",
    "下一步",
    "继续优化",
    "继续修复",
    "继续测试",
    "继续收口",
    "继续执行",
    "继续完成",
    "接着做",
    "接着来",
    "然后呢",
)
_EN = (
    "continue",
    "go on",
    "keep going",
    "carry on",
    "proceed",
    "next",
    "next step",
    "go ahead",
    "resume",
    "continue please",
    "please continue",
)
_TRIM = re.compile(r"^[\s。，,.!！?？~～…]+|[\s。，,.!！?？~～…]+$")
_ZH_PREFIX = re.compile(
    r"^(?:请|请你|麻烦)?(?:继续|接着)(?:[做干弄改修测跑来写吧呀啊]|优化|修复|测试|收口|执行|完成)?"
)
_ACCEPTED_PLAN = re.compile(
    r"plan mode is (?:now )?(?:disabled|off).{0,200}implement (?:this|the) (?:proposed )?plan",
    re.IGNORECASE | re.DOTALL,
)


def _norm(text: str) -> str:
    return _TRIM.sub("", text).lower()


def is_continuation(text: str) -> bool:
    """True when the message only asks to keep going, in Chinese or English."""
    norm = _norm(text)
    if not norm or len(norm) > 24:
        return False
    if norm in _EN or norm in _ZH:
        return True
    match = _ZH_PREFIX.match(norm)
    return bool(match and len(norm) - match.end() <= 2)


def is_accepted_plan(text: str) -> bool:
    """An accepted-plan wrapper: execution must continue, not re-plan."""
    return bool(_ACCEPTED_PLAN.search(text))


def ranking_window(user_texts: Sequence[str]) -> tuple[list[str], str]:
    """User texts that rank tools, and where they came from.

    Only user messages count: tool results never rank, so untrusted output cannot steer the
    next turn's tool whitelist through a "continue".
    """
    if not user_texts:
        return [], "none"
    latest = user_texts[-1]
    if is_continuation(latest) and len(user_texts) > 1:
        return list(user_texts[-RECENT_USER_WINDOW:]), "recent_user_continuation"
    return [latest], "latest_user"
