"""Vision-bridge turn policy: fail closed before a request, and repair "I cannot see images".

A text-only model handed an image task without a vision tool can only guess or refuse, so the
turn stops before anything is sent (``vision_unavailable``). When a vision tool *is* shown and
the model still answers that it cannot view pictures, that final is not accepted: it becomes a
``vision_refusal`` repair telling the model which tool to call and with which argument. What
counts as an image task and which tools are vision tools is decided in ``vision_intent``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deskpilot.provider.contract import ProviderError
from deskpilot.provider.protocol import ChatMessage
from deskpilot.provider.tools import ToolSpec
from deskpilot.provider.turn.preparation import PreparedTurn
from deskpilot.provider.vision_intent import (
    REVIEW_TOOL,
    VISION_TOOL_PREFERENCE,
    VisionIntent,
    is_vision_tool,
    preferred_vision_tools,
)

REFUSAL_MAX_CHARS = 1200
_PIC_EN = (
    r"(?:images?|pictures?|photos?|screenshots?|screens?|visuals?|graphics|png|jpe?g|figures?)"
)
_CANNOT_EN = (
    r"(?:can(?:no|')?t|can\s+not|could\s*n[o']t|am\s+(?:not\s+able|unable)|'m\s+(?:not\s+able|"
    r"unable)|(?:do\s+not|don'?t)\s+have\s+(?:the\s+)?(?:ability|capability|access)|"
    r"have\s+no\s+(?:way|ability|access)|unable|not\s+able)"
)
_VERB_EN = (
    r"(?:see|view|look\s+at|read|open|process|analy[sz]e|interpret|access|display|perceive|"
    r"recogni[sz]e|inspect|examine|understand|handle)"
)
_REFUSAL_EN = re.compile(
    "|".join(
        [
            rf"\b(?:i|as\s+an?\s+[\w\s-]{{0,30}}?(?:model|ai|assistant))\b[^.!?\n]{{0,60}}?"
            rf"\b{_CANNOT_EN}\b[^.!?\n]{{0,20}}?\b{_VERB_EN}\b[^.!?\n]{{0,30}}?\b{_PIC_EN}\b",
            rf"\btext[- ]only\b[^\n]{{0,80}}?\b{_PIC_EN}\b",
            rf"\b{_PIC_EN}\b[^\n]{{0,80}}?\btext[- ]only\b",
            r"\b(?:no|lack|without|(?:do\s+not|don'?t)\s+have)\s+(?:any\s+)?(?:vision|visual|image)\s+"
            r"(?:capabilit(?:y|ies)|abilit(?:y|ies)|support|input|access)\b",
        ]
    ),
    re.I | re.A,
)
_REFUSAL_ZH = re.compile(
    "|".join(
        [
            r"(?:看不了|看不到|看不见|看不懂|读不了|打不开|无法|不能|没法|没有办法|不支持)"
            r"(?:直接)?(?:查看|看到|看|识别|读取|打开|处理|解析|分析|理解|浏览|接收)?"
            r"(?:任何|您的|你的|这|该|此)?[张幅个些]?(?:图片|图像|照片|截图|图|屏幕|视觉)",
            r"纯文本(?:模式|模型|的?语言模型)|(?:仅|只)(?:支持|能处理|能理解|能读取)(?:文本|文字)",
            r"(?:没有|不具备|缺乏|无)(?:任何)?(?:视觉|看图|识图|图片识别|图像识别)(?:能力|功能)",
        ]
    )
)
_PATH_PARAMS = ("path", "image_path", "file_path", "filepath", "file", "image", "filename")
_STATE_PARAMS = ("state_id", "stateId")


def is_vision_refusal(text: str) -> bool:
    """The final says the model cannot see images (English or Chinese)."""
    stripped = text.strip()
    if not stripped or len(stripped) > REFUSAL_MAX_CHARS:
        return False
    return bool(_REFUSAL_EN.search(stripped) or _REFUSAL_ZH.search(stripped))


def readiness_message(prepared: PreparedTurn) -> str:
    intent = prepared.selection.vision
    offered = preferred_vision_tools(prepared.tools)
    excluded = [n for n in offered if n not in prepared.selection.names]
    lines = [
        "This request needs image understanding ("
        + ", ".join(intent.reasons)
        + "), but no vision tool is selected this turn and the text-only model cannot see "
        "images, so nothing was sent to it.",
        "A vision tool is needed: "
        + " > ".join(VISION_TOOL_PREFERENCE)
        + f" (or {REVIEW_TOOL} for a human review).",
    ]
    if excluded:
        lines.append("Offered but excluded by the request: " + ", ".join(excluded) + ".")
    lines.append(
        "In deskpilot, vision_read is offered once OCR is installed (Debian package "
        "tesseract-ocr) or a multimodal endpoint is configured with DESKPILOT_VISION_BASE_URL, "
        "DESKPILOT_VISION_MODEL and DESKPILOT_VISION_API_KEY."
    )
    return " ".join(lines)


def vision_gate(prepared: PreparedTurn) -> ProviderError | None:
    """Fail closed before any request: an image task with no vision tool selected."""
    intent = prepared.selection.vision
    if not intent.image_task or prepared.selection.vision_selected:
        return None
    offered = preferred_vision_tools(prepared.tools)
    return ProviderError(
        "vision_unavailable",
        readiness_message(prepared),
        detail={
            "reasons": list(intent.reasons),
            "visionToolsOffered": list(offered),
            "visionToolsExcluded": [n for n in offered if n not in prepared.selection.names],
        },
    )


def _props(tool: ToolSpec) -> Mapping[str, Any]:
    props = tool.parameters.get("properties")
    return props if isinstance(props, Mapping) else {}


def call_hint(tool: ToolSpec, intent: VisionIntent) -> dict[str, str]:
    """Arguments to suggest: the path or state id from the request when the schema takes it,
    else a placeholder for the first such parameter."""
    props = _props(tool)
    path_key = next((k for k in _PATH_PARAMS if k in props), None)
    state_key = next((k for k in _STATE_PARAMS if k in props), None)
    if path_key and intent.paths:
        return {path_key: intent.paths[0]}
    if state_key and intent.state_ids:
        return {state_key: intent.state_ids[0]}
    if path_key:
        return {path_key: "<image path>"}
    if state_key:
        return {state_key: "<state id of the screenshot>"}
    required = tool.parameters.get("required")
    if isinstance(required, list) and required and isinstance(required[0], str):
        return {required[0]: "<value>"}
    return {}


def _vision_ran(messages: Sequence[ChatMessage]) -> bool:
    """A vision tool already answered since the latest user message."""
    for message in reversed(messages):
        if message.role == "user":
            return False
        if message.role == "tool" and message.tool_name and is_vision_tool(message.tool_name):
            return True
    return False


@dataclass(frozen=True, slots=True)
class VisionRefusal:
    tool: str  # the vision tool the repair names
    message: str  # the short problem statement
    suggestion: str  # the call to make instead, for the repair prompt only (never telemetry)


def check_vision_final(
    text: str, messages: Sequence[ChatMessage], prepared: PreparedTurn
) -> VisionRefusal | None:
    """A refusal to look at images while a vision tool is selected (and none has run yet)."""
    chosen = prepared.selection.vision_selected
    if not chosen or not is_vision_refusal(text) or _vision_ran(messages):
        return None
    tool = prepared.tools[chosen[0]]
    hint = call_hint(tool, prepared.selection.vision)
    call = json.dumps(
        {"kind": "tool_call", "name": tool.name, "arguments": hint}, ensure_ascii=False
    )
    return VisionRefusal(
        tool.name,
        f"the reply says images cannot be seen, but {tool.name} is available this turn",
        f"Call {tool.name} now instead of answering, e.g. {call}",
    )
