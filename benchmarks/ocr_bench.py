"""OCR of a 1280x800 frame: deskpilot.vision's engine beside the tesseract CLI.

Run: ``.venv/bin/python benchmarks/ocr_bench.py [--runs N]``

Target (docs/vision.md): ≤ 700 ms median for OCR of a 1280x800 frame on the 2-core CI
machine. Two synthetic frames, drawn with Pillow and DejaVu Sans:

* ``desktop``: a realistic frame: wallpaper, a window with a title bar, four buttons with
  labels, a text area of a dozen lines, a dark panel with light labels, mostly flat colour;
* ``dense``: 30 lines of 12 words of 16 px text, ~2,200 characters (a page of prose or a
  log: OCR's worst case; OCR time grows with the amount of text, not with the pixels).

Measured per frame, N runs of each path interleaved (after one warm-up each), median and
p90 of the wall time:

* single: ``OcrEngine.read`` with banding off (``split_min_pixels = None``): decode the PNG,
  polarity pass, recognise the whole frame here, build the lines;
* banded: ``OcrEngine.read`` as shipped: the frame cut at a background row near its middle
  (``deskpilot.vision.bands``), the top band read here while the worker process
  (``deskpilot.vision.pool``, started before timing; its start is printed) reads the bottom;
  "same" checks its lines against single's (same texts, boxes within 3 px);
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

from deskpilot.vision import pool
from deskpilot.vision.bands import split_row
from deskpilot.vision.ocr import OcrEngine, dark_text_on_light

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


def _time(
    paths: dict[str, Callable[[], object]], runs: int
) -> dict[str, tuple[float, float, object]]:
    """Median and p90 (ms) and the last output of each path, the paths interleaved."""
    outs = {name: fn() for name, fn in paths.items()}  # warm-up
    samples: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(runs):
        for name, fn in paths.items():
            t = time.perf_counter()
            outs[name] = fn()
            samples[name].append((time.perf_counter() - t) * 1000.0)
    stats = {}
    for name, values in samples.items():
        values.sort()
        p90 = values[min(len(values) - 1, round(0.9 * (len(values) - 1)))]
        stats[name] = (statistics.median(values), p90, outs[name])
    return stats


def _same(a: object, b: object) -> bool:
    la, lb = a.lines, b.lines  # type: ignore[attr-defined]
    return [x.text for x in la] == [y.text for y in lb] and all(
        max(abs(x.x - y.x), abs(x.y - y.y), abs(x.width - y.width), abs(x.height - y.height)) <= 3
        for x, y in zip(la, lb, strict=True)
    )


def _found(expected: list[str], text: str) -> str:
    found = [w for w in expected if w in text]
    return f"{len(found)}/{len(expected)} missed {sorted(set(expected) - set(found))}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    single = OcrEngine()
    single.split_min_pixels = None
    banded = OcrEngine()
    try:
        import pytesseract
    except ImportError:
        pytesseract = None
    limit = os.environ["OMP_THREAD_LIMIT"]
    t = time.perf_counter()
    ready = pool.start(banded)
    started = (time.perf_counter() - t) * 1000.0
    print(f"OMP_THREAD_LIMIT={limit} runs={args.runs} cpus={os.cpu_count()} load={os.getloadavg()}")
    print(f"band partner load (a second tesseract API): {started:.0f} ms, ready={ready}")
    print(f"{'frame':8} {'path':10} {'median ms':>10} {'p90 ms':>8} {'lines':>6}  words found")
    for name, build in (("desktop", desktop_frame), ("dense", dense_frame)):
        img, expected = build()
        data = _png(img)
        gray = img.convert("L")
        paths: dict[str, Callable[[], object]] = {
            "single": lambda data=data: single.read(data),
            "banded": lambda data=data: banded.read(data),
        }
        if pytesseract is not None:

            def cli(gray: Image.Image = gray) -> object:
                return pytesseract.image_to_data(gray, lang="eng", config="--oem 1 --psm 11")

            paths["cli"] = cli
        stats = _time(paths, args.runs)
        row = split_row(dark_text_on_light(gray))
        for path in ("single", "banded"):
            med, p90, result = stats[path]
            lines = len(result.lines)  # type: ignore[attr-defined]
            note = _found(expected, result.text)  # type: ignore[attr-defined]
            if path == "banded":
                note += f"; cut at row {row}; same as single: {_same(result, stats['single'][2])}"
            print(f"{name:8} {path:10} {med:10.0f} {p90:8.0f} {lines:6}  {note}")
        smed, sp90, _ = stats["single"]
        bmed, bp90, _ = stats["banded"]
        print(f"{name:8} {'single÷banded':10} {smed / bmed:9.2f}× {sp90 / bp90:7.2f}×")
        if pytesseract is None:
            print(f"{name:8} {'cli':10} skipped: pip install pytesseract")
            continue
        cmed, cp90, tsv = stats["cli"]
        rows = [r.split("\t") for r in str(tsv).splitlines()[1:]]
        words = " ".join(r[-1] for r in rows if len(r) == 12 and r[-1].strip())
        print(f"{name:8} {'cli':10} {cmed:10.0f} {cp90:8.0f} {'':6}  {_found(expected, words)}")
        print(f"{name:8} {'cli÷banded':10} {cmed / bmed:9.2f}× {cp90 / bp90:7.2f}×")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
