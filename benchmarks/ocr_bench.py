"""OCR of a 1280x800 frame: deskpilot.vision's engine beside the tesseract CLI.

Run: ``.venv/bin/python benchmarks/ocr_bench.py [--runs N]``

Target (docs/vision.md): ≤ 700 ms median for OCR of a 1280x800 frame on the 2-core CI
machine. Two synthetic frames, drawn with Pillow and DejaVu Sans:

* ``desktop``: a realistic frame: wallpaper, a window with a title bar, four buttons with
  labels, a text area of a dozen lines, a dark panel with light labels, mostly flat colour;
* ``dense``: 30 lines of 12 words of 16 px text, ~2,200 characters (a page of prose or a
  log: OCR's worst case; OCR time grows with the amount of text, not with the pixels).

Measured per frame, N runs each (after one warm-up), median and p90 of the wall time:

* engine: ``OcrEngine.read`` (decode the PNG, polarity pass, recognise, build the lines);
* baseline: ``pytesseract.image_to_data`` (the ``tesseract`` CLI per call, same LSTM-only
  and page segmentation settings) with ``OMP_THREAD_LIMIT=1`` (without it the CLI's OpenMP
  threads make it several times slower on 2 cores).

Both use Debian's tesseract and tessdata. The baseline is skipped, with a note, when
pytesseract is not installed (it is not a dependency: ``pip install pytesseract``).
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OMP_THREAD_LIMIT", "1")  # for the CLI child processes too

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from PIL import Image, ImageDraw, ImageFont

from deskpilot.vision.ocr import OcrEngine

FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
WORDS = [
    *("the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "settings", "network"),
    *("display", "keyboard", "mouse", "printer", "account", "invoice", "total", "window"),
]


def _font(size: int, bold: bool = False) -> ImageFont.FreeTypeFont:
    name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
    return ImageFont.truetype(str(FONT_DIR / name), size)


def desktop_frame() -> tuple[Image.Image, list[str]]:
    img = Image.new("RGB", (1280, 800), (58, 110, 165))
    d = ImageDraw.Draw(img)
    f, fb = _font(14), _font(15, bold=True)
    d.rectangle((160, 100, 1120, 700), fill=(246, 245, 244), outline=(160, 160, 160))
    d.rectangle((160, 100, 1120, 136), fill=(222, 221, 218))
    d.text((560, 108), "Document Settings", font=fb, fill="black")
    labels = ["Save", "Cancel", "Apply", "Help"]
    for i, label in enumerate(labels):
        x = 200 + i * 120
        d.rounded_rectangle((x, 150, x + 100, 182), 6, fill="white", outline=(150, 150, 150))
        d.text((x + 22, 158), label, font=f, fill="black")
    d.rectangle((200, 200, 1080, 620), fill="white", outline=(180, 180, 180))
    for i in range(12):
        line = f"Line {i + 1}: the invoice total for account {1000 + i} is due on Monday"
        d.text((212, 210 + i * 32), line, font=f, fill=(30, 30, 30))
    d.rectangle((0, 770, 1280, 800), fill=(40, 40, 40))
    d.text((10, 776), "Activities   Files   Terminal   10:42", font=f, fill="white")
    expected = ["Document Settings", *labels, "account 1011", "Terminal", "10:42"]
    return img, expected


def dense_frame() -> tuple[Image.Image, list[str]]:
    img = Image.new("RGB", (1280, 800), "white")
    d = ImageDraw.Draw(img)
    f = _font(16)
    for i in range(30):
        words = [WORDS[(i * 3 + j) % len(WORDS)] for j in range(12)]
        d.text((20, 10 + i * 26), " ".join(words), font=f, fill="black")
    return img, ["quick brown fox", "keyboard mouse printer", "invoice total window"]


def _png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _time(fn: Callable[[], object], runs: int) -> tuple[float, float, object]:
    out = fn()  # warm-up (the engine loads its model on its first call)
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        samples.append((time.perf_counter() - t) * 1000.0)
    samples.sort()
    p90 = samples[min(len(samples) - 1, round(0.9 * (len(samples) - 1)))]
    return statistics.median(samples), p90, out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    engine = OcrEngine()
    try:
        import pytesseract
    except ImportError:
        pytesseract = None
    limit = os.environ["OMP_THREAD_LIMIT"]
    print(f"OMP_THREAD_LIMIT={limit} runs={args.runs} cpus={os.cpu_count()}")
    print(f"{'frame':8} {'path':10} {'median ms':>10} {'p90 ms':>8} {'lines':>6}  words found")
    for name, build in (("desktop", desktop_frame), ("dense", dense_frame)):
        img, expected = build()
        data = _png(img)
        med, p90, result = _time(lambda data=data: engine.read(data), args.runs)
        text = result.text  # type: ignore[attr-defined]
        found = [w for w in expected if w in text]
        lines = len(result.lines)  # type: ignore[attr-defined]
        print(
            f"{name:8} {'engine':10} {med:10.0f} {p90:8.0f} {lines:6}  "
            f"{len(found)}/{len(expected)} missed {sorted(set(expected) - set(found))}"
        )
        if pytesseract is None:
            print(f"{name:8} {'cli':10} skipped: pip install pytesseract")
            continue
        gray = img.convert("L")

        def cli(gray: Image.Image = gray) -> object:
            return pytesseract.image_to_data(gray, lang="eng", config="--oem 1 --psm 11")

        cmed, cp90, tsv = _time(cli, args.runs)
        rows = [row.split("\t") for row in str(tsv).splitlines()[1:]]
        words = " ".join(r[-1] for r in rows if len(r) == 12 and r[-1].strip())
        cfound = [w for w in expected if w in words]
        print(
            f"{name:8} {'cli':10} {cmed:10.0f} {cp90:8.0f} {'':6}  "
            f"{len(cfound)}/{len(expected)} missed {sorted(set(expected) - set(cfound))}"
        )
        print(f"{name:8} {'cli÷engine':10} {cmed / med:10.2f}× {cp90 / p90:7.2f}×")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
