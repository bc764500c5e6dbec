"""Reading a screenshot for a text-only model: the engine behind the ``vision_read`` tool.

With a multimodal endpoint configured (``VisionConfig.from_env``), the frame and the question
go to it; otherwise Debian's tesseract reads the text with its boxes. Either way the answer is
text evidence starting ``VISION_READ_OK``, and a failure is a typed ``DeskpilotError``: no
silent fallback from one to the other. See docs/vision.md.
"""

from __future__ import annotations

from deskpilot.vision.config import VisionConfig
from deskpilot.vision.endpoint import ask_vision_model
from deskpilot.vision.evidence import OK_MARKER, OcrLine, OcrResult, VisionAnswer
from deskpilot.vision.frames import MAX_IMAGE_BYTES, MAX_IMAGE_PIXELS, load_image_file
from deskpilot.vision.ocr import MIN_CONFIDENCE, OcrEngine, ocr_image, ocr_ready
from deskpilot.vision.reading import read_image

__all__ = [
    "MAX_IMAGE_BYTES",
    "MAX_IMAGE_PIXELS",
    "MIN_CONFIDENCE",
    "OK_MARKER",
    "OcrEngine",
    "OcrLine",
    "OcrResult",
    "VisionAnswer",
    "VisionConfig",
    "ask_vision_model",
    "load_image_file",
    "ocr_image",
    "ocr_ready",
    "read_image",
]
