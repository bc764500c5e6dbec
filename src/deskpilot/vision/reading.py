"""The one call the ``vision_read`` tool makes: the endpoint when configured, else OCR.

The choice is made once, by configuration, before any work: a configured endpoint that fails
is reported as its failure, never answered by OCR instead (docs/vision.md, "No fallback").
"""

from __future__ import annotations

from deskpilot.vision.config import VisionConfig
from deskpilot.vision.endpoint import ask_vision_model
from deskpilot.vision.ocr import OcrEngine, ocr_image

#: What the model is asked when the agent gave no question.
DEFAULT_QUESTION = (
    "Describe this screenshot for someone who cannot see it: the windows, their controls and "
    "all visible text, with the approximate pixel position of each control."
)


async def read_image(
    image: bytes,
    *,
    question: str | None = None,
    config: VisionConfig | None = None,
    engine: OcrEngine | None = None,
) -> str:
    """Evidence text about ``image``: the vision model's answer, or the OCR reading."""
    if config is not None:
        asked = question if question and question.strip() else DEFAULT_QUESTION
        answer = await ask_vision_model(config, image, asked)
        return answer.evidence()
    result = await ocr_image(image, engine=engine)
    return result.evidence(question=question)
