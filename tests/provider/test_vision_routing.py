"""The vision bridge: image-task detection, selection, fail-closed gate and refusal repair.

Turns run against the real loopback chat-completions server (``provider_server.py``).
"""

from __future__ import annotations

import json
import time

import pytest
from provider_helpers import BASH, READ, WEB_FETCH, fast_policy, make_config
from provider_server import Reply, ScriptedServer

from deskpilot.provider import (
    ChatMessage,
    MemoryTelemetry,
    Provider,
    ToolCall,
    ToolSpec,
    TurnResult,
)
from deskpilot.provider.contract import load_contract
from deskpilot.provider.tools import select_tools
from deskpilot.provider.turn import is_vision_refusal
from deskpilot.provider.vision_intent import detect, image_paths, preferred_vision_tools

VISION_READ = ToolSpec(
    "vision_read",
    "Turn a screenshot or image file into text evidence.",
    {
        "type": "object",
        "properties": {
            "state_id": {"type": "string"},
            "path": {"type": "string"},
            "question": {"type": "string"},
        },
        "additionalProperties": False,
    },
)


def simple(name: str, description: str) -> ToolSpec:
    return ToolSpec(
        name, description, {"type": "object", "properties": {"path": {"type": "string"}}}
    )


IMAGE_ANALYZE = simple("image_analyze", "Analyse an image.")
IMAGE_OCR = simple("image_ocr", "Extract text from an image.")
OCR_IMAGE = simple("ocr_image", "OCR an image.")
IMAGE_TO_TEXT = simple("image_to_text", "Describe an image as text.")
IMAGE_REVIEW = simple("image_review", "Ask a human to review an image.")
GREP = simple("grep", "Search file contents.")
LS = simple("ls", "List a directory.")
FILE_TOOLS = [READ, BASH, GREP, LS, WEB_FETCH]

# ---------------------------------------------------------------- detection matrix

POSITIVE = [
    ("What does /tmp/shot.png show?", "image_path"),
    ("look at C:\\Users\\me\\Desktop\\capture.JPG", "image_path"),
    ("describe 'my holiday photo.jpeg' please", "image_path"),
    ("is there a cat in ~/pics/cat.webp", "image_path"),
    ("check frames/anim.gif and scan.tiff", "image_path"),
    ("the logo at assets/logo.svg, what colour is it", "image_path"),
    ("what is in clipboard-20240101-1200.png", "clipboard_image"),
    ("take a screenshot with the screenshot tool", "vision_intent_en"),
    ("what does the screen show right now?", "vision_intent_en"),
    ("What's on the screen?", "vision_intent_en"),
    ("please look at the image and tell me the error", "vision_intent_en"),
    ("read the image I sent", "vision_intent_en"),
    ("OCR this receipt", "vision_intent_en"),
    ("analyse the picture", "vision_intent_en"),
    ("extract the text from the screenshot", "vision_intent_en"),
    ("describe the attached image", "vision_intent_en"),
    ("what is written in the pasted image", "vision_intent_en"),
    ("截图看看现在是什么界面", "vision_intent_zh"),
    ("帮我看图", "vision_intent_zh"),
    ("读图，告诉我数字", "vision_intent_zh"),
    ("识别图片中的文字", "vision_intent_zh"),
    ("图片里写了什么？", "vision_intent_zh"),
    ("看一下这张截图", "vision_intent_zh"),
    ("屏幕上显示什么", "vision_intent_zh"),
    ("分析剪贴板里的图片", "vision_intent_zh"),
    ("用OCR识别一下", "vision_intent_en"),
]
NEGATIVE = [
    "summarise README.md",
    "write a png encoder in python",
    "what is the image package version?",
    "bump the image crate to 0.25",
    "inspect the docker image and list its layers",
    "check the image size limit in config.yaml",
    "convert *.png files with a shell loop",
    "save the chart to out/plot.png",
    "generate chart.png with matplotlib",
    "写一个png编码器",
    "图片压缩库的版本号是多少",
    "在地图中添加标记",
    "read package.json",
    "",
]


@pytest.mark.parametrize(("text", "reason"), POSITIVE)
def test_detects_image_tasks(text: str, reason: str) -> None:
    intent = detect([text])
    assert intent.image_task, text
    assert reason in intent.reasons


@pytest.mark.parametrize("text", NEGATIVE)
def test_does_not_detect_non_image_tasks(text: str) -> None:
    intent = detect([text])
    assert not intent.image_task, (text, intent.reasons)


def test_paths_and_state_ids_are_extracted() -> None:
    assert image_paths('see "C:\\My Shots\\a b.png" and /tmp/x.jpg.') == [
        "C:\\My Shots\\a b.png",
        "/tmp/x.jpg",
    ]
    assert image_paths("截图.png里有什么") == ["截图.png"]
    assert image_paths("a.png.bak, *.jpg, .gif, notes/") == []
    intent = detect(["what does the screenshot state_id=st_Ab12-x show"])
    assert intent.state_ids == ("st_Ab12-x",) and not intent.has_path


def test_detection_is_linear_on_long_prompts() -> None:
    started = time.perf_counter()
    for text in ("word/" * 20000, "a" * 100_000, "x.png " * 10000, "the " * 25000):
        detect([text])
    assert time.perf_counter() - started < 2.0


def test_continuation_window_carries_the_image_task() -> None:
    assert detect(["继续"]).image_task is False
    sel = select_tools([READ, VISION_READ], ["what does /tmp/a.png show", "继续"], max_tools=1)
    assert sel.vision.image_task and sel.prompt_source == "recent_user_continuation"
    assert [t.name for t in sel.selected] == ["vision_read"]
    # a new, unrelated request ends the image task
    sel = select_tools(
        [READ, VISION_READ], ["what does /tmp/a.png show", "read a.txt"], max_tools=1
    )
    assert not sel.vision.image_task and [t.name for t in sel.selected] == ["read"]


# ---------------------------------------------------------------- selection


def pick(tools: list[ToolSpec], text: str, max_tools: int = 1) -> list[str]:
    return [t.name for t in select_tools(tools, [text], max_tools=max_tools).selected]


def test_max_tools_one_picks_vision_read_not_read_for_an_image_path() -> None:
    sel = select_tools([*FILE_TOOLS, VISION_READ], ["read /tmp/shot.png for me"], max_tools=1)
    assert [t.name for t in sel.selected] == ["vision_read"]
    reasons = {s.name: s.reasons for s in sel.scores}
    assert "vision_preferred" in reasons["vision_read"]
    for name in ("read", "bash", "grep", "ls"):
        assert "image_path_file_demoted" in reasons[name], name
        assert "prompt_path_file" not in reasons[name]
    summary = sel.summary()
    assert summary["selected"][0]["reasonCodes"][-1] == "vision_preferred"
    assert sel.telemetry()["tool_selection_vision_task"] is True
    assert "/tmp/shot.png" not in json.dumps([summary, sel.telemetry()])


def test_image_intent_without_path_does_not_demote_file_tools() -> None:
    sel = select_tools([*FILE_TOOLS, VISION_READ], ["what does the screen show"], max_tools=16)
    read = next(s for s in sel.scores if s.name == "read")
    assert "image_path_file_demoted" not in read.reasons
    assert pick([*FILE_TOOLS, VISION_READ], "what does the screen show") == ["vision_read"]


def test_non_image_path_still_prefers_read() -> None:
    assert pick([*FILE_TOOLS, VISION_READ], "what does src/app/main.py do?") == ["read"]


@pytest.mark.parametrize(
    ("tools", "expected"),
    [
        (
            [IMAGE_REVIEW, IMAGE_TO_TEXT, OCR_IMAGE, IMAGE_OCR, IMAGE_ANALYZE, VISION_READ],
            "vision_read",
        ),
        ([IMAGE_REVIEW, IMAGE_TO_TEXT, OCR_IMAGE, IMAGE_OCR, IMAGE_ANALYZE], "image_analyze"),
        ([IMAGE_REVIEW, IMAGE_TO_TEXT, OCR_IMAGE, IMAGE_OCR], "image_ocr"),
        ([IMAGE_REVIEW, IMAGE_TO_TEXT, OCR_IMAGE], "ocr_image"),
        ([IMAGE_REVIEW, IMAGE_TO_TEXT], "image_to_text"),
        ([IMAGE_REVIEW], "image_review"),
    ],
)
def test_vision_preference_order(tools: list[ToolSpec], expected: str) -> None:
    sel = select_tools([READ, *tools], ["OCR /tmp/a.png"], max_tools=1)
    assert [t.name for t in sel.selected] == [expected]
    reason = "vision_review_fallback" if expected == "image_review" else "vision_preferred"
    assert reason in next(s for s in sel.scores if s.name == expected).reasons


def test_image_review_is_not_preferred_when_a_semantic_tool_exists() -> None:
    assert preferred_vision_tools(["image_review", "image_ocr"]) == ("image_ocr",)
    assert pick([IMAGE_REVIEW, IMAGE_OCR, READ], "读图", max_tools=2) == ["image_ocr", "read"]
    sel = select_tools([IMAGE_REVIEW, IMAGE_OCR, READ], ["读图"], max_tools=1)
    assert [t.name for t in sel.selected] == ["image_ocr"]


def test_forbidden_vision_read_is_not_added_back() -> None:
    tools = [*FILE_TOOLS, VISION_READ, IMAGE_OCR]
    sel = select_tools(tools, ["don't use vision_read; what does /tmp/a.png show"], max_tools=1)
    assert [t.name for t in sel.selected] == ["image_ocr"]
    assert "prompt_tool_forbidden" in next(s for s in sel.scores if s.name == "vision_read").reasons
    sel = select_tools(
        [*FILE_TOOLS, VISION_READ], ["不要使用 vision_read，看一下这张截图"], max_tools=16
    )
    assert "vision_read" not in sel.names and sel.vision_selected == ()


def test_explicit_only_wins_over_vision_preference() -> None:
    sel = select_tools(
        [*FILE_TOOLS, VISION_READ], ["only use read to open /tmp/a.png"], max_tools=4
    )
    assert [t.name for t in sel.selected] == ["read"] and sel.vision_selected == ()


def test_caller_selection_still_detects_the_image_task() -> None:
    sel = select_tools([READ, VISION_READ], ["what does a.png show"], max_tools=1, only=["read"])
    assert sel.vision.image_task and sel.vision_selected == ()


# ---------------------------------------------------------------- turns over HTTP


async def decide(
    server: ScriptedServer,
    messages: list[ChatMessage],
    tools: list[ToolSpec],
    **policy: int,
) -> tuple[TurnResult, MemoryTelemetry]:
    telemetry = MemoryTelemetry()
    config = make_config(server, policy=fast_policy(**policy))
    async with Provider(config, telemetry=telemetry) as provider:
        result = await provider.decide(messages, tools)
    return result, telemetry


def test_contract_codes() -> None:
    contract = load_contract()
    unavailable = contract.spec("vision_unavailable")
    assert (unavailable.category, unavailable.retryable, unavailable.repairable) == (
        "turn",
        False,
        False,
    )
    refusal = contract.spec("vision_refusal")
    assert (refusal.category, refusal.retryable, refusal.repairable) == ("protocol", False, True)


@pytest.mark.parametrize(
    ("text", "tools"),
    [
        ("What does /tmp/shot.png show?", FILE_TOOLS),
        ("截图里写了什么", FILE_TOOLS),
        ("don't use vision_read; what does the screen show", [*FILE_TOOLS, VISION_READ]),
        ("only use read: describe the image at /tmp/a.png", [*FILE_TOOLS, VISION_READ]),
    ],
)
async def test_fail_closed_sends_nothing(server: ScriptedServer, text: str, tools: list) -> None:
    server.script(Reply.chat('{"kind":"final","text":"should never be asked"}'))
    result, telemetry = await decide(server, [ChatMessage.user(text)], tools)
    assert server.requests == []  # the loopback model server received zero requests
    assert result.kind == "error" and result.requests == 0
    error = result.error
    assert error is not None and error.code == "vision_unavailable"
    assert error.to_dict()["category"] == "turn" and error.retryable is False
    assert "vision_read" in error.message and "tesseract-ocr" in error.message
    for var in ("DESKPILOT_VISION_BASE_URL", "DESKPILOT_VISION_MODEL", "DESKPILOT_VISION_API_KEY"):
        assert var in error.message
    if "vision_read" in {t.name for t in tools}:
        assert error.detail["visionToolsExcluded"] == ["vision_read"]
    end = next(e for e in telemetry.events if e["event"] == "turn.end")["data"]
    assert end["errorCode"] == "vision_unavailable" and end["requests"] == 0
    assert "/tmp" not in json.dumps(telemetry.events)


async def test_non_image_task_without_vision_tool_is_sent(server: ScriptedServer) -> None:
    server.script(Reply.chat('{"kind":"final","text":"The package is called deskpilot."}'))
    result, _ = await decide(server, [ChatMessage.user("what is in README.md?")], FILE_TOOLS)
    assert result.kind == "final" and len(server.requests) == 1


REFUSALS = [
    "I cannot see images.",
    "As a text-only model I can't view pictures.",
    "Sorry, I'm unable to view the screenshot you mentioned.",
    "I don't have the ability to look at images, but the file name suggests a chart.",
    "我看不了图片。",
    "抱歉，我无法查看图片。",
    "当前是纯文本模式，没法看截图。",
]


@pytest.mark.parametrize("text", REFUSALS)
def test_refusals_are_recognised(text: str) -> None:
    assert is_vision_refusal(text)


@pytest.mark.parametrize(
    "text",
    [
        "The screenshot shows a login dialog with an OK button.",
        "图片里写着：欢迎使用。",
        "I can see the image contains three rows.",
        "The file is 2 MB.",
        "",
    ],
)
def test_real_answers_are_not_refusals(text: str) -> None:
    assert not is_vision_refusal(text)


def final(text: str) -> Reply:
    return Reply.chat(json.dumps({"kind": "final", "text": text}, ensure_ascii=False))


def vision_call(**arguments: str) -> Reply:
    return Reply.chat(
        json.dumps({"kind": "tool_call", "name": "vision_read", "arguments": arguments})
    )


@pytest.mark.parametrize("refusal", ["As a text-only model I can't view pictures.", "我看不了图片"])
async def test_refusal_is_repaired_into_a_vision_read_call(
    server: ScriptedServer, refusal: str
) -> None:
    server.script(final(refusal), vision_call(path="/tmp/shot.png"))
    result, telemetry = await decide(
        server,
        [ChatMessage.user("What does /tmp/shot.png show?")],
        [*FILE_TOOLS, VISION_READ],
        max_tools=1,
    )
    assert len(server.requests) == 2
    system = server.requests[0].json["messages"][0]["content"]
    assert "vision_read" in system and '"read"' not in system
    call = result.tool_call
    assert result.kind == "tool_call" and call is not None and call.name == "vision_read"
    assert dict(call.arguments) == {"path": "/tmp/shot.png"}
    repair = server.requests[1].json["messages"][-1]["content"]
    assert "(vision_refusal)" in repair and "Call vision_read now" in repair
    assert '"arguments": {"path": "/tmp/shot.png"}' in repair
    assert "Parameters of vision_read" in repair
    assert result.recoveries == {"final": 1}
    event = next(e for e in telemetry.events if e["event"] == "recovery.final")["data"]
    assert event["code"] == "vision_refusal" and event["allowed"] is True
    assert "/tmp/shot.png" not in json.dumps(telemetry.events)


async def test_refusal_repair_uses_the_state_id_form(server: ScriptedServer) -> None:
    server.script(final("I cannot see images."), vision_call(state_id="st_9xYz"))
    result, _ = await decide(
        server,
        [ChatMessage.user("what does the screenshot state_id=st_9xYz show?")],
        [READ, VISION_READ],
    )
    repair = server.requests[1].json["messages"][-1]["content"]
    assert '"arguments": {"state_id": "st_9xYz"}' in repair
    assert result.tool_call is not None
    assert result.tool_call.arguments == {"state_id": "st_9xYz"}


async def test_exhausted_budget_is_an_error_not_the_refusal(server: ScriptedServer) -> None:
    server.script(final("I cannot see images."), final("抱歉，我无法查看图片。"))
    result, _ = await decide(
        server, [ChatMessage.user("看一下这张截图 /tmp/a.png")], [READ, VISION_READ]
    )
    assert len(server.requests) == 2
    assert result.kind == "error" and result.text is None
    error = result.error
    assert (
        error is not None
        and error.code == "recovery_exhausted"
        and error.detail["cause"] == "vision_refusal"
    )


async def test_no_final_budget_means_no_second_request(server: ScriptedServer) -> None:
    server.script(final("I cannot see images."))
    result, _ = await decide(
        server,
        [ChatMessage.user("what does the screen show")],
        [READ, VISION_READ],
        max_final_recoveries=0,
    )
    assert len(server.requests) == 1
    assert result.error is not None and result.error.code == "recovery_exhausted"


async def test_refusal_after_vision_ran_is_accepted(server: ScriptedServer) -> None:
    """Once the vision tool answered, "I cannot read that image" is a real result."""
    call = ToolCall("vision_read", {"path": "/tmp/a.png"})
    messages = [
        ChatMessage.user("what does /tmp/a.png show"),
        ChatMessage.assistant(tool_call=call),
        ChatMessage.tool_result(call, "vision endpoint unreachable", is_error=True),
    ]
    server.script(final("I cannot see the image: the vision tool failed (endpoint unreachable)."))
    result, _ = await decide(server, messages, [READ, VISION_READ])
    assert result.kind == "final" and len(server.requests) == 1


async def test_refusal_without_a_vision_tool_is_not_a_vision_repair(
    server: ScriptedServer,
) -> None:
    server.script(final("I cannot see images, but README.md says the project is deskpilot."))
    result, _ = await decide(server, [ChatMessage.user("summarise README.md")], FILE_TOOLS)
    assert result.kind == "final" and result.recoveries == {}
