"""``vision_read``: a screenshot as text evidence, for a model that cannot see images.

``{state_id}`` reads the frame the model's state was taken with — kept by value from that
state's result in this user task (agent/loop.py), never fetched from a side cache — so the
boxes are in the pixels of the image the coordinates of ``click`` refer to. ``{path}`` reads
an image file. With a multimodal endpoint configured (``DESKPILOT_VISION_*``) the frame goes
there and its answer comes back as ``VISION_READ_OK`` evidence; otherwise OCR (Debian's
tesseract) gives the text lines with their boxes. A failure of the configured model is an
error, never a silent switch to OCR (deskpilot/vision/).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deskpilot.agent.files import check_not_secret, resolve
from deskpilot.agent.tools import READ, ToolResult, TurnScope
from deskpilot.protocol.errors import DeskpilotError, ErrorCode
from deskpilot.provider import ToolSpec as ModelTool
from deskpilot.vision import VisionConfig, load_image_file, ocr_ready, read_image

SPEC = ModelTool(
    "vision_read",
    "Read a screenshot as text: the frame of a state you observed (state_id) or an image "
    "file (path). Returns text lines with boxes [x,y,w,h] in that image's pixels (usable for "
    "click x/y), or a vision model's answer to question.",
    {
        "type": "object",
        "properties": {
            "state_id": {"type": "string", "minLength": 1},
            "path": {"type": "string", "minLength": 1},
            "question": {"type": "string", "minLength": 1, "maxLength": 1000},
        },
        "additionalProperties": False,
    },
)


class VisionReadTool:
    kind = READ
    spec = SPEC

    def __init__(self, config: VisionConfig | None) -> None:
        self.config = config

    async def run(self, arguments: Mapping[str, Any], scope: TurnScope) -> ToolResult:
        state_id = arguments.get("state_id")
        path = arguments.get("path")
        if (state_id is None) == (path is None):
            raise DeskpilotError(
                ErrorCode.INVALID_REQUEST,
                "vision_read takes exactly one of state_id (a state observed in this task) "
                "or path (an image file)",
            )
        if state_id is not None:
            frame = scope.frames.get(str(state_id))
            if frame is None:
                raise DeskpilotError(
                    ErrorCode.STATE_ID_INVALID,
                    f"no screenshot of state {state_id} in this task: observe the window "
                    "(get_app_state) and pass the state_id of that result",
                )
            image = frame.jpeg
        else:
            where = resolve(str(path), scope.cwd)
            check_not_secret(where)
            image = load_image_file(where)
        question = arguments.get("question")
        text = await read_image(
            image, question=str(question) if question else None, config=self.config
        )
        return ToolResult(text, kind=READ)


def vision_tool(env: Mapping[str, str] | None = None) -> VisionReadTool | None:
    """The tool when it can work: a configured vision model, or OCR installed."""
    config = VisionConfig.from_env(env)
    if config is None and not ocr_ready():
        return None
    return VisionReadTool(config)
