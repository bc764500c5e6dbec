"""When a final answer is not really one: premature finals and the plan-mode contract."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from deskpilot.provider.continuation import is_accepted_plan, is_continuation
from deskpilot.provider.protocol import ChatMessage, neutralise
from deskpilot.provider.protocol.markers import PLAN_TAG
from deskpilot.provider.protocol.prompt import PLAN_MODE_NOTE

_PLAN_BLOCK = re.compile(rf"<{PLAN_TAG}>.*?\S.*?</{PLAN_TAG}>", re.DOTALL | re.IGNORECASE)
_TRIM = re.compile(r"^[\s\"'`。，,.!！?？~～…:：;；-]+|[\s\"'`。，,.!！?？~～…:：;；-]+$")
_ACK = frozenset(
    {
        "ok",
        "okay",
        "k",
        "sure",
        "got it",
        "noted",
        "understood",
        "alright",
        "will do",
        "on it",
        "working on it",
        "one moment",
        "please wait",
        "searching again",
        "retrying",
        "done",
        "好",
        "好的",
        "收到",
        "明白",
        "了解",
        "知道了",
        "嗯",
        "已记录",
        "记下了",
        "马上",
        "稍等",
        "正在处理",
        "处理中",
        "马上处理",
        "重新搜索",
        "重新发起搜索",
        "收到重新发起搜索",
        "完成",
        "已完成",
        "搞定",
    }
)
_ACK_PREFIX = re.compile(r"^(?:好的|好|收到|明白|ok(?:ay)?|sure|got it|alright)[\s，,。.!！]*")
_SELF = re.compile(r"^(?:我|i(?:'ll| will)\s+)")
_INTENT_EN = re.compile(
    r"^(?:(?:ok(?:ay)?|sure|alright|got it)[,.! ]*)?"
    r"(?:i(?:'ll| will| am going to|'m going to| need to| should)|let me|let's"
    r"|next,? i(?:'ll| will)|first,? i(?:'ll| will))\s+(?:now\s+|first\s+)?"
    r"(?:inspect|check|read|look|run|open|search|examine|call|use|try|fetch|list|start|execute|"
    r"view|review|analy[sz]e|find|investigate|continue|query|browse|explore|get|scan)\b",
    re.IGNORECASE,
)
_INTENT_ZH = re.compile(
    r"^(?:好的|收到|明白|好)?[，,。！!\s]*(?:我(?:将|会|来|先|要|现在|马上|这就)|让我|接下来|下面我|现在我)"
    r".{0,24}?(?:查看|检查|读取|运行|执行|搜索|打开|调用|分析|继续|看一下|看看|获取|列出|确认)"
)
INTENT_MAX_CHARS = 400


@dataclass(frozen=True, slots=True)
class FinalCheck:
    code: str  # premature_final | plan_missing
    reason: str  # reason code for telemetry and the repair prompt


def _norm(text: str) -> str:
    return _TRIM.sub("", " ".join(text.split())).lower()


def is_ack(text: str) -> bool:
    norm = _norm(text)
    if not norm:
        return False
    rest = _ACK_PREFIX.sub("", norm, count=1)
    forms = {norm, rest, _SELF.sub("", rest, count=1)}
    return any(f == "" or f in _ACK or is_continuation(f) for f in forms)


def is_intent_only(text: str) -> bool:
    stripped = text.strip()
    if len(stripped) > INTENT_MAX_CHARS or "\n\n" in stripped:
        return False
    return bool(_INTENT_EN.match(stripped) or _INTENT_ZH.match(stripped))


def has_plan(text: str) -> bool:
    return _PLAN_BLOCK.search(text) is not None


def _results_since_user(messages: Sequence[ChatMessage]) -> int:
    count = 0
    for message in reversed(messages):
        if message.role == "user":
            break
        if message.role == "tool":
            count += 1
    return count


def _previous_final(messages: Sequence[ChatMessage]) -> str | None:
    for message in reversed(messages):
        if message.role == "assistant" and message.tool_call is None and message.content.strip():
            return message.content.strip()
    return None


def _asked_for(text: str, latest: str) -> bool:
    """The person asked for this very reply ("for now just reply: noted"): an ack that
    answers what was asked is the answer, not a premature end."""
    said = _norm(text)
    return bool(said) and said in _norm(latest)


def check_final(
    text: str,
    messages: Sequence[ChatMessage],
    *,
    tools_available: bool,
    plan_mode: bool,
) -> FinalCheck | None:
    """A reason this final must be repaired, or None to accept it."""
    users = [m.content for m in messages if m.role == "user"]
    latest = users[-1] if users else ""
    accepted = is_accepted_plan(latest)
    if plan_mode and not accepted:
        if PLAN_MODE_NOTE[:60] in text:
            return FinalCheck("plan_missing", "plan_prompt_echo")
        if not has_plan(text):
            return FinalCheck("plan_missing", "plan_missing")
        return None
    if accepted and has_plan(text):
        return FinalCheck("premature_final", "replan_after_accept")
    if is_continuation(latest) and _results_since_user(messages) == 0:
        previous = _previous_final(messages)
        if is_ack(text) or is_intent_only(text) or (previous and _norm(previous) == _norm(text)):
            return FinalCheck("premature_final", "continuation_no_progress")
    if is_ack(text) and not _asked_for(text, latest):
        return FinalCheck("premature_final", "bare_ack")
    if tools_available and is_intent_only(text):
        return FinalCheck("premature_final", "intent_without_call")
    return None


def fallback_plan(latest_user: str, model_text: str) -> str:
    """Plan mode's last resort: a local plan rather than a bare format error."""
    request = " ".join(latest_user.split())[:200]
    notes = " ".join(neutralise(model_text).split())[:500]
    lines = [
        f"<{PLAN_TAG}>",
        "# Plan (local fallback)",
        "The model did not return a plan in the expected form; this outline was made locally.",
        f"Request: {request}" if request else "Request: (none given)",
        "1. Inspect the current state that the request concerns.",
        "2. Make the smallest change that satisfies the request.",
        "3. Verify the result and report what changed.",
    ]
    if notes:
        lines.append(f"Model notes: {notes}")
    lines.append(f"</{PLAN_TAG}>")
    return "\n".join(lines)
