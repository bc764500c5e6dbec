"""What the text-only model sees of an image: the results and their evidence text.

Both sources answer in the same shape: a first line starting ``VISION_READ_OK`` with the
source, the image size and the elapsed time, then the content. Screen text and a model's
answer are untrusted data: they are carried as they are (one OCR line per evidence line,
line breaks inside collapsed), never interpreted; neutralising protocol markers in them is
the caller's job (the ``vision_read`` tool), so nothing here rewrites them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

OK_MARKER = "VISION_READ_OK"


@dataclass(frozen=True)
class OcrWord:
    """One word of a line, with tesseract's word box (pixels of the image given) and its
    confidence (0–100)."""

    text: str
    x: int
    y: int
    width: int
    height: int
    confidence: float = field(default=100.0, compare=False)

    @property
    def center(self) -> tuple[int, int]:
        return self.x + self.width // 2, self.y + self.height // 2


@dataclass(frozen=True)
class OcrLine:
    """One recognised line; the box is in pixels of the image given (click its centre)."""

    text: str
    confidence: float
    x: int
    y: int
    width: int
    height: int
    #: the words kept, left to right (a visual tree makes each an element, vision/outline.py);
    #: not compared: two readings of the same line are the same line whatever the word boxes
    words: tuple[OcrWord, ...] = field(default=(), compare=False, repr=False)

    @property
    def center(self) -> tuple[int, int]:
        return self.x + self.width // 2, self.y + self.height // 2


@dataclass(frozen=True)
class OcrResult:
    """The OCR engine's reading: lines in reading order, the image size, the time it took."""

    lines: tuple[OcrLine, ...]
    width: int
    height: int
    elapsed_ms: float
    min_confidence: float
    #: lines of text found but too unclear to read (under ``min_confidence``): their boxes
    #: ``(x, y, width, height)``, top to bottom. Said, never dropped in silence: a reader
    #: told nothing would take the screen for one without them
    unread: tuple[tuple[int, int, int, int], ...] = ()

    @property
    def text(self) -> str:
        return "\n".join(line.text for line in self.lines)

    def evidence(self, *, question: str | None = None) -> str:
        head = (
            f"{OK_MARKER} source=ocr image={self.width}x{self.height} "
            f"lines={len(self.lines)} elapsedMs={round(self.elapsed_ms)}"
        )
        out = [
            head,
            "# one line each: [x,y,width,height] confidence text; pixels of the image given; "
            f"lines under confidence {self.min_confidence:g} dropped",
        ]
        if question:
            out.append("# OCR reads all the text; the question was not used")
        if self.unread:
            boxes = " ".join(f"[{x},{y},{w},{h}]" for x, y, w, h in self.unread)
            out.append(f"# {len(self.unread)} lines of text too unclear to read, at {boxes}")
        if not self.lines:
            out.append("(no text recognised)")
        for line in self.lines:
            out.append(
                f"[{line.x},{line.y},{line.width},{line.height}] "
                f"{round(line.confidence)} {_one_line(line.text)}"
            )
        return "\n".join(out)


@dataclass(frozen=True)
class VisionAnswer:
    """A multimodal model's answer about an image, and how the sent frame maps back."""

    model: str
    answer: str
    width: int
    height: int
    sent_width: int
    sent_height: int
    elapsed_ms: float

    @property
    def scale(self) -> float:
        """Sent pixels per original pixel: original coordinate = sent coordinate / scale."""
        return self.sent_width / self.width

    def evidence(self) -> str:
        head = (
            f"{OK_MARKER} source=model model={_one_line(self.model)} "
            f"image={self.width}x{self.height} sent={self.sent_width}x{self.sent_height} "
            f"scale={self.scale:.4g} elapsedMs={round(self.elapsed_ms)}"
        )
        note = (
            "# the model saw the image at the sent size: divide coordinates it gives by the "
            "scale for pixels of the image given"
        )
        return f"{head}\n{note}\n{self.answer.strip()}"


def _one_line(text: str) -> str:
    return " ".join(text.split())
